// The inbox consumer: each prompt passes admission (shared/admission/admit.ts) and joins its
// thread's actor, or is answered or refused. A batch's threads are admitted at the same time, each
// thread's prompts in order; a failure fails the rest of that thread's records in the batch too, so a
// retry never reorders a thread's prompts, while other threads' prompts go on (shared/admission/batch.ts).
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { admitBatch } from '../../shared/admission/batch.ts';
import { admissionDeps } from '../../shared/admission/deps.ts';
import { s3Client } from '../../shared/aws/s3.ts';
import { dispatchEnv, readEnv } from '../../shared/env.ts';
import { settingsSecretPatterns, stepChatFromEnv } from '../../shared/handler-context/chat.ts';
import { controlFromEnv } from '../../shared/handler-context/control.ts';
import { handlerLogger } from '../../shared/handler-context/logger.ts';
import { handlerMetrics, publishingMetrics } from '../../shared/handler-context/metrics.ts';
import { settingsFromEnv } from '../../shared/handler-context/settings.ts';
import { lazy } from '../../shared/support/lazy.ts';

const logger = handlerLogger('dispatch');
const metrics = handlerMetrics();
const init = lazy(() => {
  const env = readEnv(dispatchEnv);
  const store = { s3: s3Client(), bucket: env.DATA_BUCKET };
  const settings = settingsFromEnv(env, logger);
  const loadChat = stepChatFromEnv(logger, env, { secretPatterns: settingsSecretPatterns(settings, logger) });
  return admissionDeps({
    control: controlFromEnv(logger, env, metrics),
    store,
    loadChat,
    settings: () => settings.get(),
    settingsProblems: () => settings.problems(),
    logger,
    metrics,
  });
});

export async function handler(event: SQSEvent): Promise<SQSBatchResponse> {
  const deps = await init();
  return publishingMetrics(metrics, () => admitBatch(event, deps));
}
