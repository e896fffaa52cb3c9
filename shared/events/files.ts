// Event files -> EventBridge Scheduler. Called for every S3 notification on events/*.json: the
// file's current content decides (notifications may arrive late or twice; reading the object now
// means the newest version always wins, and one file never has two schedules: its schedule's name
// is derived from its key).
import {
  CreateScheduleCommand,
  DeleteScheduleCommand,
  UpdateScheduleCommand,
  type CreateScheduleCommandInput,
} from '@aws-sdk/client-scheduler';
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { isConflict, isResourceNotFound, isS3NotFound } from '../aws-errors.ts';
import { errorFileKey, isEventFileKey, parseEventFile, scheduleNameFor, type EventFile } from './schema.ts';
import { isIntervalSchedule, isPast, parseInterval, toSchedulerExpression } from './schedule-expressions.ts';
import { eventDepthOf } from './chain.ts';
import type { Firing } from './fire.ts';
import { eventScopeOf } from './scope.ts';
import { MAX_SCHEDULE_INPUT_BYTES, scheduleTarget, type ScheduleTargetDeps } from './one-shot.ts';
import type { JsonLogger } from '../log.ts';
import { utf8Bytes } from '../schemas.ts';

export interface EventFileDeps extends ScheduleTargetDeps {
  s3: S3Client;
  bucket: string;
  fire(firing: Firing): Promise<unknown>;
  /** The deployment's limits on event files, from settings.json. */
  limits(): Promise<EventLimits>;
  /**
   * Why the bot cannot act in a thread a file names (a Teams thread id whose serviceUrl is not its
   * conversation's: shared/teams-service-url.ts); undefined when it can.
   */
  threadProblem(threadId: string): Promise<string | undefined>;
  logger: JsonLogger;
  now?: () => Date;
}

export type FileOutcome = 'scheduled' | 'fired' | 'invalid' | 'removed' | 'ignored';

export interface EventLimits {
  minEventIntervalMinutes: number;
  maxEventChainDepth: number;
  maxEventFilesPerChannel: number;
}

async function readObject(deps: EventFileDeps, key: string): Promise<{ body: string; etag: string; depth: number } | undefined> {
  try {
    const out = await deps.s3.send(new GetObjectCommand({ Bucket: deps.bucket, Key: key }));
    return {
      body: (await out.Body?.transformToString('utf8')) ?? '',
      etag: (out.ETag ?? '').replaceAll('"', ''),
      depth: eventDepthOf(out.Metadata),
    };
  } catch (error) {
    if (isS3NotFound(error)) return undefined;
    throw error;
  }
}

async function deleteSchedule(deps: EventFileDeps, name: string): Promise<void> {
  try {
    await deps.scheduler.send(new DeleteScheduleCommand({ Name: name, GroupName: deps.groupName }));
  } catch (error) {
    if (!isResourceNotFound(error)) throw error;
  }
}

/** What a heartbeat firing tells the agent: read its standing notes, act if needed, else stay quiet. */
export function heartbeatText(text: string): string {
  return [
    "Heartbeat: read HEARTBEAT.md (/workspace/data/HEARTBEAT.md and this channel's HEARTBEAT.md beside its MEMORY.md, whichever exist):",
    'your goals, active projects and recurring tasks. Decide whether anything needs doing now and do it.',
    'If nothing does, answer exactly HEARTBEAT_OK and nothing else (that answer is not posted).',
    text ? `Note from the heartbeat's event file: ${text}` : '',
  ]
    .filter(Boolean)
    .join(' ');
}

function targetOf(event: EventFile) {
  return 'threadId' in event && event.threadId ? { threadId: event.threadId } : { adapterId: event.adapterId, channelId: event.channelId };
}

/** The schedule an event file asks for: created, or updated to this version of the file. */
function scheduleInput(deps: EventFileDeps, key: string, event: EventFile, depth: number, now: Date): CreateScheduleCommandInput {
  const { expression, timezone } = toSchedulerExpression(event);
  // An interval counts from when the file was saved: the first firing is one interval later, not now.
  const interval = event.type === 'periodic' && isIntervalSchedule(event.schedule) ? parseInterval(event.schedule) : undefined;
  // EventBridge Scheduler fills these in per firing: each firing of a periodic schedule is its own prompt.
  const heartbeat = event.type === 'periodic' && event.heartbeat === true;
  const firing = {
    kind: 'scheduled',
    origin: key,
    firingId: '<aws.scheduler.execution-id>',
    text: heartbeat ? heartbeatText(event.text) : event.text,
    ...(heartbeat ? { heartbeat } : {}),
    ...(depth ? { eventDepth: depth } : {}),
    ...targetOf(event),
  };
  return {
    Name: scheduleNameFor(key),
    GroupName: deps.groupName,
    Description: `From ${key}`.slice(0, 512),
    ScheduleExpression: expression,
    ScheduleExpressionTimezone: timezone,
    FlexibleTimeWindow: { Mode: 'OFF' },
    State: 'ENABLED',
    ActionAfterCompletion: event.type === 'one-shot' ? 'DELETE' : 'NONE',
    ...(interval?.ok ? { StartDate: new Date(now.getTime() + interval.interval.minutes * 60_000) } : {}),
    Target: scheduleTarget(deps, firing),
  };
}

/** Why EventBridge Scheduler would refuse the schedule: a firing (the file's text) over its input limit. */
function inputSizeProblem(key: string, input: CreateScheduleCommandInput): string | undefined {
  const bytes = utf8Bytes(input.Target?.Input ?? '');
  if (bytes <= MAX_SCHEDULE_INPUT_BYTES) return undefined;
  return (
    `${key}: its text is too long to schedule: the schedule's input would be ${bytes} bytes, and EventBridge Scheduler ` +
    `takes at most ${MAX_SCHEDULE_INPUT_BYTES} (256 KB); shorten the text, or put the details in a file and have the text name it`
  );
}

async function upsertSchedule(deps: EventFileDeps, input: CreateScheduleCommandInput): Promise<void> {
  try {
    await deps.scheduler.send(new UpdateScheduleCommand(input));
  } catch (error) {
    if (!isResourceNotFound(error)) throw error;
    try {
      await deps.scheduler.send(new CreateScheduleCommand(input));
    } catch (createError) {
      // Another notification for the same file created it meanwhile: make it this version.
      if (!isConflict(createError)) throw createError;
      await deps.scheduler.send(new UpdateScheduleCommand(input));
    }
  }
}

async function writeErrorFile(deps: EventFileDeps, key: string, error: string, now: Date): Promise<void> {
  const body = JSON.stringify(
    { file: key, error, at: now.toISOString(), help: 'Fix the file and save it again; nothing was scheduled from this version.' },
    null,
    2,
  );
  await deps.s3.send(new PutObjectCommand({ Bucket: deps.bucket, Key: errorFileKey(key), Body: body, ContentType: 'application/json' }));
}

async function removeErrorFile(deps: EventFileDeps, key: string): Promise<void> {
  await deps.s3.send(new DeleteObjectCommand({ Bucket: deps.bucket, Key: errorFileKey(key) }));
}

/** Why a valid file's thread cannot be acted in: whoever wrote the thread id, the bot answers only where it may. */
async function targetProblem(deps: EventFileDeps, key: string, event: EventFile): Promise<string | undefined> {
  const threadId = 'threadId' in event ? event.threadId : undefined;
  const problem = threadId ? await deps.threadProblem(threadId) : undefined;
  return problem && `${key}: "threadId" cannot be answered: ${problem}`;
}

/** Why a valid file is still refused: a chain of runs too deep, or too many files in its channel. */
async function limitProblem(deps: EventFileDeps, key: string, depth: number, limits: EventLimits): Promise<string | undefined> {
  if (depth > limits.maxEventChainDepth) {
    return (
      `${key}: written by a run that event files started ${depth - 1} deep; runs may start runs through event files ` +
      `at most ${limits.maxEventChainDepth} deep (maxEventChainDepth in settings.json), so a person has to ask for more`
    );
  }
  const scope = eventScopeOf(key);
  if (scope.kind !== 'channel') return undefined;
  let count = 0;
  let token: string | undefined;
  do {
    const out = await deps.s3.send(new ListObjectsV2Command({ Bucket: deps.bucket, Prefix: scope.prefix, ContinuationToken: token }));
    count += (out.Contents ?? []).filter((o) => o.Key && isEventFileKey(o.Key)).length;
    token = out.IsTruncated && count <= limits.maxEventFilesPerChannel ? out.NextContinuationToken : undefined;
  } while (token);
  if (count <= limits.maxEventFilesPerChannel) return undefined;
  return (
    `${key}: ${scope.prefix} holds more than ${limits.maxEventFilesPerChannel} event files ` +
    `(maxEventFilesPerChannel in settings.json); delete the ones no longer needed`
  );
}

export async function onEventFile(deps: EventFileDeps, key: string): Promise<FileOutcome> {
  if (!isEventFileKey(key)) return 'ignored';
  const now = (deps.now ?? (() => new Date()))();
  const name = scheduleNameFor(key);
  const object = await readObject(deps, key);
  if (!object) {
    await deleteSchedule(deps, name);
    await removeErrorFile(deps, key);
    deps.logger.info('event file removed: schedule deleted', { key, schedule: name });
    return 'removed';
  }
  const limits = await deps.limits();
  const parsed = parseEventFile(key, object.body, { minIntervalMinutes: limits.minEventIntervalMinutes });
  if (!parsed.ok) return refuse(deps, key, parsed.error, now);
  const refusal = (await targetProblem(deps, key, parsed.event)) ?? (await limitProblem(deps, key, object.depth, limits));
  if (refusal) return refuse(deps, key, refusal, now);
  const event = parsed.event;
  const firesNow = event.type === 'immediate' || (event.type === 'one-shot' && isPast(event, now));
  const input = firesNow ? undefined : scheduleInput(deps, key, event, object.depth, now);
  const tooLong = input && inputSizeProblem(key, input);
  if (tooLong) return refuse(deps, key, tooLong, now);
  await removeErrorFile(deps, key);
  if (!input) {
    await deleteSchedule(deps, name);
    const note =
      event.type === 'one-shot'
        ? `this was scheduled for ${event.schedule} ${event.timezone ?? 'UTC'}, which had already passed when the event file was saved`
        : undefined;
    await deps.fire({
      kind: 'immediate',
      origin: key,
      firingId: `${name}-${object.etag}`,
      text: event.text,
      note,
      ...(object.depth ? { eventDepth: object.depth } : {}),
      ...targetOf(event),
    } as Firing);
    deps.logger.info('event file fired now', { key, type: event.type });
    return 'fired';
  }
  await upsertSchedule(deps, input);
  deps.logger.info('event file scheduled', { key, schedule: name, type: event.type });
  return 'scheduled';
}

/** A file that cannot be scheduled: its previous version's schedule goes, and an error file says why. */
async function refuse(deps: EventFileDeps, key: string, reason: string, now: Date): Promise<FileOutcome> {
  await deleteSchedule(deps, scheduleNameFor(key));
  await writeErrorFile(deps, key, reason, now);
  deps.logger.error('invalid event file', { key, error: reason });
  return 'invalid';
}
