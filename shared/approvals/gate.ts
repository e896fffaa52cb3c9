// The agent-step side of an approval. The tool step asks `gateCall` about each pending call: a call
// no rule holds goes on; a held one gets its durable record and the run waits (AwaitApproval, with a
// task token) until it is decided; a decided one runs (approved) or is answered with why it did not.
// `awaitApproval` is the AwaitApproval state's invocation: it stores the token and posts the message.
// If the message cannot be posted the call is denied (fail closed) and the run goes on without it.
import { createHash } from 'node:crypto';
import type { LoopState, RunInput } from '../contracts.ts';
import { APPROVAL_NOT_WAITING } from '../run/step-contract.ts';
import type { ContextEntry } from '../context/store.ts';
import type { JsonLogger } from '../observability/log.ts';
import type { MetricsSink } from '../observability/metrics.ts';
import { parseThreadId } from '../ids.ts';
import { postedMessage, postOnce, type LedgerDeps } from '../run/ledger.ts';
import { RUN_RECORD } from '../table.ts';
import { redactSecrets, type SecretPattern } from '../policy/secret-filter.ts';
import type { ToolCall, ToolOutcome } from '../tools/tool.ts';
import type { Thread } from 'chat';
import { approvalCard, INPUT_PREVIEW_CHARS, refusedResult } from './card.ts';
import {
  approvalIdOf,
  createApproval,
  decideApproval,
  getApproval,
  setMessage,
  setTaskToken,
  type ApprovalDeps,
  type ApprovalRecord,
  type DecisionTaken,
} from './record.ts';
import { approvalRuleFor, type ApprovalRule } from './rules.ts';
import { noteDecision } from './note.ts';

export interface GateDeps {
  approvals: ApprovalDeps;
  logger: JsonLogger;
  now: () => number;
  metrics?: MetricsSink;
}

/** The error AwaitApproval's Catch sends back to the Tool state: the record no longer waits. */
export class ApprovalNotWaiting extends Error {
  override name = APPROVAL_NOT_WAITING;
}

export type Gate =
  | { kind: 'free' }
  | { kind: 'wait'; loop: LoopState }
  | { kind: 'approved'; record: ApprovalRecord }
  | { kind: 'refused'; record: ApprovalRecord; outcome: ToolOutcome };

export const inputDigest = (input: unknown): string =>
  createHash('sha256')
    .update(JSON.stringify(input ?? {}))
    .digest('hex');

function inputPreview(input: unknown, secrets: SecretPattern[]): string {
  const text = redactSecrets(JSON.stringify(input ?? {}, null, 2), secrets);
  return text.length > INPUT_PREVIEW_CHARS
    ? `${text.slice(0, INPUT_PREVIEW_CHARS)}\n… (${text.length - INPUT_PREVIEW_CHARS} more characters)`
    : text;
}

async function decide(deps: GateDeps, id: string, decision: DecisionTaken): Promise<ApprovalRecord> {
  const { decided, record } = await decideApproval(deps.approvals, id, decision);
  if (!record) throw new Error(`approval ${id} vanished`);
  if (decided) noteDecision(deps, record);
  return record;
}

/** What happens to `call` now: it runs, it waits, or it is answered without running. */
export async function gateCall(
  deps: GateDeps,
  run: RunInput,
  loop: LoopState,
  call: ToolCall,
  rules: readonly ApprovalRule[] | undefined,
  secrets: SecretPattern[],
  /** When the run reaches maxRunMinutes (epoch ms): a wait ends by then, since the run could not go on after it. */
  runEndsAt = Infinity,
): Promise<Gate> {
  const rule = approvalRuleFor(rules, call);
  if (!rule) return { kind: 'free' };
  const id = approvalIdOf(run.runId, call.toolUseId);
  const now = deps.now();
  const { adapter } = parseThreadId(run.threadId);
  let record =
    (await getApproval(deps.approvals, id)) ??
    (await createApproval(deps.approvals, {
      runId: run.runId,
      threadId: run.threadId,
      toolUseId: call.toolUseId,
      tool: call.name,
      inputDigest: inputDigest(call.input),
      inputPreview: inputPreview(call.input, secrets),
      approvers: rule.approvers,
      approversSetting: rule.approversSetting,
      requester: `${adapter}:${run.prompt.author.userId}`,
      createdAt: now,
      deadline: Math.max(now + 1000, Math.min(now + rule.timeoutMinutes * 60_000, runEndsAt)),
    }));
  if (record.state === 'waiting') {
    if (now < record.deadline) {
      deps.logger.info('tool call waits for approval', { runId: run.runId, tool: call.name, approvalId: id });
      const timeoutSeconds = Math.max(1, Math.ceil((record.deadline - now) / 1000));
      return { kind: 'wait', loop: { step: loop.step, next: 'approval', approval: { id, timeoutSeconds } } };
    }
    record = await decide(deps, id, { state: 'timed_out', by: 'timeout', at: now });
  }
  // Denied from the chat: the denier may still say why; the run waits for it (no Lambda held) until then.
  if (record.state === 'denied' && !record.reason && record.reasonUntil !== undefined && now < record.reasonUntil) {
    deps.logger.info('denied tool call waits for its reason', { runId: run.runId, tool: call.name, approvalId: id });
    const timeoutSeconds = Math.max(1, Math.ceil((record.reasonUntil - now) / 1000));
    return { kind: 'wait', loop: { step: loop.step, next: 'approval', approval: { id, timeoutSeconds } } };
  }
  if (record.state === 'approved' && record.inputDigest === inputDigest(call.input)) return { kind: 'approved', record };
  return { kind: 'refused', record, outcome: { status: 'error', text: refusedResult(record) } };
}

/** The decision goes into the context beside the call, for the run's audit record. */
export function noteInContext(entries: ContextEntry[], record: ApprovalRecord): void {
  const answer = entries.findLast((e) => e.role === 'assistant' && e.content.some((b) => b.toolUse?.toolUseId === record.toolUseId));
  if (!answer || record.state === 'waiting') return;
  const note = { outcome: record.state, by: record.decidedBy ?? 'unknown', at: new Date(record.decidedAt ?? Date.now()).toISOString() };
  answer.meta.approvals = { ...answer.meta.approvals, [record.toolUseId]: note };
}

export interface AwaitDeps extends GateDeps {
  ledger: LedgerDeps;
  thread(run: RunInput): Thread;
}

/**
 * The run now waits with `taskToken`: store it in the record, and post the approval message once.
 * A record that no longer waits, or a message that cannot be posted (the call is then denied),
 * throws ApprovalNotWaiting, which sends the run back to the Tool state.
 */
export async function awaitApproval(
  deps: AwaitDeps,
  run: RunInput,
  loop: LoopState | undefined,
  taskToken: string | undefined,
): Promise<void> {
  const id = loop?.approval?.id;
  if (!id || !taskToken) throw new Error('AwaitApproval needs the approval id in $.loop.approval and the task token');
  const record = await setTaskToken(deps.approvals, id, taskToken, deps.now());
  if (!record) throw new ApprovalNotWaiting(`approval ${id} is no longer waiting`);
  try {
    const posted = await postOnce(deps.ledger, run.runId, RUN_RECORD.approvalMessage(record.toolUseId), () =>
      deps.thread(run).post(approvalCard(record)).then(postedMessage),
    );
    if (record.state === 'waiting') await setMessage(deps.approvals, id, posted.messageId);
  } catch (error) {
    deps.logger.error('approval message not posted: the call is denied', { runId: run.runId, approvalId: id, error });
    await decide(deps, id, {
      state: 'denied',
      by: 'system',
      reason: 'the approval message could not be posted in the thread, so nobody could be asked',
      at: deps.now(),
    });
    throw new ApprovalNotWaiting(`approval ${id} could not be asked for`);
  }
}
