// A subagent's end, whichever way it came (its finish or failure step, or run-ended when its execution
// ended without them): what it answered is recorded once, it counts itself done in its parent's
// batch, and the last child to end resumes the parent.
import type { LoopState, RunInput } from '../../contracts.ts';
import { textOf } from '../../model/converse.ts';
import { totalUsage } from '../../model/pricing.ts';
import type { ContextEntry } from '../../context/store.ts';
import type { JsonLogger } from '../../observability/log.ts';
import type { ChildResult } from '../../tools/tool.ts';
import { claimRecord, type LedgerDeps } from '../ledger.ts';
import { RUN_RECORD } from '../../table.ts';
import { countChildDone } from './batch.ts';
import { childRunId } from './child-run.ts';
import type { ChildExecutions } from './executions.ts';
import { SUBAGENT_TOOL } from '../../tools/builtin/subagent.ts';

/** Longest answer a child hands back (UTF-8 bytes, cut at a character): it goes into the parent's context as is. */
export const MAX_CHILD_ANSWER_BYTES = 32 * 1024;

export interface ChildEndDeps {
  ledger: LedgerDeps;
  children?: ChildExecutions;
  logger: JsonLogger;
}

function bounded(text: string): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= MAX_CHILD_ANSWER_BYTES) return text;
  return `${bytes
    .subarray(0, MAX_CHILD_ANSWER_BYTES)
    .toString('utf8')
    .replace(/\uFFFD$/, '')}\n[answer cut at ${MAX_CHILD_ANSWER_BYTES / 1024} KB]`;
}

/** How a child ended, from its own context and how its loop ended. */
export function childResultOf(
  run: RunInput,
  entries: ContextEntry[],
  outcome: ChildResult['outcome'],
  agent: string | undefined,
  reason?: string,
): ChildResult {
  const answers = entries.filter((e) => e.role === 'assistant' && e.meta.runId === run.runId);
  const usage = totalUsage(answers.flatMap((e) => (e.meta.usage ? [e.meta.usage] : [])));
  const answer = textOf(answers.at(-1)?.content ?? []).trim();
  return {
    outcome,
    ...(answer ? { answer: bounded(answer) } : {}),
    ...(reason ? { reason } : {}),
    ...(agent ? { agent } : {}),
    steps: answers.length,
    tokens: { input: usage.inputTokens, output: usage.outputTokens },
    ...(usage.costUsd !== undefined ? { costUsd: usage.costUsd } : {}),
  };
}

/** The outcome of a child whose loop reached its finish step. */
export function finishedOutcome(loop: LoopState | undefined): ChildResult['outcome'] {
  if (loop?.stopReason === 'aborted') return 'stopped';
  if (loop?.stopReason === 'limit') return 'limit';
  if (loop?.stopReason === 'budget') return 'budget';
  return 'finished';
}

export async function endChild(deps: ChildEndDeps, run: RunInput, result: ChildResult): Promise<void> {
  const child = run.child;
  if (!child) return;
  // The first end stands: a late run-ended after the finish step changes nothing.
  await claimRecord(deps.ledger, run.runId, RUN_RECORD.childResult, result);
  const batch = await countChildDone(deps.ledger, child.parentRunId, child.batch, run.runId);
  deps.logger.info('subagent ended', {
    runId: run.runId,
    parentRunId: child.parentRunId,
    outcome: result.outcome,
    pending: batch?.pending,
  });
  if (batch && batch.pending <= 0 && batch.token) await deps.children?.resume(batch.token);
}

/**
 * Stops the children a run started that may still work: its own execution ended (stopped, failed),
 * so nobody waits for their answers. Their executions' ends record them as stopped.
 */
export async function stopChildrenOf(deps: ChildEndDeps, run: RunInput, entries: readonly ContextEntry[], cause: string): Promise<void> {
  if (!deps.children) return;
  const calls = entries
    .filter((e) => e.role === 'assistant' && e.meta.runId === run.runId)
    .flatMap((e) => e.content.flatMap((b) => (b.toolUse?.name === SUBAGENT_TOOL && b.toolUse.toolUseId ? [b.toolUse.toolUseId] : [])));
  const answered = new Set(entries.flatMap((e) => e.content.flatMap((b) => (b.toolResult?.toolUseId ? [b.toolResult.toolUseId] : []))));
  await Promise.all(
    calls
      .filter((id) => !answered.has(id))
      .map((id) =>
        deps
          .children!.stop(childRunId(run.runId, id), cause)
          .catch((error: unknown) => deps.logger.warn('could not stop a subagent', { runId: run.runId, toolUseId: id, error })),
      ),
  );
}
