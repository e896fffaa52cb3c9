// S3's EventBridge notifications for the local cloud: a bucket with them switched on sends an
// "Object Created" event to the account's default bus for every new object, its key URL-encoded as
// in S3's other notifications. Declared S3 triggers
// listen for those events from buckets outside the stack; locally those buckets are created here
// (empty, as a new bucket would be) and watched by the same poller as the stack's own notifications.
import { CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import type { LocalEventBridge } from '../eventbridge.ts';
import { startS3Notifications, type S3Notifications } from '../s3-notifications.ts';

export interface ObjectCreatedEventsOptions {
  s3: S3Client;
  buckets: string[];
  eventBridge: Pick<LocalEventBridge, 'sendServiceEvent'>;
  onError(error: unknown): void;
}

/** Several buckets' pollers as one. */
function together(parts: S3Notifications[]): S3Notifications {
  return {
    async poll() {
      await Promise.all(parts.map((p) => p.poll()));
    },
    async stop() {
      await Promise.allSettled(parts.map((p) => p.stop()));
    },
  };
}

export async function startObjectCreatedEvents(options: ObjectCreatedEventsOptions): Promise<S3Notifications> {
  const parts: S3Notifications[] = [];
  for (const bucket of options.buckets) {
    await options.s3.send(new CreateBucketCommand({ Bucket: bucket })).catch((error: unknown) => {
      if ((error as { name?: string }).name !== 'BucketAlreadyOwnedByYou') throw error;
    });
    parts.push(
      await startS3Notifications({
        s3: options.s3,
        bucket,
        onError: options.onError,
        configurations: [
          {
            events: ['s3:ObjectCreated:*'],
            async deliver(event) {
              for (const record of event.Records) {
                // The key stays URL-encoded, as in the notification: S3 encodes it in both.
                const key = record.s3.object.key;
                options.eventBridge.sendServiceEvent({
                  source: 'aws.s3',
                  'detail-type': 'Object Created',
                  resources: [`arn:aws:s3:::${bucket}`],
                  detail: {
                    version: '0',
                    bucket: { name: bucket },
                    object: { key, size: record.s3.object.size, etag: record.s3.object.eTag, sequencer: record.s3.object.sequencer },
                    'request-id': record.responseElements['x-amz-request-id'],
                    requester: 'local',
                    reason: 'PutObject',
                  },
                });
              }
            },
          },
        ],
      }),
    );
  }
  return together(parts);
}
