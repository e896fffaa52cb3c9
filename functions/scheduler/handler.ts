// The event bus: one function for its three inputs.
//   S3 notifications on events/*.json -> create, update or delete the file's schedule (or fire now)
//   a schedule firing (EventBridge Scheduler's target input) -> a prompt
//   an event on the custom EventBridge bus ({ text, threadId | adapterId + channelId }) -> a prompt
import type { EventBridgeEvent, S3Event } from 'aws-lambda';
import { dbClient } from '../../shared/aws/dynamodb.ts';
import { s3Client } from '../../shared/aws/s3.ts';
import { schedulerClient } from '../../shared/aws/scheduler.ts';
import { sqsClient } from '../../shared/aws/sqs.ts';
import { readEnv, schedulerEnv } from '../../shared/env.ts';
import { chatFromEnv } from '../../shared/handler-context/chat.ts';
import { handlerLogger } from '../../shared/handler-context/logger.ts';
import { sqsEnqueue } from '../../shared/ingress.ts';
import { busDetailSchema, fireEvent, firingSchema, type Firing } from '../../shared/events/fire.ts';
import { onEventFile, type EventFileDeps, type EventLimits } from '../../shared/events/files.ts';
import { lazy } from '../../shared/lazy.ts';
import { loadSettings } from '../../shared/store.ts';
import { formatIssues, parseOrThrow } from '../../shared/validation.ts';

const logger = handlerLogger('scheduler');
const init = lazy(() => {
  const env = readEnv(schedulerEnv);
  const loadChat = chatFromEnv(logger, env);
  const enqueue = sqsEnqueue(sqsClient(), env.INBOX_QUEUE_URL);
  const ledger = { db: dbClient(), tableName: env.TABLE_NAME };
  const fire = async (firing: Firing) =>
    fireEvent({ chat: await loadChat(), enqueue, ledger, logger: logger.with({ firingId: firing.firingId }) }, firing);
  const files: EventFileDeps = {
    s3: s3Client(),
    bucket: env.DATA_BUCKET,
    scheduler: schedulerClient(),
    groupName: env.SCHEDULE_GROUP_NAME,
    roleArn: env.SCHEDULER_ROLE_ARN,
    targetArn: env.SCHEDULER_TARGET_ARN,
    deadLetterArn: env.SCHEDULE_DLQ_ARN,
    fire,
    async limits() {
      const { settings, problems } = await loadSettings({ s3: s3Client(), bucket: env.DATA_BUCKET });
      for (const problem of problems) logger.warn('settings.json ignored', { problem });
      return settings satisfies EventLimits;
    },
    logger,
  };
  return { fire, files };
});

const isS3Event = (event: unknown): event is S3Event =>
  Array.isArray((event as S3Event)?.Records) && (event as S3Event).Records.every((r) => r.eventSource === 'aws:s3');
const isBusEvent = (event: unknown): event is EventBridgeEvent<string, unknown> =>
  typeof event === 'object' && event !== null && 'detail-type' in event && 'detail' in event;

/** S3 notification keys are URL-encoded, with spaces as '+'. */
const objectKey = (raw: string) => decodeURIComponent(raw.replace(/\+/g, ' '));

export async function handler(event: unknown) {
  const { fire, files } = await init();
  if (isS3Event(event)) {
    const outcomes = [];
    // One at a time, in order: two notifications for one file must not race each other.
    for (const record of event.Records) outcomes.push(await onEventFile(files, objectKey(record.s3.object.key)));
    return { outcomes };
  }
  if (isBusEvent(event)) {
    const detail = busDetailSchema.safeParse(event.detail);
    if (!detail.success) {
      // Retrying cannot fix it; the rule's DLQ is for delivery failures, so say so in the logs.
      logger.error('bus event rejected', { id: event.id, source: event.source, issues: formatIssues(detail.error) });
      return { rejected: true };
    }
    await fire({ kind: 'bus', origin: `${event.source} ${event['detail-type']}`, firingId: `bus-${event.id}`, ...detail.data });
    return { fired: true };
  }
  const what = 'Not an event file notification, a schedule firing or a bus event';
  await fire(parseOrThrow(firingSchema, event, what, 'InvalidSchedulerInput'));
  return { fired: true };
}
