// How a run ends. finish: the stop card goes, the exchange is logged, the lease passes to the next
// prompt. fail (every Catch of the state machine, and the run-ended rule): a short human message in
// the thread, once, then the same release, so the thread stays usable whatever went wrong.
import { type Release, releaseLease } from '../actor.ts';
import { auditRunEnd, failedRunEnd, finishedRunEnd } from '../../observability/audit.ts';
import { describeFailure, parseStepFailure, type StepFailure } from '../failures.ts';
import { childResultOf, endChild, finishedOutcome, stopChildrenOf } from '../subagents/end.ts';
import { promptText } from '../../admission/prompt-body.ts';
import { postedMessage, postOnce, readRecord, type PostedMessage } from '../ledger.ts';
import { textOf } from '../../model/converse.ts';
import { costFooter, totalUsage } from '../../model/pricing.ts';
import type { LoopState, RunInput, StepEvent } from '../../contracts.ts';
import { appendLog, type ContextEntry, type LogEntry, loadContext, contextIdOf } from '../../context/store.ts';
import { loadRunContext } from './run-context.ts';
import type { AgentDeps } from './deps.ts';
import { loadSnapshot } from './snapshot.ts';
import { redactSecrets, type SecretPattern, secretPatternsWith } from '../../policy/secret-filter.ts';
import { removeStopCard } from './stop-card.ts';
import { RUN_RECORD } from '../../table.ts';
import { countRunEnd, sandboxShare, type SandboxShare } from './run-end.ts';
import type { RunSnapshot } from './snapshot.ts';
import { noteHooks, runLambdaHooks } from '../../hooks/step-hooks.ts';

/** SessionEnd hooks see how the run ended; they change nothing, and their runs go into the audit record (on the run's last entry). */
async function sessionEndHooks(deps: AgentDeps, run: RunInput, snapshot: RunSnapshot, entries: ContextEntry[], outcome: string) {
  const verdict = await runLambdaHooks(deps, run, snapshot, 'SessionEnd', { outcome });
  if (verdict)
    noteHooks(
      entries.findLast((e) => e.meta.runId === run.runId),
      verdict.notes,
    );
}

/** The run's prompt and the agent's replies, as log.jsonl keeps them (no tool results). */
function exchangeLog(run: RunInput, text: string, entries: ContextEntry[], replies: Map<number, string>): LogEntry[] {
  const attachments = entries.find((e) => e.meta.messageId === run.prompt.messageId)?.meta.attachments;
  const log: LogEntry[] = [
    {
      date: run.prompt.postedAt,
      messageId: run.prompt.messageId,
      userId: run.prompt.author.userId,
      userName: run.prompt.author.userName,
      text,
      isBot: false,
      ...(attachments ? { attachments } : {}),
    },
  ];
  for (const entry of entries) {
    if (entry.role !== 'assistant' || entry.meta.runId !== run.runId) continue;
    const text = textOf(entry.content);
    if (!text) continue;
    const step = entry.meta.step ?? 0;
    log.push({
      date: entry.meta.at,
      messageId: replies.get(step) ?? `${run.runId}:${step}`,
      userId: 'self',
      userName: 'agent',
      text,
      isBot: true,
    });
  }
  return log;
}

/** The run's exchange as log.jsonl gets it, and the write that appends it (in flight). */
export interface ExchangeWrite {
  log: LogEntry[];
  secrets: SecretPattern[];
  written: Promise<unknown>;
  /** The run's share of its thread's sandbox, read beside the write (its usage includes it). */
  share: Promise<SandboxShare | undefined>;
}

/**
 * Starts appending the run's exchange (its prompt and the replies in `entries`) to log.jsonl, and
 * reading the run's sandbox share beside it. The append goes over the version this container's
 * prepare read when it has it (a stale one costs a read, as before). Lines already there are not
 * added again, and a reply logged with a text its message no longer has is corrected, so an
 * exchange written before the run's end (the model step ending it starts this beside its last
 * writes; if the step then fails, its retry may edit the reply) is made right by the finish's write.
 */
export async function writeExchange(deps: AgentDeps, run: RunInput, entries: ContextEntry[]): Promise<ExchangeWrite> {
  const replies = new Map<number, string>();
  for (const entry of entries) {
    if (entry.role !== 'assistant' || entry.meta.runId !== run.runId || entry.meta.step === undefined) continue;
    // The answer names its message; a heartbeat's (posted whole) and an older version's entries do not.
    if (entry.meta.replyId) replies.set(entry.meta.step, entry.meta.replyId);
    else if (textOf(entry.content)) {
      const record = await readRecord<PostedMessage>(deps.ledger, run.runId, RUN_RECORD.reply(entry.meta.step));
      if (record) replies.set(entry.meta.step, record.messageId);
    }
  }
  // Ending must not depend on the stored text: without it, the log keeps the prompt's beginning.
  const text = await promptText(deps.store, run.prompt).catch(() => run.prompt.text);
  const log = exchangeLog(run, text, entries, replies);
  // The deployment's own patterns as the run began (the log lines' filter knows only the built-in ones).
  const snapshot = await loadSnapshot(deps, run).catch(() => undefined);
  const secrets = secretPatternsWith(snapshot?.secretPatterns);
  const known = deps.logs?.get(run.threadId);
  deps.logs?.delete(run.threadId);
  const written = appendLog(deps.store, run.threadId, log, secrets, known, true);
  // Awaited by whoever ends the run; an early failure is not an unhandled one.
  written.catch(() => undefined);
  const share = snapshot ? sandboxShare(deps, run, snapshot.startedAt).catch(() => undefined) : Promise.resolve(undefined);
  return { log, secrets, written, share };
}

/**
 * Appends the exchange to log.jsonl (or completes `started`, begun earlier) and logs it; `alongside`
 * (given the run's usage, sandbox share included, and the log's write) runs while the log is
 * written, and waits for it only where it must.
 */
async function logExchange(
  deps: AgentDeps,
  run: RunInput,
  entries: ContextEntry[],
  outcome: string,
  extra: Record<string, unknown> = {},
  alongside?: (usage: RunUsage, logged: Promise<unknown>) => Promise<unknown>,
  started?: Promise<ExchangeWrite>,
): Promise<RunUsage> {
  // The log's write goes on while `alongside` runs; its failure is still this call's.
  const { log, secrets, written: logged, share } = await (started ?? writeExchange(deps, run, entries));
  const usage = withSandbox(runUsage(entries, run), await share);
  deps.logger.info('exchange', {
    runId: run.runId,
    threadId: run.threadId,
    outcome,
    ...extra,
    usage,
    // A long prompt's beginning only: its whole text is in log.jsonl.
    prompt: {
      user: run.prompt.author.userId,
      text: redactSecrets(run.prompt.text, secrets),
      ...(run.prompt.textKey ? { textKey: run.prompt.textKey } : {}),
    },
    replies: log.filter((e) => e.isBot).map((e) => redactSecrets(e.text, secrets)),
  });
  await Promise.all([logged, alongside?.(usage, logged)]);
  return usage;
}

/** The tokens (and cost) of the run's model steps, from their context entries. */
function runUsage(entries: ContextEntry[], run: RunInput) {
  return totalUsage(entries.flatMap((e) => (e.role === 'assistant' && e.meta.runId === run.runId && e.meta.usage ? [e.meta.usage] : [])));
}

type RunUsage = ReturnType<typeof totalUsage> & Partial<SandboxShare>;

/** The run's usage with its sandbox time and cost, which its total cost includes. */
function withSandbox(usage: ReturnType<typeof totalUsage>, share: SandboxShare | undefined): RunUsage {
  if (!share) return usage;
  const costUsd = usage.costUsd === undefined ? undefined : Math.round((usage.costUsd + share.sandboxCostUsd) * 1_000_000) / 1_000_000;
  return { ...usage, ...share, ...(costUsd === undefined ? {} : { costUsd }) };
}

/** `showCost`: the run's tokens and cost under its replies, once. */
async function postCostFooter(deps: AgentDeps, run: RunInput, usage: ReturnType<typeof totalUsage>): Promise<void> {
  await postOnce(deps.ledger, run.runId, RUN_RECORD.costFooter, () => deps.thread(run).post(costFooter(usage)).then(postedMessage));
}

/**
 * Whether the run may have shown the Stop card: the model step shows it with an answer that calls
 * tools, so a run with no such answer in the context (and none compacted away) showed none.
 */
function mayHaveShownStopCard(entries: ContextEntry[], runId: string): boolean {
  return entries.some((e) => e.meta.runId === runId && (e.meta.compactions !== undefined || e.content.some((b) => b.toolUse)));
}

/**
 * A subagent's end: no reply, log line or lease of its own (they are its root's); its answer goes to
 * its parent, which the last child to end resumes.
 */
async function finishChild(deps: AgentDeps, run: RunInput, loop: LoopState | undefined, entries: ContextEntry[]): Promise<Release> {
  const snapshot = await loadSnapshot(deps, run).catch(() => undefined);
  await Promise.all([
    countRunEnd(deps, run, loop?.stopReason === 'aborted' ? 'stopped' : 'finished', { startedAt: snapshot?.startedAt }),
    auditRunEnd(deps, run, finishedRunEnd(loop, snapshot), entries),
  ]);
  await endChild(deps, run, childResultOf(run, entries, finishedOutcome(loop), snapshot?.agent));
  return { outcome: 'not-holder' };
}

/**
 * `exchange`: the exchange's log write, when the model step that ended the run started it beside its
 * last writes (same invocation).
 */
export async function finish(
  deps: AgentDeps,
  run: RunInput,
  loop: LoopState | undefined,
  exchange?: Promise<ExchangeWrite>,
): Promise<Release> {
  // Read once for the whole end (the last step's container usually has it: run-context.ts).
  const { entries } = await loadRunContext(deps, contextIdOf(run), loop?.contextVersion);
  if (run.child) return finishChild(deps, run, loop, entries);
  if (mayHaveShownStopCard(entries, run.runId)) await removeStopCard(deps, run);
  const snapshot = await loadSnapshot(deps, run).catch(() => undefined);
  // The metrics, the cost footer, the audit record and the lease's release need nothing of each
  // other: at once, while the log is written (none of the first three fails the end: each logs its
  // own error). The lease passes on only once the exchange is in log.jsonl (the next run's backfill
  // reads it) and the cost footer is posted (the next run's replies come after it). SessionEnd hooks
  // come first, once the log is written, as their notes go into the audit record.
  const ended: { release?: Release } = {};
  const endRun = async (usage: RunUsage, logged: Promise<unknown> = Promise.resolve()) => {
    if (snapshot?.hooks) await sessionEndHooks(deps, run, snapshot, entries, finishedRunEnd(loop, snapshot).outcome);
    const footer =
      snapshot?.showCost && usage.inputTokens + usage.outputTokens > 0
        ? postCostFooter(deps, run, usage).catch((error: unknown) =>
            deps.logger.warn('could not post the cost', { runId: run.runId, error }),
          )
        : undefined;
    await Promise.all([
      countRunEnd(deps, run, loop?.stopReason === 'aborted' ? 'stopped' : 'finished', {
        startedAt: snapshot?.startedAt,
        sandboxCostUsd: usage.sandboxCostUsd,
      }),
      auditRunEnd(deps, run, { ...finishedRunEnd(loop, snapshot), sandboxCostUsd: usage.sandboxCostUsd }, entries),
      Promise.all([logged, footer]).then(async () => {
        ended.release = await releaseLease(deps.actor, run.threadId, run.runId);
      }),
    ]);
  };
  const outcome = loop?.stopReason === 'aborted' ? 'stopped' : 'completed';
  const steps = { steps: loop?.step ?? 0 };
  if (snapshot?.hooks) await endRun(await logExchange(deps, run, entries, outcome, steps, undefined, exchange));
  else await logExchange(deps, run, entries, outcome, steps, endRun, exchange);
  const { release } = ended;
  if (!release) throw new Error(`The lease of ${run.runId} was not released`);
  deps.logger.info('run finished', { runId: run.runId, threadId: run.threadId, release: release.outcome });
  return release;
}

export async function fail(deps: AgentDeps, run: RunInput, error: StepEvent['state']['error']): Promise<Release> {
  const failure = parseStepFailure(error);
  deps.logger.error('run failed', { runId: run.runId, threadId: run.threadId, ...failure });
  if (run.child) return failChild(deps, run, failure);
  await removeStopCard(deps, run);
  const snapshot = await loadSnapshot(deps, run).catch(() => undefined);
  const modelId = snapshot?.modelId ?? deps.defaultModelId;
  try {
    await postOnce(deps.ledger, run.runId, RUN_RECORD.errorReply, () =>
      deps.thread(run).post(describeFailure(failure, modelId)).then(postedMessage),
    );
  } catch (postError) {
    deps.logger.error('could not post the error message', { runId: run.runId, error: postError });
  }
  const entries = await loadContext(deps.store, contextIdOf(run))
    .then((context) => context.entries)
    .catch((readError: unknown) => void deps.logger.error('could not read the context', { runId: run.runId, error: readError }));
  const usage =
    entries &&
    (await logExchange(deps, run, entries, 'failed', { error: failure.errorType }).catch((logError: unknown) =>
      deps.logger.error('could not log the exchange', { runId: run.runId, error: logError }),
    ));
  await auditRunEnd(deps, run, { ...failedRunEnd(failure), sandboxCostUsd: usage?.sandboxCostUsd }, entries ?? undefined);
  await countRunEnd(deps, run, 'failed', { startedAt: snapshot?.startedAt, sandboxCostUsd: usage?.sandboxCostUsd });
  if (entries) await stopChildrenOf(deps, run, entries, 'the run that started it failed');
  return releaseLease(deps.actor, run.threadId, run.runId);
}

/** A subagent that failed: its parent reads why (the thread hears it from the parent), and its own children stop. */
async function failChild(deps: AgentDeps, run: RunInput, failure: StepFailure): Promise<Release> {
  const [entries, snapshot] = await Promise.all([
    loadContext(deps.store, contextIdOf(run))
      .then((context) => context.entries)
      .catch(() => []),
    loadSnapshot(deps, run).catch(() => undefined),
  ]);
  await auditRunEnd(deps, run, failedRunEnd(failure), entries);
  await countRunEnd(deps, run, 'failed', { startedAt: snapshot?.startedAt });
  await stopChildrenOf(deps, run, entries, 'the subagent that started it failed');
  await endChild(deps, run, childResultOf(run, entries, 'failed', snapshot?.agent, failure.errorType));
  return { outcome: 'not-holder' };
}
