// "The system is quiet": every prompt sent so far has become a run, every run has ended, and the
// inbox holds nothing (visible or in flight). Sections wait for this so that the runs one section
// triggered do not slow the measurements of the next.
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { TestStack } from '../test/support/local-stack.ts';

// The bench's own SQS client, signing as the operator: the call counts (bench/aws-calls.ts) leave its calls out.
const watchers = new Map<TestStack, SQSClient>();

function watcher(stack: TestStack): SQSClient {
  let sqs = watchers.get(stack);
  if (!sqs) {
    const { env } = stack.cloud;
    sqs = new SQSClient({
      endpoint: env.AWS_ENDPOINT_URL_SQS,
      region: env.AWS_REGION,
      credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID ?? 'local', secretAccessKey: env.AWS_SECRET_ACCESS_KEY ?? 'local' },
      useQueueUrlAsEndpoint: false,
    });
    watchers.set(stack, sqs);
  }
  return sqs;
}

export function stopWatching(stack: TestStack): void {
  watchers.get(stack)?.destroy();
  watchers.delete(stack);
}

async function inboxDepth(stack: TestStack): Promise<number> {
  const out = await watcher(stack).send(
    new GetQueueAttributesCommand({
      QueueUrl: stack.cloud.names.inboxUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  const attributes = out.Attributes ?? {};
  return Number(attributes.ApproximateNumberOfMessages ?? 0) + Number(attributes.ApproximateNumberOfMessagesNotVisible ?? 0);
}

export function runsSummary(stack: TestStack) {
  const executions = [...stack.cloud.stepFunctions.executions.values()];
  return {
    total: executions.length,
    running: executions.filter((e) => e.status === 'RUNNING').length,
    failed: executions.filter((e) => e.status !== 'RUNNING' && e.status !== 'SUCCEEDED').length,
  };
}

/** Resolves with how long it took once `expectedRuns` runs exist and the system is idle twice in a row. */
export async function waitForQuiet(stack: TestStack, expectedRuns: number, timeoutMs = 120_000): Promise<number> {
  const started = performance.now();
  let idleChecks = 0;
  while (performance.now() - started < timeoutMs) {
    const runs = runsSummary(stack);
    const idle = runs.total >= expectedRuns && runs.running === 0 && (await inboxDepth(stack)) === 0;
    idleChecks = idle ? idleChecks + 1 : 0;
    if (idleChecks >= 2) return performance.now() - started;
    await new Promise((r) => setTimeout(r, 100));
  }
  const runs = runsSummary(stack);
  throw new Error(`The system did not go quiet within ${timeoutMs} ms (runs: ${runs.total}/${expectedRuns}, running ${runs.running})`);
}
