// The agent loop, one Lambda invocation per step, driven by the state machine
// (infra/constructs/agent-run-definition.ts):
//   prepare -> model -> (tool | sandbox | reach -> ...)* -> model ... -> finish;  fail from every Catch;
//   a run with MCP servers goes from its first model step to connect (listing their tools) and back;
//   handoff to a fresh execution for very long runs.
// Each step is idempotent: Step Functions and Lambda retries re-run code, so every effect is keyed
// by (run, step). The sandbox step runs in its own function, inside the VPC (sandbox-tool.ts); the
// reach step (web_fetch, MCP) in another, the only one that reaches the Internet (reach.ts).
import type { Release } from '../actor.ts';
import type { LoopState, StepEvent } from '../../contracts.ts';
import type { AgentDeps } from './deps.ts';
import { fail, finish } from './finish.ts';
import { handoff } from './handoff.ts';
import { modelStep } from './model.ts';
import { prepare } from './prepare.ts';
import { countStep } from './run-control.ts';
import { loadSnapshot } from './snapshot.ts';
import { toolStep } from './tool.ts';
import { awaitApproval } from '../../approvals/gate.ts';
import { awaitSubagents } from '../subagents/delegate.ts';

export type { AgentDeps } from './deps.ts';

export async function runStep(deps: AgentDeps, event: StepEvent): Promise<LoopState | { released: Release['outcome'] }> {
  const { loop, error, ...run } = event.state;
  const limit = deps.handoffAfterSteps;
  // After prepare, the run's messages are redacted with the secret patterns it began with.
  if (event.action !== 'prepare' && deps.useSecretPatterns) {
    const snapshot = await loadSnapshot(deps, run).catch(() => undefined);
    if (snapshot) deps.useSecretPatterns(snapshot.secretPatterns ?? []);
  }
  switch (event.action) {
    case 'prepare':
      return countStep(loop, await prepare(deps, run), limit);
    case 'model':
      return countStep(loop, await modelStep(deps, run, loop ?? { step: 0, next: 'model' }), limit);
    case 'tool':
      return countStep(loop, await toolStep(deps, run, loop ?? { step: 0, next: 'tool' }), limit);
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
