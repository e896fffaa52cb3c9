// Hand-over: a long run continues in a fresh execution, which resumes the loop where this one was;
// this execution then ends (HandedOff). The step counting that triggers it is in run-control.ts.
import { setExecution } from '../actor.ts';
import type { LoopState, RunInput } from '../../contracts.ts';
import type { AgentDeps } from './deps.ts';

export async function handoff(deps: Pick<AgentDeps, 'actor' | 'logger'>, run: RunInput, loop: LoopState): Promise<LoopState> {
  const part = Number(/-(\d+)$/.exec(run.executionName ?? '')?.[1] ?? 1) + 1;
  const executionName = `${run.runId}-${part}`;
  // The actor names the execution first, so a stop from now on reaches the new one. A subagent holds
  // no lease: it stops with its root's flag.
  if (!run.child) await setExecution(deps.actor, run.threadId, run.runId, executionName);
  const resumed = { ...run, executionName, loop: { step: loop.step, next: loop.resume ?? 'model', work: 0 } };
  await deps.actor.startRun(resumed);
  deps.logger.info('run handed over to a fresh execution', { runId: run.runId, executionName, step: loop.step });
  return { ...loop, next: 'finish' };
}
