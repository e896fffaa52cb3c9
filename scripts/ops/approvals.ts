// `approvals`: the tool calls waiting for a person across the deployment, and an operator's
// decision on one (`approvals approve ID`, `approvals deny ID --reason TEXT`), taken on the approval
// record as a click would be: the first decision wins, and the waiting run goes on at once.
import { forTerminal } from '../../shared/support/display.ts';
import { decideAsPerson } from '../../shared/approvals/decide.ts';
import { waitingApprovals, type ApprovalRecord } from '../../shared/approvals/record.ts';
import { approvalStatus } from '../../shared/approvals/card.ts';
import type { OpsStack } from './stack.ts';
import { OPERATOR } from './kill-switch.ts';

/** How the approval records name a decision taken at the ops CLI. */
export const OPS_DECIDER = 'ops:operator';

const minutesSince = (from: number, now: number) => `${Math.max(0, Math.round((now - from) / 60_000))} min`;

function formatWaiting(records: ApprovalRecord[], now: number): string {
  if (records.length === 0) return 'No tool call is waiting for approval.';
  const lines = records
    .sort((a, b) => a.createdAt - b.createdAt)
    .map((r) =>
      [
        forTerminal(r.id),
        `  thread ${forTerminal(r.threadId)}, tool ${forTerminal(r.tool)}, waiting ${minutesSince(r.createdAt, now)}, until ${new Date(r.deadline).toISOString()}${r.deadline <= now ? ' (timed out: the run ends the wait at its next step)' : ''}`,
        `  approvers ${r.approversSetting}: ${r.approvers.map(forTerminal).join(', ') || 'nobody'}; requested for ${forTerminal(r.requester)}`,
        `  input ${forTerminal(r.inputPreview.replace(/\s+/g, ' ').slice(0, 200))}`,
      ].join('\n'),
    );
  return [`${records.length} tool call${records.length === 1 ? '' : 's'} waiting for approval:`, ...lines].join('\n');
}

export async function approvalsCommand(
  stack: OpsStack,
  args: string[],
  options: { reason?: string; now?: () => number } = {},
): Promise<string> {
  const now = options.now ?? Date.now;
  const approvals = stack.control.actor;
  if (args.length === 0) return formatWaiting(await waitingApprovals(approvals), now());
  const [verb, id, ...more] = args;
  if ((verb !== 'approve' && verb !== 'deny') || !id || more.length > 0) {
    throw new Error('approvals takes no arguments (list), or `approve ID` / `deny ID [--reason TEXT]`');
  }
  const outcome = await decideAsPerson(
    { approvals, sfn: stack.control.sfn, logger: stack.control.logger, now },
    {
      id,
      decision: verb === 'approve' ? 'approved' : 'denied',
      by: OPS_DECIDER,
      byName: OPERATOR,
      ...(options.reason ? { reason: options.reason } : {}),
      operator: true,
    },
  );
  switch (outcome.kind) {
    case 'unknown':
      return `No approval ${forTerminal(id)}.`;
    case 'not-approver':
    case 'already':
      return `Already decided: ${forTerminal(approvalStatus(outcome.record))}`;
    case 'decided':
      return outcome.runEnded
        ? `${verb === 'approve' ? 'Approved' : 'Denied'}, but its run has already ended.`
        : `${verb === 'approve' ? 'Approved' : 'Denied'} ${forTerminal(id)}: its run goes on.`;
  }
}
