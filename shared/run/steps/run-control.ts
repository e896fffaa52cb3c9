// How a run is steered between its steps: the stop watch while work is in flight, the stop and
// steer flags between tool calls, where the loop goes after a model answer or a tool result, the
// run limits, and the step count that triggers a hand-over to a fresh execution.
import type { ContentBlock } from '@aws-sdk/client-bedrock-runtime';
import { type ActorDeps, type RunFlags, runFlags, takeSteer } from '../actor.ts';
import { holderRunId } from '../subagents/child-run.ts';
import type { JsonLogger } from '../../observability/log.ts';
import type { LoopState, RunInput } from '../../contracts.ts';
import { applySteer } from '../steer.ts';
import { type LoadedContext, type StoreDeps, saveLoadedContext, type ContextEntry, contextIdOf } from '../../context/store.ts';
import { pendingToolCall } from '../../context/tool-calls.ts';
import type { ToolRegistry } from '../../tools/registry.ts';
import { stepMeta } from './deps.ts';
import { runDeadline, type RunSnapshot } from './snapshot.ts';

export type FlagDeps = { actor: Pick<ActorDeps, 'db' | 'tableName'> };

/** The loop state of a run that must end now because someone stopped it. */
export const stoppedAt = (step: number): LoopState => ({ step, next: 'finish', stopReason: 'aborted' });

/**
 * The run's flags: those of the run holding the thread (a subagent's root). Steering texts are the
 * root's own to take, so a subagent sees none.
 */
export async function flagsFor(deps: FlagDeps, run: RunInput): Promise<RunFlags> {
  const flags = await runFlags(deps.actor, run.threadId, holderRunId(run));
  return run.child ? { abort: flags.abort, steer: [] } : flags;
}

export async function isStopped(deps: FlagDeps, run: RunInput): Promise<boolean> {
  return (await flagsFor(deps, run)).abort;
}

/** Polls the run's stop flag while work is in flight; aborts the signal when it is set. */
export function watchForStop(deps: FlagDeps, run: RunInput, everyMs = 300): { signal: AbortSignal; stop(): void } {
  const controller = new AbortController();
  const timer = setInterval(() => {
    isStopped(deps, run)
      .then((stopped) => stopped && controller.abort(new Error('stopped by the user')))
      .catch(() => undefined);
  }, everyMs);
  return { signal: controller.signal, stop: () => clearInterval(timer) };
}

/**
 * Between tool calls: a stop ends the run, a steer skips the remaining calls and goes back to the
 * model. `flags`: the run's flags when the caller read them already (with its other reads).
 */
export async function checkFlagsBetweenTools(
  deps: FlagDeps & { store: StoreDeps; logger: JsonLogger; now: () => number },
  run: RunInput,
  loop: LoopState,
  context: LoadedContext,
  flags?: RunFlags,
): Promise<LoopState | undefined> {
  flags ??= await flagsFor(deps, run);
  if (flags.abort) return stoppedAt(loop.step);
  if (flags.steer.length === 0) return undefined;
  const steer = await takeSteer(deps.actor, run.threadId, run.runId);
  if (steer.length === 0) return undefined;
  const skipped = applySteer(context.entries, steer, stepMeta(deps.now, run, loop.step));
  await saveLoadedContext(deps.store, contextIdOf(run), context);
  deps.logger.info('steered', { runId: run.runId, skippedTools: skipped });
  return { step: loop.step, next: 'model' };
}

/**
 * Where the loop goes once a tool result is saved: the next tool call, or back to the model. From
 * the sandbox or reach step (`tools` given) a next call that runs there or in the other goes
 * straight to it; any other goes through the tool step.
 */
export function routeAfterTool(entries: ContextEntry[], step: number, tools?: ToolRegistry): LoopState {
  const pending = pendingToolCall(entries);
  if (!pending) return { step, next: 'model' };
  const where = tools?.runsIn(pending.name);
  return { step, next: where === 'sandbox' || where === 'reach' ? where : 'tool' };
}

/** Where the loop goes after a model answer: its tool calls, or the end of the run. */
export function routeAfterAnswer(step: number, content: ContentBlock[], stopReason: string): LoopState {
  return { step: step + 1, next: content.some((b) => b.toolUse) ? 'tool' : 'finish', stopReason };
}

/** Why a run that still wants to work must end now, if it must (the message goes to the thread). */
export function runLimitReached(step: number, snapshot: RunSnapshot, now: number): string | undefined {
  if (step + 1 >= snapshot.maxModelSteps) {
    return `I stopped here: this run reached its limit of ${snapshot.maxModelSteps} model calls (maxModelSteps in settings.json). Say "continue" to go on.`;
  }
  if (now >= runDeadline(snapshot)) {
    return `I stopped here: this run reached its time limit of ${snapshot.maxRunMinutes} minutes (maxRunMinutes in settings.json). Say "continue" to go on.`;
  }
  return undefined;
}

/**
 * Each execution counts its steps; well before Step Functions' 25,000-event history limit (a step
 * is about 7 events) the run continues in a fresh execution, which resumes where this one was.
 */
export function countStep(before: LoopState | undefined, after: LoopState, limit = 1000): LoopState {
  const work = (before?.work ?? 0) + 1;
  if (after.next !== 'finish' && after.next !== 'handoff' && after.next !== 'approval' && after.next !== 'subagents' && work >= limit)
    return { ...after, work, next: 'handoff', resume: after.next };
  return { ...after, work };
}
