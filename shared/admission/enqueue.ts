// A prompt into the inbox: its thread is its FIFO message group (one thread's prompts in order), and
// its message id the deduplication id (a redelivered event is one prompt). Its own module so that
// the scheduler, which enqueues but answers no chat command, does not bundle the webhook's wiring.
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { dedupIdFor } from '../ids.ts';
import type { Prompt } from '../contracts.ts';

export type Enqueue = (prompt: Prompt) => Promise<void>;

export function sqsEnqueue(sqs: SQSClient, queueUrl: string): Enqueue {
  return async (prompt) => {
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: JSON.stringify(prompt),
        MessageGroupId: prompt.threadId,
        MessageDeduplicationId: dedupIdFor(prompt.threadId, prompt.messageId),
      }),
    );
  };
}
