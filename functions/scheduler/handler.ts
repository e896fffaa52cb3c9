// The event bus: one function for its three inputs.
//   S3 notifications on events/*.json -> create, update or delete the file's schedule (or fire now)
//   a schedule firing (EventBridge Scheduler's target input) -> a prompt
//   an event on the custom EventBridge bus ({ text, threadId | adapterId + channelId }) -> a prompt
import type { EventBridgeEvent, S3Event } from 'aws-lambda';
import { clients, requireEnv } from '../../shared/aws.ts';
import { chatFromEnv, handlerLogger } from '../../shared/handler-context.ts';
import { sqsEnqueue } from '../../shared/ingress.ts';
import { busDetailSchema, fireEvent, firingSchema, type FireDeps, type Firing } from '../../shared/events/fire.ts';
import { onEventFile, type EventFileDeps } from '../../shared/events/files.ts';

const logger = handlerLogger('scheduler');
const loadChat = chatFromEnv(logger);

let fireDeps: Promise<FireDeps> | undefined;
function fire(firing: Firing) {
  fireDeps ??= loadChat().then((chat) => ({
    chat,
    enqueue: sqsEnqueue(clients.sqs(), requireEnv('INBOX_QUEUE_URL')),
    ledger: { db: clients.db(), tableName: requireEnv('TABLE_NAME') },
    logger,
  }));
  return fireDeps.then((deps) => fireEvent(deps, firing));
}

function fileDeps(): EventFileDeps {
  return {
    s3: clients.s3(),
    bucket: requireEnv('DATA_BUCKET'),
    scheduler: clients.scheduler(),
    groupName: requireEnv('SCHEDULE_GROUP_NAME'),
    roleArn: requireEnv('SCHEDULER_ROLE_ARN'),
    targetArn: requireEnv('SCHEDULER_TARGET_ARN'),
    deadLetterArn: requireEnv('SCHEDULE_DLQ_ARN'),
    fire,
    logger,
  };
}

const isS3Event = (event: unknown): event is S3Event =>
  Array.isArray((event as S3Event)?.Records) && (event as S3Event).Records.every((r) => r.eventSource === 'aws:s3');
const isBusEvent = (event: unknown): event is EventBridgeEvent<string, unknown> =>
  typeof event === 'object' && event !== null && 'detail-type' in event && 'detail' in event;

/** S3 notification keys are URL-encoded, with spaces as '+'. */
const objectKey = (raw: string) => decodeURIComponent(raw.replace(/\+/g, ' '));

export async function handler(event: unknown) {
  if (isS3Event(event)) {
    const outcomes = [];
    // One at a time, in order: two notifications for one file must not race each other.
    for (const record of event.Records) outcomes.push(await onEventFile(fileDeps(), objectKey(record.s3.object.key)));
    return { outcomes };
  }
  if (isBusEvent(event)) {
    const detail = busDetailSchema.safeParse(event.detail);
    if (!detail.success) {
      // Retrying cannot fix it; the rule's DLQ is for delivery failures, so say so in the logs.
      logger.error('bus event rejected', {
        id: event.id,
        source: event.source,
        issues: detail.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`),
      });
      return { rejected: true };
    }
    await fire({ kind: 'bus', origin: `${event.source} ${event['detail-type']}`, firingId: `bus-${event.id}`, ...detail.data });
    return { fired: true };
  }
  const firing = firingSchema.safeParse(event);
  if (!firing.success) {
    throw Object.assign(
      new Error(
        `Not an event file notification, a schedule firing or a bus event: ${firing.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
      ),
      { name: 'InvalidSchedulerInput' },
    );
  }
  await fire(firing.data);
  return { fired: true };
}
