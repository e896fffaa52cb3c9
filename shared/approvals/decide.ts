// A person's decision on a waiting tool call, from a chat click or `ops approvals`: checked against
// the record's approvers, taken with one conditional write (the first decision wins), then sent to
// the waiting run with its task token. What the person is told back comes from the outcome.
import { SendTaskSuccessCommand, type SFNClient } from '@aws-sdk/client-sfn';
import { isTaskGone } from '../aws/errors.ts';
import type { JsonLogger } from '../observability/log.ts';
import type { MetricsSink } from '../observability/metrics.ts';
import { approvalStatus } from './card.ts';
import { noteDecision } from './note.ts';
import { decideApproval, getApproval, type ApprovalDeps, type ApprovalRecord } from './record.ts';

export interface DecideDeps {
  approvals: ApprovalDeps;
  sfn: SFNClient;
  logger: JsonLogger;
  metrics?: MetricsSink;
  now: () => number;
}

export interface PersonDecision {
  id: string;
  decision: 'approved' | 'denied';
  /** `adapter:id`, or `ops:<name>` for an operator at the ops CLI. */
  by: string;
  byName: string;
  reason?: string;
  /** An operator deciding from the ops CLI: may decide any approval. */
  operator?: boolean;
  /** A Deny without a reason from the chat: how long the denier may still give one (`reason …`), the run waiting for it. */
  reasonWindowMs?: number;
}

/** How long a denier has to say why, after clicking Deny in the chat. */
export const REASON_WINDOW_MS = 60_000;

export type DecideOutcome =
  | { kind: 'unknown' }
  | { kind: 'not-approver'; record: ApprovalRecord }
  | { kind: 'already'; record: ApprovalRecord }
  | { kind: 'decided'; record: ApprovalRecord; runEnded: boolean };

/** Longest reason kept (it reaches the model as part of the call's result). */
export const MAX_REASON_CHARS = 500;

export async function decideAsPerson(deps: DecideDeps, request: PersonDecision): Promise<DecideOutcome> {
  const found = await getApproval(deps.approvals, request.id);
  if (!found) return { kind: 'unknown' };
  if (!request.operator && !found.approvers.includes(request.by)) {
    deps.logger.warn('approval click refused: not an approver', { approvalId: found.id, runId: found.runId, by: request.by });
    return { kind: 'not-approver', record: found };
  }
  const reason = request.reason?.trim().slice(0, MAX_REASON_CHARS);
  const at = deps.now();
  const { decided, record } = await decideApproval(deps.approvals, request.id, {
    state: request.decision,
    by: request.by,
    byName: request.byName,
    ...(reason ? { reason } : {}),
    ...(request.decision === 'denied' && request.reasonWindowMs ? { reasonUntil: at + request.reasonWindowMs } : {}),
    at,
  });
  if (!record) return { kind: 'unknown' };
  if (!decided) return { kind: 'already', record };
  noteDecision(deps, record);
  // No token yet: the run has not begun to wait, and finds the decision when it would.
  if (!record.taskToken) return { kind: 'decided', record, runEnded: false };
  try {
    await deps.sfn.send(new SendTaskSuccessCommand({ taskToken: record.taskToken, output: JSON.stringify({ decision: record.state }) }));
    return { kind: 'decided', record, runEnded: false };
  } catch (error) {
    if (!isTaskGone(error)) throw error;
    deps.logger.info('approval decided after its run stopped waiting', { approvalId: record.id, runId: record.runId });
    return { kind: 'decided', record, runEnded: true };
  }
}

/** What the person who clicked is told (only them): undefined when the message itself shows it. */
export function answerFor(outcome: DecideOutcome): string | undefined {
  switch (outcome.kind) {
    case 'unknown':
      return 'That approval request is no longer open.';
    case 'not-approver':
      return `Sorry, you can't decide this one. ${approvalStatus(outcome.record)}`;
    case 'already':
      return `Already decided: ${approvalStatus(outcome.record)}`;
    case 'decided':
      return outcome.runEnded ? 'Noted, but the run that asked has already ended, so nothing runs.' : undefined;
  }
}
