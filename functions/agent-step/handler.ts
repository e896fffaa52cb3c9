// One step of the agent loop, as the state machine calls it: { action, state }.
import { runStep } from '../../shared/run/steps/index.ts';
import { agentEnv, readEnv } from '../../shared/env.ts';
import { agentFromEnv } from '../../shared/handler-context/agent.ts';
import { handlerLogger } from '../../shared/handler-context/logger.ts';
import { handlerMetrics, publishingMetrics } from '../../shared/handler-context/metrics.ts';
import { lazy } from '../../shared/support/lazy.ts';
import { stepEventSchema } from '../../shared/contracts.ts';
import { BUILTIN_TOOLS } from '../../shared/tools/builtin/index.ts';
import { parseOrThrow } from '../../shared/support/validation.ts';
import { lambdaHooksFromEnv } from '../../shared/hooks/lambda.ts';

const logger = handlerLogger('agent-step');
const metrics = handlerMetrics();
const agent = lazy(() => {
  const env = readEnv(agentEnv);
  return agentFromEnv(logger, env, BUILTIN_TOOLS, metrics, lambdaHooksFromEnv(env.HOOK_FUNCTIONS));
});

export async function handler(event: unknown) {
  // A malformed step event is a wiring bug: fail loudly with what was wrong.
  const step = parseOrThrow(stepEventSchema, event, 'Invalid step event', 'InvalidStepEvent');
  const { runId, threadId } = step.state;
  const steps = await agent();
  return publishingMetrics(metrics, async () =>
    steps.invoke(async () => runStep(await steps.deps(logger.with({ runId, threadId, action: step.action })), step)),
  );
}
