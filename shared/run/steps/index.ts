// The agent loop, one Lambda invocation per step (prepare and the first model step share one, and a
// step that ends the run finishes it in the same invocation), driven by the state machine
// (infra/constructs/agent-run-definition.ts):
//   prepare + model -> (tool | sandbox (-> progress -> sandbox)* | reach -> ...)* -> model ... -> finish;  fail from every Catch;
//   progress shows a long command's last line in the thread's status while the sandbox step waits on it;
//   a run with MCP servers goes from its first model step to connect (listing their tools) and back;
//   handoff to a fresh execution for very long runs.
// Each step is idempotent: Step Functions and Lambda retries re-run code, so every effect is keyed
// by (run, step). The sandbox step runs in its own function, inside the VPC (sandbox-tool.ts); the
// reach step (web_fetch, MCP) in another, the only one that reaches the Internet (reach.ts).
import type { Release } from '../actor.ts';
import type { LoopState, RunInput, StepEvent } from '../../contracts.ts';
import type { ContextEntry } from '../../context/store.ts';
import type { AgentDeps } from './deps.ts';
import { type ExchangeWrite, fail, finish, writeExchange } from './finish.ts';
import { handoff } from './handoff.ts';
import { modelStep } from './model.ts';
import { prepareRun } from './prepare.ts';
import { progressStep } from './progress.ts';
import { countStep } from './run-control.ts';
import { loadSnapshot } from './snapshot.ts';
import { toolStep } from './tool.ts';
import { awaitApproval } from '../../approvals/gate.ts';
import { awaitSubagents } from '../subagents/delegate.ts';

export type { AgentDeps } from './deps.ts';

/** After prepare, the run's messages are redacted with the secret patterns it began with (its snapshot's). */
async function useRunSecretPatterns(deps: AgentDeps, run: RunInput): Promise<void> {
  if (!deps.useSecretPatterns) return;
  const snapshot = await loadSnapshot(deps, run).catch(() => undefined);
  if (snapshot) deps.useSecretPatterns(snapshot.secretPatterns ?? []);
}

type Released = { released: Release['outcome'] };

/**
 * A run its step found done ends in the same invocation: on AWS a Lambda invoke, a task state and a
 * Choice less before the thread is free for its next prompt. A stopped run does not: whoever stopped
 * it ends its execution, and the run-ended rule releases the thread (Finish, if it gets there).
 */
async function endedHere(deps: AgentDeps, run: RunInput, next: LoopState, ending: Ending): Promise<LoopState | (LoopState & Released)> {
  if (next.next !== 'finish' || next.stopReason === 'aborted') {
    await settled(ending);
    return next;
  }
  const release = await finish(deps, run, next, ending.exchange).catch(async (error: unknown) => {
    await settled(ending);
    throw error;
  });
  return { ...next, released: release.outcome };
}

interface Ending {
  /** For the model step: an answer that would end the run starts the exchange's log write. */
  ending?: (entries: ContextEntry[]) => void;
  exchange?: Promise<ExchangeWrite>;
}

/** An exchange write the step began and no finish here takes (the run went on, was stopped, or the step failed) is not left in flight. */
async function settled(ending: Ending): Promise<void> {
  await ending.exchange?.then((write) => write.written).catch(() => undefined);
}

/** The finish's log write, begun by the model step beside its last writes (on AWS an S3 round trip less before the thread is free). */
function endingOf(deps: AgentDeps, run: RunInput): Ending {
  // A subagent's end writes no log (its exchange is its root's).
  if (run.child) return {};
  const state: Ending = {
    ending: (entries) => {
      // A step run again in the same invocation (its kept context was stale) begins it again, after
      // the first one's write.
      const before = state.exchange ? settled(state) : undefined;
      state.exchange = before ? before.then(() => writeExchange(deps, run, entries)) : writeExchange(deps, run, entries);
      state.exchange.catch(() => undefined);
    },
  };
  return state;
}

export async function runStep(deps: AgentDeps, event: StepEvent): Promise<LoopState | Released> {
  const { loop, error, ...run } = event.state;
  const limit = deps.handoffAfterSteps;
  if (event.action !== 'prepare') await useRunSecretPatterns(deps, run);
  switch (event.action) {
    case 'prepare': {
      // The sandbox's early start goes on beside the first model step; it has ended before the run
      // does (and before the invocation: Lambda freezes whatever is left running when the handler returns).
      const alongside: Promise<unknown>[] = [];
      const ending = endingOf(deps, run);
      let next: LoopState;
      try {
        const prepared = await prepareRun(deps, run, { alongside: (work) => alongside.push(work) });
        // The model step waits for prepare's writes (and fails with them); whatever happens, the
        // invocation does not end with them in flight.
        alongside.push(prepared.written.catch(() => undefined));
        next = countStep(loop, prepared.next, limit);
        if (next.next === 'model') {
          // The first model step follows in the same invocation: on AWS a task state and a Lambda invoke
          // less before the first token. It goes on from the prepared context and snapshot, its first
          // write beside prepare's last ones.
          deps.useSecretPatterns?.(prepared.snapshot.secretPatterns ?? []);
          next = countStep(next, await modelStep(deps, run, next, { prepared, ending: ending.ending }), limit);
        }
      } catch (error) {
        await settled(ending);
        throw error;
      } finally {
        await Promise.all(alongside);
      }
      return endedHere(deps, run, next, ending);
    }
    case 'model': {
      const ending = endingOf(deps, run);
      const next = await modelStep(deps, run, loop ?? { step: 0, next: 'model' }, { ending: ending.ending }).catch(
        async (error: unknown) => {
          await settled(ending);
          throw error;
        },
      );
      return endedHere(deps, run, countStep(loop, next, limit), ending);
    }
    case 'tool':
      return countStep(loop, await toolStep(deps, run, loop ?? { step: 0, next: 'tool' }), limit);
    case 'progress':
      return countStep(loop, await progressStep(deps, run, loop ?? { step: 0, next: 'progress' }), limit);
    case 'approval':
      // AwaitApproval ignores what this returns: the run goes on when a decision is sent with the token.
      await awaitApproval({ ...deps, approvals: deps.actor }, run, loop, event.taskToken);
      return loop ?? { step: 0, next: 'tool' };
    case 'subagents':
      // AwaitSubagents ignores what this returns: the run goes on when its last child resumes it.
      await awaitSubagents(deps, run, loop, event.taskToken);
      return loop ?? { step: 0, next: 'tool' };
    case 'handoff':
      return handoff(deps, run, loop ?? { step: 0, next: 'model' });
    case 'finish':
      return { released: (await finish(deps, run, loop)).outcome };
    case 'fail':
      return { released: (await fail(deps, run, error)).outcome };
    case 'connect':
      // The state machine sends it to the reach step; here it is a wiring bug.
      throw Object.assign(new Error('Invalid step event: connect runs in the reach step'), { name: 'InvalidStepEvent' });
  }
}
