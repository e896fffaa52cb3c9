// The safety net: an execution that ended FAILED, TIMED_OUT or ABORTED (outside any Catch, or the
// failure handler itself failed) still releases its thread and starts the next queued prompt.
// Everything it calls is idempotent, so a run the failure handler already closed is a no-op.
import type { EventBridgeEvent } from 'aws-lambda';
import type { AgentDeps } from '../../shared/steps/deps.ts';
import { fail } from '../../shared/steps/finish.ts';
import { removeStopCard } from '../../shared/steps/stop-card.ts';
import { releaseLease } from '../../shared/actor.ts';
import { agentFromEnv, chatFromEnv, handlerLogger } from '../../shared/handler-context.ts';
import { runInputSchema } from '../../shared/schemas.ts';

interface ExecutionStatusChange {
  executionArn: string;
  name: string;
  status: string;
  input?: string | null;
  error?: string | null;
  cause?: string | null;
}

const logger = handlerLogger('run-ended');
const loadChat = chatFromEnv(logger);
let deps: Promise<AgentDeps> | undefined;

export async function handler(event: EventBridgeEvent<'Step Functions Execution Status Change', ExecutionStatusChange>) {
  const { detail } = event;
  const parsed = runInputSchema.safeParse(JSON.parse(detail.input ?? 'null'));
  if (!parsed.success) {
    logger.error('execution ended with an input that is not a run', { executionArn: detail.executionArn, status: detail.status });
    return { released: 'not-a-run' };
  }
  const run = parsed.data;
  deps ??= agentFromEnv(logger, loadChat).catch((error: unknown) => {
    deps = undefined;
    throw error;
  });
  const agent = await deps;
  logger.warn('run ended abnormally', { runId: run.runId, threadId: run.threadId, status: detail.status, error: detail.error });
  if (detail.status === 'ABORTED') {
    // Stopped on purpose: the one who stopped it has answered; free the thread for what waits.
    await removeStopCard(agent, run);
    return { released: (await releaseLease(agent.actor, run.threadId, run.runId)).outcome };
  }
  const error = { Error: detail.status === 'TIMED_OUT' ? 'States.Timeout' : (detail.error ?? 'States.Runtime'), Cause: detail.cause ?? '' };
  return { released: (await fail(agent, run, error)).outcome };
}
