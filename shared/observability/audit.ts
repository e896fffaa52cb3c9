// The audit trail: one JSON record per run under audit/year=/month=/day=/ in the data bucket, for
// Athena (docs/audit.md). Who asked, where, what started it, the model, each tool call (name, time,
// outcome), tokens, cost and how the run ended; never the prompt, tool inputs or outputs, or replies.
// Written once, whichever way the run ends and however often its last step is retried: the first
// end claims the run's outcome and end time in the ledger, and the object is created only if absent.
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { EVENT_AUTHOR_ID } from '../policy/access.ts';
import { isS3PreconditionFailed } from '../aws/errors.ts';
import { parseThreadId } from '../ids.ts';
import { claimRecord, type LedgerDeps } from '../run/ledger.ts';
import { RUN_RECORD } from '../table.ts';
import { totalUsage } from '../model/pricing.ts';
import type { StepFailure } from '../run/failures.ts';
import type { JsonLogger } from './log.ts';
import type { LoopState, RunInput } from '../contracts.ts';
import { type ApprovalNote, type ContextEntry, loadContext, type ToolTime, contextIdOf, type ChildCall } from '../context/store.ts';
import { loadSnapshot, type RunSnapshot, type SnapshotDeps } from '../run/steps/snapshot.ts';
import type { HookNote } from '../hooks/run.ts';
import { triggerKindOf, type TriggerKind } from '../run/trigger-kind.ts';

export const AUDIT_PREFIX = 'audit/';

/** How a run ended. */
export const RUN_OUTCOMES = ['finished', 'failed', 'stopped', 'limit', 'timed_out', 'crashed'] as const;
export type RunOutcome = (typeof RUN_OUTCOMES)[number];

export interface RunEnd {
  outcome: RunOutcome;
  /** Short and from our own vocabulary (a stop reason, an error type): never text a person or the model wrote. */
  reason: string;
  /** Epoch milliseconds. */
  endedAt: number;
  /** The run's share of its sandbox's Fargate time, in USD (shared/run/steps/run-end.ts). */
  sandboxCostUsd?: number;
}

export interface AuditToolCall {
  name: string;
  /** Absent when the call never ran. */
  startedAt?: string;
  durationMs?: number;
  /** ok | error: it ran; skipped: it never ran (refused, steered away, stopped, the run ended first). */
  outcome: 'ok' | 'error' | 'skipped';
  /** A call to an MCP server or a web page: the server (or host), its tool, the bytes of its answer. */
  server?: string;
  tool?: string;
  bytes?: number;
  /** It waited for a person (settings.json `approvals`): who decided (`adapter:id`, `timeout`, `system`), when, what. */
  approval?: ApprovalNote;
  /** A subagent call: the child run (its own audit record has its calls), how it ended, its steps and cost. */
  subagent?: ChildCall;
}

export interface AuditRecord {
  runId: string;
  threadId: string;
  adapter: string;
  channel: string;
  requester: { userId: string; userName: string };
  trigger: TriggerKind;
  origin?: { trigger?: string; eventId?: string; objectKey?: string; event?: string; causedBy?: string };
  modelId?: string;
  /** The agent definition the run worked as (absent: the deployment's default). */
  agent?: string;
  /** A subagent's: the run whose call started it, the root holding the thread, how deep it is. */
  parent?: { runId: string; rootRunId: string; toolUseId: string; depth: number };
  askedAt: string;
  startedAt: string;
  endedAt: string;
  durationMs: number;
  outcome: RunOutcome;
  reason: string;
  steps: number;
  toolCalls: AuditToolCall[];
  /** Each run of a settings.json hook: its event, target (lambda ARN or command), tool call, duration and outcome. */
  hooks?: (HookNote & { toolUseId?: string })[];
  tokens: { input: number; output: number; cacheRead: number; cacheWrite: number };
  costUsd?: number;
  /** What the run's subagents cost (their own records have the same), apart from costUsd. */
  subagentsCostUsd?: number;
  sandboxCostUsd?: number;
}

const EVENT_NAME_PREFIX = 'event ';

function originOf(run: RunInput): AuditRecord['origin'] {
  const { author, source } = run.prompt;
  if (author.userId !== EVENT_AUTHOR_ID && !run.prompt.heartbeat) return undefined;
  // An event's prompt is signed `event <event file or bus source>`.
  const event = author.userName.startsWith(EVENT_NAME_PREFIX) ? author.userName.slice(EVENT_NAME_PREFIX.length) : undefined;
  // The person whose run wrote the event file, whose budgets the run spent (shared/events/chain.ts).
  const causedBy = run.prompt.causedBy;
  return { ...source, ...(event ? { event } : {}), ...(causedBy ? { causedBy } : {}) };
}

function toolCallsOf(entries: ContextEntry[]): AuditToolCall[] {
  const results = new Map<string, { status?: string; ran?: ToolTime }>();
  for (const entry of entries) {
    for (const block of entry.content) {
      const id = block.toolResult?.toolUseId;
      if (id) results.set(id, { status: block.toolResult?.status, ran: entry.meta.toolTimes?.[id] });
    }
  }
  return entries.flatMap((entry) =>
    entry.content.flatMap((block): AuditToolCall[] => {
      const use = block.toolUse;
      if (!use?.toolUseId) return [];
      const result = results.get(use.toolUseId);
      const approval = entry.meta.approvals?.[use.toolUseId];
      const decided = approval ? { approval } : {};
      if (!result?.ran) return [{ name: use.name ?? '', outcome: 'skipped', ...decided }];
      const { reach, ...ran } = result.ran;
      return [{ name: use.name ?? '', ...ran, outcome: result.status === 'error' ? 'error' : 'ok', ...reach, ...decided }];
    }),
  );
}

/** The run's audit record, from its context entries (those of this run), its snapshot and how it ended. */
export function auditRecord(run: RunInput, entries: ContextEntry[], snapshot: RunSnapshot | undefined, end: RunEnd): AuditRecord {
  const { adapter, channel } = parseThreadId(run.threadId);
  const own = entries.filter((e) => e.meta.runId === run.runId);
  const answers = own.filter((e) => e.role === 'assistant');
  const usage = totalUsage(answers.flatMap((e) => (e.meta.usage ? [e.meta.usage] : [])));
  const startedAt = snapshot?.startedAt ?? Date.parse(run.prompt.postedAt);
  const origin = originOf(run);
  const hooks = own.flatMap((e) => e.meta.hooks ?? []);
  const toolCalls = toolCallsOf(own);
  const children = toolCalls.flatMap((call) => (call.subagent?.costUsd !== undefined ? [call.subagent.costUsd] : []));
  const parent = run.child
    ? { runId: run.child.parentRunId, rootRunId: run.child.rootRunId, toolUseId: run.child.toolUseId, depth: run.child.depth }
    : undefined;
  return {
    runId: run.runId,
    threadId: run.threadId,
    adapter,
    channel,
    requester: { userId: run.prompt.author.userId, userName: run.prompt.author.userName },
    trigger: triggerKindOf(run.prompt),
    ...(origin ? { origin } : {}),
    ...(snapshot ? { modelId: snapshot.modelId } : {}),
    ...(snapshot?.agent ? { agent: snapshot.agent } : {}),
    ...(parent ? { parent } : {}),
    askedAt: run.prompt.postedAt,
    startedAt: new Date(startedAt).toISOString(),
    endedAt: new Date(end.endedAt).toISOString(),
    durationMs: Math.max(0, end.endedAt - startedAt),
    outcome: end.outcome,
    reason: end.reason.slice(0, 200),
    steps: answers.length,
    toolCalls,
    ...(hooks.length ? { hooks } : {}),
    tokens: {
      input: usage.inputTokens,
      output: usage.outputTokens,
      cacheRead: usage.cacheReadInputTokens,
      cacheWrite: usage.cacheWriteInputTokens,
    },
    ...(usage.costUsd !== undefined ? { costUsd: usage.costUsd } : {}),
    ...(children.length ? { subagentsCostUsd: Math.round(children.reduce((a, b) => a + b, 0) * 1_000_000) / 1_000_000 } : {}),
    ...(end.sandboxCostUsd ? { sandboxCostUsd: end.sandboxCostUsd } : {}),
  };
}

/** audit/year=YYYY/month=MM/day=DD/<runId>.json, by the run's end date (UTC): Hive-style partitions. */
export function auditKey(runId: string, endedAt: number): string {
  const [year, month, day] = new Date(endedAt).toISOString().slice(0, 10).split('-');
  return `${AUDIT_PREFIX}year=${year}/month=${month}/day=${day}/${runId}.json`;
}

export interface AuditDeps extends SnapshotDeps {
  ledger: LedgerDeps;
  /** Epoch milliseconds. */
  now: () => number;
}

/**
 * Writes the run's audit record, once: the first caller's outcome and end time stand (a later end
 * path, a retried step, reads them back), and the object is created only if absent (If-None-Match).
 */
export async function recordRunEnd(
  deps: AuditDeps,
  run: RunInput,
  end: Omit<RunEnd, 'endedAt'>,
  /** The thread's context, when the caller has it already (else it is read here). */
  known?: ContextEntry[],
): Promise<{ key: string; written: boolean }> {
  const claimed = await claimRecord<RunEnd>(deps.ledger, run.runId, RUN_RECORD.auditEnd, { ...end, endedAt: deps.now() });
  const [entries, snapshot] = await Promise.all([
    known ?? loadContext(deps.store, contextIdOf(run)).then((context) => context.entries),
    loadSnapshot(deps, run).catch(() => undefined),
  ]);
  const key = auditKey(run.runId, claimed.endedAt);
  try {
    await deps.store.s3.send(
      new PutObjectCommand({
        Bucket: deps.store.bucket,
        Key: key,
        Body: JSON.stringify(auditRecord(run, entries, snapshot, claimed)),
        ContentType: 'application/json',
        IfNoneMatch: '*',
      }),
    );
    return { key, written: true };
  } catch (error) {
    if (isS3PreconditionFailed(error)) return { key, written: false };
    throw error;
  }
}

/** How a run that reached its finish step ended: answered, stopped, or cut at a run limit. */
export function finishedRunEnd(loop: LoopState | undefined, snapshot: RunSnapshot | undefined): Omit<RunEnd, 'endedAt'> {
  if (loop?.stopReason === 'aborted') return { outcome: 'stopped', reason: 'stop requested' };
  if (loop?.stopReason === 'limit') {
    const steps = snapshot && loop.step >= snapshot.maxModelSteps;
    return { outcome: 'limit', reason: steps ? 'maxModelSteps' : 'maxRunMinutes' };
  }
  return { outcome: 'finished', reason: loop?.stopReason ?? 'end_turn' };
}

/** How a run whose failure handler ran ended. */
export function failedRunEnd(failure: StepFailure): Omit<RunEnd, 'endedAt'> {
  const timedOut = /States\.Timeout|TimedOut/i.test(failure.errorType);
  return { outcome: timedOut ? 'timed_out' : 'failed', reason: failure.errorType };
}

/** How a run whose execution ended without its own last step ended (the run-ended rule). */
export function executionRunEnd(
  status: string,
  error: string | null | undefined,
  cause: string | null | undefined,
): Omit<RunEnd, 'endedAt'> {
  // The cause of a stop is ours: who stopped it (a person in the thread, a newer message in interrupt mode, an operator).
  if (status === 'ABORTED') return { outcome: 'stopped', reason: cause || 'execution stopped' };
  if (status === 'TIMED_OUT') return { outcome: 'timed_out', reason: 'States.Timeout' };
  return { outcome: 'crashed', reason: error || 'States.Runtime' };
}

/** recordRunEnd for an end path that must go on regardless: a failure to write is logged, not thrown. */
export async function auditRunEnd(
  deps: AuditDeps & { logger: JsonLogger },
  run: RunInput,
  end: Omit<RunEnd, 'endedAt'>,
  known?: ContextEntry[],
): Promise<void> {
  try {
    const { key, written } = await recordRunEnd(deps, run, end, known);
    deps.logger.info(written ? 'audit record written' : 'audit record already written', { runId: run.runId, key });
  } catch (error) {
    deps.logger.error('could not write the audit record', { runId: run.runId, error });
  }
}
