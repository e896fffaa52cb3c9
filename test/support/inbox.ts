import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import type { TestStack } from './local-stack.ts';

/** Messages in the inbox, visible or in flight: 0 means nothing was enqueued (or all of it ran). */
export async function inboxDepth(stack: TestStack): Promise<number> {
  const out = await stack.cloud.clients.sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: stack.cloud.names.inboxUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return Number(out.Attributes?.ApproximateNumberOfMessages ?? 0) + Number(out.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
}
