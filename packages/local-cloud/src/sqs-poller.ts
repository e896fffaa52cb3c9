// The Lambda event source mapping for the inbox, locally: long-poll the queue, hand batches to the
// real consumer, delete what succeeded, and leave reported batch item failures to reappear after
// the visibility timeout (then, past maxReceiveCount, the queue's redrive moves them to the DLQ).
import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';

export interface SqsPoller {
  stop(): Promise<void>;
  /** Batches handed to the consumer so far. */
  batches: number;
}

export function startSqsPoller(options: {
  sqs: SQSClient;
  queueUrl: string;
  queueArn: string;
  handler: (event: SQSEvent) => Promise<SQSBatchResponse | void>;
  batchSize?: number;
  /** Lambda runs several pollers; a few concurrent loops keep different threads in parallel. */
  concurrency?: number;
  reportBatchItemFailures?: boolean;
  onError?: (error: unknown) => void;
}): SqsPoller {
  let running = true;
  const state = { batches: 0 };
  const loop = async () => {
    while (running) {
      try {
        const out = await options.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: options.queueUrl,
            MaxNumberOfMessages: options.batchSize ?? 10,
            WaitTimeSeconds: 1,
            MessageSystemAttributeNames: ['All'],
            MessageAttributeNames: ['All'],
          }),
        );
        const messages = out.Messages ?? [];
        if (messages.length === 0 || !running) continue;
        state.batches++;
        const records: SQSRecord[] = messages.map((m) => ({
          messageId: m.MessageId ?? '',
          receiptHandle: m.ReceiptHandle ?? '',
          body: m.Body ?? '',
          attributes: m.Attributes as unknown as SQSRecord['attributes'],
          messageAttributes: {},
          md5OfBody: m.MD5OfBody ?? '',
          eventSource: 'aws:sqs',
          eventSourceARN: options.queueArn,
          awsRegion: 'us-east-1',
        }));
        let failed = new Set<string>();
        try {
          const result = await options.handler({ Records: records });
          if (options.reportBatchItemFailures !== false && result) {
            failed = new Set(result.batchItemFailures.map((f) => f.itemIdentifier));
          }
        } catch (error) {
          options.onError?.(error);
          failed = new Set(records.map((r) => r.messageId)); // a thrown handler fails the whole batch
        }
        const done = messages.filter((m) => !failed.has(m.MessageId ?? ''));
        if (done.length) {
          await options.sqs.send(
            new DeleteMessageBatchCommand({
              QueueUrl: options.queueUrl,
              Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle ?? '' })),
            }),
          );
        }
      } catch (error) {
        if (!running) return;
        options.onError?.(error);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  };
  const loops = Array.from({ length: options.concurrency ?? 2 }, loop);
  return {
    get batches() {
      return state.batches;
    },
    async stop() {
      running = false;
      await Promise.allSettled(loops);
    },
  };
}
