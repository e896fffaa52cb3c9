// One step of the agent loop, as the state machine calls it: { action, state }.
import { type AgentDeps, runStep } from '../../shared/steps/index.ts';
import { agentFromEnv, chatFromEnv, handlerLogger } from '../../shared/handler-context.ts';
import { stepEventSchema } from '../../shared/schemas.ts';

const logger = handlerLogger('agent-step');
const loadChat = chatFromEnv(logger);
let deps: Promise<AgentDeps> | undefined;

export async function handler(event: unknown) {
  const parsed = stepEventSchema.safeParse(event);
  if (!parsed.success) {
    // A malformed step event is a wiring bug: fail loudly with what was wrong.
    const detail = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw Object.assign(new Error(`Invalid step event: ${detail}`), { name: 'InvalidStepEvent' });
  }
  deps ??= agentFromEnv(logger, loadChat).catch((error: unknown) => {
    deps = undefined;
    throw error;
  });
  return runStep(await deps, parsed.data);
}
