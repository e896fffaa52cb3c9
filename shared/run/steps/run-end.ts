// A run's end as metrics, and its share of the thread's sandbox: the sandbox task's time from the
// later of its start and the run's start until the run ends, at the task size's Fargate price.
import { sandboxCostOf } from '../../model/pricing.ts';
import { countRunEnded, type RunEnd } from '../../observability/run-metrics.ts';
import { getSandbox } from '../../sandbox/lifecycle.ts';
import type { RunInput } from '../../contracts.ts';
import type { AgentDeps } from './deps.ts';
import { loadSnapshot } from './snapshot.ts';

export interface SandboxShare {
  sandboxSeconds: number;
  sandboxCostUsd: number;
}

export async function sandboxShare(
  deps: Pick<AgentDeps, 'sandbox' | 'now'>,
  run: RunInput,
  runStartedAt: number,
): Promise<SandboxShare | undefined> {
  const size = deps.sandbox?.config.size;
  if (!deps.sandbox || !size) return undefined;
  const item = await getSandbox(deps.sandbox, run.threadId);
  if (!item) return undefined;
  const sandboxSeconds = Math.max(0, deps.now() - Math.max(item.startedAt, runStartedAt)) / 1000;
  return { sandboxSeconds, sandboxCostUsd: sandboxCostOf(sandboxSeconds, size) };
}

/** Counts the run's end once; `known` is what the caller already has (else it is read here). */
export async function countRunEnd(
  deps: AgentDeps,
  run: RunInput,
  end: RunEnd,
  known?: { startedAt?: number; sandboxCostUsd?: number },
): Promise<void> {
  try {
    let costs = known;
    if (!costs) {
      const startedAt = (await loadSnapshot(deps, run).catch(() => undefined))?.startedAt;
      const share = startedAt === undefined ? undefined : await sandboxShare(deps, run, startedAt);
      costs = { startedAt, sandboxCostUsd: share?.sandboxCostUsd };
    }
    await countRunEnded(deps, run, end, costs);
  } catch (error) {
    // Metrics never keep a thread from being released.
    deps.logger.warn('could not count the end of the run', { runId: run.runId, error });
  }
}
