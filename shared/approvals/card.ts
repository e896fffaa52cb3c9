// The approval message: a view of the approval record, with Approve / Deny buttons while it waits
// (Slack blocks; a Teams Adaptive Card with Action.Submit, both from the Chat SDK's card), and the
// decision once it is taken. The buttons carry the record's id; the record decides, not the message.
import { Actions, Button, Card, CardText } from 'chat';
import { forChat } from '../support/display.ts';
import type { ApprovalRecord } from './record.ts';

export const APPROVE_ACTION = 'approve-tool-call';
export const DENY_ACTION = 'deny-tool-call';

/** Longest input shown in the message: the record keeps its digest, not the whole input. */
export const INPUT_PREVIEW_CHARS = 1500;

const WHO: Record<ApprovalRecord['approversSetting'], string> = {
  admins: 'an admin',
  requester: 'the person who asked',
  listed: 'a listed approver',
};

function deciderName(record: ApprovalRecord): string {
  if (record.decidedBy === 'timeout') return 'nobody in time';
  if (record.decidedBy === 'system') return 'the runtime';
  return record.decidedByName || record.decidedBy || 'someone';
}

/** The model wrote the input: line by line, so it stays readable, with nothing in it that could close the code block or mention anyone. */
const inert = (text: string) => text.split('\n').map(forChat).join('\n');

/** One line saying how the record stands. */
export function approvalStatus(record: ApprovalRecord): string {
  switch (record.state) {
    case 'waiting':
      return `Waiting for ${WHO[record.approversSetting]} until ${new Date(record.deadline).toISOString().replace(/\.\d{3}Z$/, 'Z')}.`;
    case 'approved':
      return `Approved by ${forChat(deciderName(record))}.`;
    case 'denied':
      return `Denied by ${forChat(deciderName(record))}${record.reason ? `: ${forChat(record.reason)}` : ''}.`;
    case 'timed_out':
      return 'No decision in time: not run.';
  }
}

export function approvalCard(record: ApprovalRecord) {
  const text = [`Approval needed: \`${forChat(record.tool)}\` wants to run with`, '```', inert(record.inputPreview), '```'].join('\n');
  return Card({
    children: [
      CardText(`${text}\n${approvalStatus(record)}`),
      ...(record.state === 'waiting'
        ? [
            Actions([
              Button({ id: APPROVE_ACTION, label: 'Approve', style: 'primary', value: record.id }),
              Button({ id: DENY_ACTION, label: 'Deny', style: 'danger', value: record.id }),
            ]),
          ]
        : []),
    ],
  });
}

/** What the model is told of a call that did not run. */
export function refusedResult(record: ApprovalRecord): string {
  if (record.state === 'timed_out') {
    return `Not run: this ${record.tool} call needed approval and nobody decided within the time allowed. Do not retry it unless asked to.`;
  }
  if (record.decidedBy === 'system')
    return `Not run: this ${record.tool} call needed approval, and ${record.reason ?? 'the approval could not be asked for'}.`;
  const reason = record.reason ? ` Their reason: ${record.reason}` : ' They gave no reason.';
  return `Not run: ${deciderName(record)} denied this ${record.tool} call.${reason}`;
}
