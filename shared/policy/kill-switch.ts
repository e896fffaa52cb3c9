// The operators' kill switch: list the runs that are running, stop them, and pause the deployment
// (prompts wait in their threads' queues and start nothing until it resumes). The ops CLI and admins
// in the chat share these; stopping goes the way a person's stop goes (control.ts).
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { getActor, startWaiting, waitingThreads, type ActorDeps } from '../run/actor.ts';
import { slotHolders } from '../run/capacity.ts';
import { stopThread, type ControlDeps } from '../run/control.ts';
import { totalUsage } from '../model/pricing.ts';
import { loadContext, type StoreDeps } from '../context/store.ts';
import type { TableDeps } from './pause.ts';
import { pauseKey } from '../table.ts';

/** Resume: clears the pause, then starts each thread's first waiting prompt. Returns the threads started. */
export async function resume(deps: ActorDeps): Promise<string[]> {
  await deps.db.send(new DeleteCommand({ TableName: deps.tableName, Key: pauseKey }));
  const started: string[] = [];
  for (const threadId of await waitingThreads(deps)) {
    if (await startWaiting(deps, threadId)) started.push(threadId);
  }
  return started;
}

export interface RunningRun {
  threadId: string;
  runId: string;
  /** Who asked: their name as the platform gave it, or `event` for an event's prompt. */
  requester: string;
  startedAt?: number;
  /** Model steps done so far, and what they cost (absent: the model has no price). */
  steps: number;
  costUsd?: number;
  /** Prompts waiting behind it. */
  queued: number;
}

/**
 * The runs running now. Every running lease holds a run slot, so the slot holders name the threads
 * (one query); each thread's actor says its run, and its context its model steps and their cost.
 */
export async function listRuns(deps: { actor: TableDeps; store: StoreDeps }): Promise<RunningRun[]> {
  const runs: RunningRun[] = [];
  for (const { threadId } of await slotHolders(deps.actor)) {
    const actor = await getActor(deps.actor as ActorDeps, threadId);
    const run = actor?.status === 'running' ? actor.current : undefined;
    if (!run) continue;
    const { entries } = await loadContext(deps.store, threadId);
    const own = entries.filter((e) => e.role === 'assistant' && e.meta.runId === run.runId && e.meta.usage);
    const usage = totalUsage(own.map((e) => e.meta.usage!));
    runs.push({
      threadId,
      runId: run.runId,
      requester: run.prompt.author.userName || run.prompt.author.userId,
      startedAt: actor?.leaseTakenAt,
      steps: own.length,
      costUsd: usage.costUsd,
      queued: actor?.queue?.length ?? 0,
    });
  }
  return runs.sort((a, b) => (a.startedAt ?? 0) - (b.startedAt ?? 0));
}

/**
 * The runs as a table for a terminal or a code block. Thread ids and requesters come from chat
 * platforms and event files: `escape` (shared/support/display.ts, `forTerminal` or `forChat`) makes them inert.
 */
export function formatRuns(runs: RunningRun[], escape: (text: string) => string, now = Date.now()): string {
  if (runs.length === 0) return 'No runs are running.';
  const rows = [
    ['THREAD', 'REQUESTER', 'STARTED', 'STEPS', 'COST', 'QUEUED'],
    ...runs.map((r) => [
      escape(r.threadId),
      escape(r.requester),
      r.startedAt
        ? `${new Date(r.startedAt).toISOString().replace(/\.\d+Z$/, 'Z')} (${Math.round((now - r.startedAt) / 1000)} s ago)`
        : '?',
      String(r.steps),
      r.costUsd === undefined ? '-' : `$${r.costUsd.toFixed(4)}`,
      String(r.queued),
    ]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** What a stop by someone other than the thread's people says in the thread, and why the execution stopped. */
export const operatorStopCause = (who: string): string => `Stopped by ${who}`;
const OPERATOR_STOP = /^Stopped by (an operator|an admin, \S+)$/;

/** The notice a thread gets when an operator or an admin stopped its run, from the execution's cause. */
export const operatorStopNotice = (cause: string | null | undefined): string | undefined =>
  cause && OPERATOR_STOP.test(cause) ? `${cause}.` : undefined;

/** Stops the running runs of `threads` (or every running run); returns the threads stopped. */
export async function stopRuns(deps: ControlDeps, threads: string[] | 'all', who: string): Promise<string[]> {
  const targets = threads === 'all' ? (await slotHolders(deps.actor)).map((h) => h.threadId) : threads;
  const stopped: string[] = [];
  for (const threadId of targets) {
    if ((await stopThread(deps, threadId, operatorStopCause(who))) === 'stopped') stopped.push(threadId);
  }
  return stopped;
}
