// The event bus: one function for everything that wakes the agent without a person.
//   S3 notifications on events/*.json -> create, update or delete the file's schedule (or fire now)
//   S3 notifications on uploads/{adapter}/{channel}/… -> a new thread with the file attached
//   a schedule firing (EventBridge Scheduler's target input) -> a prompt, unless refused (files.ts)
//   an event on the custom EventBridge bus ({ text, threadId | adapterId + channelId }) -> the same
//   a declared trigger's rule ({ trigger, event }) -> a prompt, at most once per firing
//   a trigger's rate-limit summary (scheduled by the function itself) -> one prompt
import type { EventBridgeEvent, S3Event } from 'aws-lambda';
import { dbClient } from '../../shared/aws/dynamodb.ts';
import { s3Client } from '../../shared/aws/s3.ts';
import { decodeS3EventKey } from '../../shared/aws/s3-event-keys.ts';
import { schedulerClient } from '../../shared/aws/scheduler.ts';
import { sqsClient } from '../../shared/aws/sqs.ts';
import { readEnv, schedulerEnv } from '../../shared/env.ts';
import { chatFromEnv, settingsSecretPatterns } from '../../shared/handler-context/chat.ts';
import { handlerLogger } from '../../shared/handler-context/logger.ts';
import { settingsFromEnv } from '../../shared/handler-context/settings.ts';
import { sqsEnqueue } from '../../shared/admission/enqueue.ts';
import { busDetailSchema, fireEvent, firingSchema, type Firing } from '../../shared/events/fire.ts';
import { onEventFile, onFiring, type EventFileDeps, type EventLimits } from '../../shared/events/files.ts';
import { firingRefusal } from '../../shared/events/firing-gate.ts';
import { lazy } from '../../shared/support/lazy.ts';
import { formatIssues, parseOrThrow } from '../../shared/support/validation.ts';
import type { AttachFiles } from '../../shared/events/fire.ts';
import { scheduleOnce } from '../../shared/events/one-shot.ts';
import {
  onTriggerEvent,
  onTriggerSummary,
  triggerInputSchema,
  triggerSummaryInputSchema,
  type TriggerDeps,
} from '../../shared/triggers/fire.ts';
import { onUpload, UPLOADS_PREFIX } from '../../shared/triggers/uploads.ts';
import { threadProblem } from '../../shared/platforms/platforms.ts';

// The function's timeout is 60 s: a firing claimed longer ago than this belongs to a dead attempt.
const CLAIM_TIMEOUT_MS = 90_000;

const logger = handlerLogger('scheduler');
const init = lazy(() => {
  const env = readEnv(schedulerEnv);
  const settings = settingsFromEnv(env, logger);
  const loadChat = chatFromEnv(logger, env, { secretPatterns: settingsSecretPatterns(settings, logger) });
  const enqueue = sqsEnqueue(sqsClient(), env.INBOX_QUEUE_URL);
  const ledger = { db: dbClient(), tableName: env.TABLE_NAME };
  const platform = { env, store: ledger, logger };
  const fire = async (firing: Firing, attach?: AttachFiles) =>
    fireEvent({ chat: await loadChat(), enqueue, ledger, logger: logger.with({ firingId: firing.firingId }) }, firing, attach);
  const schedules = {
    scheduler: schedulerClient(),
    groupName: env.SCHEDULE_GROUP_NAME,
    roleArn: env.SCHEDULER_ROLE_ARN,
    targetArn: env.SCHEDULER_TARGET_ARN,
    deadLetterArn: env.SCHEDULE_DLQ_ARN,
  };

  const files: EventFileDeps = {
    s3: s3Client(),
    bucket: env.DATA_BUCKET,
    ...schedules,
    fire,
    refusal: (firing) => firingRefusal({ table: ledger, settings: () => settings.get() }, firing),
    table: ledger,
    post: async (threadId, text) => {
      await (await loadChat()).thread(threadId).post(text);
    },
    limits: async () => (await settings.get()) satisfies EventLimits,
    threadProblem: (threadId) => threadProblem(platform, threadId),
    logger,
  };
  const triggers: TriggerDeps = {
    db: ledger.db,
    tableName: env.TABLE_NAME,
    s3: s3Client(),
    bucket: env.DATA_BUCKET,
    fire,
    scheduleSummary: (name, at, input) =>
      scheduleOnce(schedules, name, at, input, `Rate-limit summary of trigger ${input.triggerSummary.trigger.name}`),
    logger,
    now: () => new Date(),
    claimTimeoutMs: CLAIM_TIMEOUT_MS,
  };
  return { files, triggers, uploads: { ...triggers, settings: () => settings.get() } };
});

const isS3Event = (event: unknown): event is S3Event =>
  Array.isArray((event as S3Event)?.Records) && (event as S3Event).Records.every((r) => r.eventSource === 'aws:s3');
const isBusEvent = (event: unknown): event is EventBridgeEvent<string, unknown> =>
  typeof event === 'object' && event !== null && 'detail-type' in event && 'detail' in event;

const isTriggerInput = (event: unknown) => typeof event === 'object' && event !== null && 'trigger' in event && 'event' in event;
const isTriggerSummary = (event: unknown) => typeof event === 'object' && event !== null && 'triggerSummary' in event;

export async function handler(event: unknown) {
  const { files, triggers, uploads } = await init();
  if (isS3Event(event)) {
    const outcomes = [];
    // One at a time, in order: two notifications for one file must not race each other.
    for (const record of event.Records) {
      const key = decodeS3EventKey(record.s3.object.key);
      outcomes.push(key.startsWith(UPLOADS_PREFIX) ? await onUpload(uploads, key) : await onEventFile(files, key));
    }
    return { outcomes };
  }
  if (isTriggerInput(event)) {
    return {
      outcome: await onTriggerEvent(triggers, parseOrThrow(triggerInputSchema, event, 'Not a trigger firing', 'InvalidTriggerInput')),
    };
  }
  if (isTriggerSummary(event)) {
    const input = parseOrThrow(triggerSummaryInputSchema, event, 'Not a trigger summary', 'InvalidTriggerInput');
    return { held: await onTriggerSummary(triggers, input) };
  }
  if (isBusEvent(event)) {
    const detail = busDetailSchema.safeParse(event.detail);
    if (!detail.success) {
      // Retrying cannot fix it; the rule's DLQ is for delivery failures, so say so in the logs.
      logger.error('bus event rejected', { id: event.id, source: event.source, issues: formatIssues(detail.error) });
      return { rejected: true };
    }
    const fired = await onFiring(files, {
      kind: 'bus',
      origin: `${event.source} ${event['detail-type']}`,
      firingId: `bus-${event.id}`,
      ...detail.data,
    });
    return { fired: fired.outcome === 'fired' };
  }
  const what = 'Not an event file notification, a schedule firing or a bus event';
  const fired = await onFiring(files, parseOrThrow(firingSchema, event, what, 'InvalidSchedulerInput'));
  return { fired: fired.outcome === 'fired' };
}
