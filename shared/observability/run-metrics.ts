// The run-level metrics: a run starting, refused by a budget, and ending (finished, failed or
// stopped), each counted once per run with its adapter and what triggered it.
import { readRecord, writeRecord, type LedgerDeps } from '../run/ledger.ts';
import { RUN_RECORD } from '../table.ts';
import type { MetricsSink } from './metrics.ts';
import type { Prompt, RunInput } from '../contracts.ts';
import { triggerKindOf } from '../run/trigger-kind.ts';

/** The platform of a thread id (`slack:…`, `teams:…`). */
export const adapterOf = (threadId: string): string => threadId.slice(0, Math.max(0, threadId.indexOf(':'))) || 'unknown';

export const runDimensions = (prompt: Prompt) => ({ adapter: adapterOf(prompt.threadId), trigger: triggerKindOf(prompt) });

/** A run's execution started; a hand-over's fresh execution (it has an executionName) is the same run. */
export function countRunStarted(metrics: MetricsSink, run: RunInput, now: number): void {
  if (run.executionName) return;
  metrics.put('RunsStarted', 1, runDimensions(run.prompt));
  const posted = Date.parse(run.prompt.postedAt);
  if (Number.isFinite(posted)) metrics.put('QueueWait', Math.max(0, now - posted), { adapter: adapterOf(run.threadId) });
}

/** A prompt a budget refused to run. */
export function countBudgetRefusal(metrics: MetricsSink, prompt: Prompt): void {
  metrics.put('BudgetRefusals', 1, runDimensions(prompt));
}

export type RunEnd = 'finished' | 'failed' | 'stopped';
const END_METRIC = { finished: 'RunsFinished', failed: 'RunsFailed', stopped: 'RunsStopped' } as const;

/**
 * A run ended: its end, its duration and its sandbox's cost, once, whichever of finish, fail or
 * run-ended gets there (and however often a step is retried), through the run's ledger record.
 */
export async function countRunEnded(
  deps: { ledger: LedgerDeps; metrics?: MetricsSink; now: () => number },
  run: RunInput,
  end: RunEnd,
  costs: { startedAt?: number; sandboxCostUsd?: number },
): Promise<void> {
  if (!deps.metrics || (await readRecord(deps.ledger, run.runId, RUN_RECORD.runEndCounted))) return;
  await writeRecord(deps.ledger, run.runId, RUN_RECORD.runEndCounted, { end });
  const dimensions = runDimensions(run.prompt);
  deps.metrics.put(END_METRIC[end], 1, dimensions);
  if (costs.startedAt !== undefined) deps.metrics.put('RunDuration', Math.max(0, deps.now() - costs.startedAt), dimensions);
  if (costs.sandboxCostUsd) deps.metrics.put('CostUsd', costs.sandboxCostUsd, dimensions);
}
