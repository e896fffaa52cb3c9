// Event files -> EventBridge Scheduler. Called for every S3 notification on events/*.json: the
// file's current content decides (notifications may arrive late or twice; reading the object now
// means the newest version always wins, and one file never has two schedules: its schedule's name
// is derived from its key). And their firings -> prompts, unless something would refuse them.
import {
  CreateScheduleCommand,
  DeleteScheduleCommand,
  UpdateScheduleCommand,
  type CreateScheduleCommandInput,
} from '@aws-sdk/client-scheduler';
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { bumpWorkspaceVersion } from '../sandbox/workspace-version.ts';
import { isConflict, isResourceNotFound, isS3NotFound } from '../aws/errors.ts';
import { errorFileBody, errorFileKey, isEventFileKey } from './keys.ts';
import { parseEventFile, scheduleNameFor, type EventFile, type PeriodicEvent } from './schema.ts';
import { isIntervalSchedule, isPast, parseInterval, toSchedulerExpression } from './schedule-expressions.ts';
import { eventOriginOf, type EventOrigin } from './chain.ts';
import {
  admitPeriodic,
  dropPeriodic,
  endExpiry,
  expiredText,
  expiryNotice,
  expiryOf,
  linkThread,
  startExpiry,
  type ExpiryDeps,
} from './expiry.ts';
import type { Firing } from './fire.ts';
import { EVENTS_PREFIX, eventScopeOf } from './scope.ts';
import { MAX_SCHEDULE_INPUT_BYTES, scheduleTarget, type ScheduleTargetDeps } from './one-shot.ts';
import { randomUUID } from 'node:crypto';
import { claimRecord, type LedgerDeps } from '../run/ledger.ts';
import { EVENT_RECORD, EVENTS_LEDGER } from '../table.ts';
import type { JsonLogger } from '../observability/log.ts';
import { utf8Bytes, type Prompt } from '../contracts.ts';

export interface EventFileDeps extends ScheduleTargetDeps {
  s3: S3Client;
  bucket: string;
  fire(firing: Firing): Promise<Pick<Prompt, 'threadId'>>;
  /** Why a firing would be refused before it starts a thread (shared/events/firing-gate.ts). */
  refusal(firing: Firing): Promise<string | undefined>;
  /** The state table: when the agent's periodic files run out, and notices already posted. */
  table: ExpiryDeps & LedgerDeps;
  /** Posts in a thread (what an agent's periodic file tells the thread that wrote it). */
  post(threadId: string, text: string): Promise<void>;
  /** The deployment's limits on event files, from settings.json. */
  limits(): Promise<EventLimits>;
  /**
   * Why the bot cannot act in a thread a file names (a Teams thread id whose serviceUrl is not its
   * conversation's: shared/platforms/teams/service-url.ts); undefined when it can.
   */
  threadProblem(threadId: string): Promise<string | undefined>;
  logger: JsonLogger;
  now?: () => Date;
}

export type FileOutcome = 'scheduled' | 'fired' | 'refused' | 'invalid' | 'removed' | 'ignored';
export type FiringOutcome = { outcome: 'fired' } | { outcome: 'refused' | 'expired'; reason: string };

export interface EventLimits {
  minEventIntervalMinutes: number;
  maxEventChainDepth: number;
  maxEventFilesPerChannel: number;
  maxAgentPeriodicEventsPerChannel: number;
  agentPeriodicEventDays: number;
}

interface EventObject {
  body: string;
  etag: string;
  origin: EventOrigin;
}

async function readObject(deps: EventFileDeps, key: string): Promise<EventObject | undefined> {
  try {
    const out = await deps.s3.send(new GetObjectCommand({ Bucket: deps.bucket, Key: key }));
    return {
      body: (await out.Body?.transformToString('utf8')) ?? '',
      etag: (out.ETag ?? '').replaceAll('"', ''),
      origin: eventOriginOf(out.Metadata),
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

/** What every firing of the file carries besides its event: where the file came from. */
const originFields = (origin: EventOrigin) => ({
  ...(origin.depth ? { eventDepth: origin.depth } : {}),
  ...(origin.causedBy ? { causedBy: origin.causedBy } : {}),
});

/** The schedule an event file asks for: created, or updated to this version of the file. */
function scheduleInput(deps: EventFileDeps, key: string, event: EventFile, origin: EventOrigin, now: Date): CreateScheduleCommandInput {
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
    ...originFields(origin),
    ...(isAgentPeriodic(event, origin) ? { expiring: true } : {}),
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
  const body = errorFileBody(key, error, now);
  await deps.s3.send(new PutObjectCommand({ Bucket: deps.bucket, Key: errorFileKey(key), Body: body, ContentType: 'application/json' }));
  await countChannelWrite(deps, key);
}

/**
 * Removes the file's error file. Whether there was one is not asked (a HeadObject of a missing key
 * is refused without s3:ListBucket), so the channel's sandboxes list S3 again at their next call.
 */
async function removeErrorFile(deps: EventFileDeps, key: string): Promise<void> {
  await deps.s3.send(new DeleteObjectCommand({ Bucket: deps.bucket, Key: errorFileKey(key) }));
  await countChannelWrite(deps, key);
}

/** A channel's event folder changed: its threads' sandboxes list S3 again (shared/sandbox/workspace-version.ts). */
async function countChannelWrite(deps: EventFileDeps, key: string): Promise<void> {
  const scope = eventScopeOf(key);
  if (scope.kind !== 'channel') return;
  await bumpWorkspaceVersion(deps.table, scope.prefix.slice(EVENTS_PREFIX.length, -1));
}

/** A periodic file the agent wrote (from a sandbox): capped per channel, and it runs out. */
const isAgentPeriodic = (event: EventFile, origin: EventOrigin): event is PeriodicEvent => event.type === 'periodic' && origin.depth > 0;

/** How many event files a channel's folder holds: at most `max` + 1, enough to know it holds more. */
async function countChannelFiles(deps: EventFileDeps, prefix: string, max: number): Promise<number> {
  let count = 0;
  let token: string | undefined;
  do {
    const out = await deps.s3.send(new ListObjectsV2Command({ Bucket: deps.bucket, Prefix: prefix, ContinuationToken: token }));
    count += (out.Contents ?? []).filter((o) => o.Key && isEventFileKey(o.Key)).length;
    token = out.IsTruncated && count <= max ? out.NextContinuationToken : undefined;
  } while (token);
  return count;
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
  if ((await countChannelFiles(deps, scope.prefix, limits.maxEventFilesPerChannel)) <= limits.maxEventFilesPerChannel) return undefined;
  return (
    `${key}: ${scope.prefix} holds more than ${limits.maxEventFilesPerChannel} event files ` +
    `(maxEventFilesPerChannel in settings.json); delete the ones no longer needed`
  );
}

/** The folder whose agent's periodic files are counted together: the channel's. */
const folderOf = (key: string) => {
  const scope = eventScopeOf(key);
  return scope.kind === 'channel' ? scope.prefix : EVENTS_PREFIX;
};

/**
 * Why an agent's periodic file, whose expiry record says `runsUntil`, may not be scheduled: it ran
 * out, or the agent keeps as many in force in its channel as it may.
 */
async function agentPeriodicProblem(
  deps: EventFileDeps,
  key: string,
  runsUntil: number,
  limits: EventLimits,
  nowMs: number,
): Promise<string | undefined> {
  const folder = folderOf(key);
  if (runsUntil <= nowMs) {
    await dropPeriodic(deps.table, folder, key);
    return expiredText(key, runsUntil, limits.agentPeriodicEventDays);
  }
  const kept = await admitPeriodic(deps.table, folder, key, limits.maxAgentPeriodicEventsPerChannel, nowMs);
  if (kept === undefined) return undefined;
  // Not in force: a later version starts with days of its own.
  await endExpiry(deps.table, key);
  return (
    `${key}: the agent already keeps ${kept} periodic event files in ${folder}, the most it may ` +
    `(maxAgentPeriodicEventsPerChannel in settings.json); delete one that is no longer needed, or ask an operator`
  );
}

/** Its days start again when a person's own run saved this version (depth 1 and a person recorded). */
const savedByPerson = (origin: EventOrigin) => origin.depth === 1 && origin.causedBy !== undefined;

/** Once per version of an agent's periodic file: the thread that wrote it hears how long it runs. */
async function tellWriter(deps: EventFileDeps, key: string, event: PeriodicEvent, object: EventObject, runsUntil: number, days: number) {
  const threadId = object.origin.writtenIn;
  if (!threadId) return;
  // A notification delivered twice: only the first claim posts.
  const claim = randomUUID();
  if ((await claimRecord(deps.table, EVENTS_LEDGER, EVENT_RECORD.periodicNotice(key, object.etag), claim)) !== claim) return;
  try {
    await deps.post(threadId, expiryNotice({ key, schedule: event.schedule, timezone: event.timezone }, runsUntil, days));
  } catch (error) {
    // The schedule stands either way; the thread only misses the notice.
    deps.logger.warn('could not tell the thread about its periodic event file', { key, threadId, error });
  }
}

/**
 * A firing of an event file (or a bus event): an agent's periodic file that ran out stops here (its
 * schedule deleted, an error file beside it); one that something would refuse starts no thread;
 * the rest become prompts, and the threads an agent's periodic file runs in become its threads.
 */
export async function onFiring(deps: EventFileDeps, firing: Firing): Promise<FiringOutcome> {
  const now = (deps.now ?? (() => new Date()))();
  const log = deps.logger.with({ origin: firing.origin, firingId: firing.firingId });
  let runsUntil: number | undefined;
  if (firing.expiring) {
    const { agentPeriodicEventDays: days } = await deps.limits();
    // A schedule older than its expiry record (saved before files ran out) gets its days from now.
    runsUntil =
      (await expiryOf(deps.table, firing.origin))?.runsUntil ?? (await startExpiry(deps.table, firing.origin, false, days, now.getTime()));
    if (runsUntil <= now.getTime()) {
      const reason = expiredText(firing.origin, runsUntil, days);
      await deleteSchedule(deps, scheduleNameFor(firing.origin));
      await dropPeriodic(deps.table, folderOf(firing.origin), firing.origin);
      await writeErrorFile(deps, firing.origin, reason, now);
      log.warn("event firing refused: the agent's periodic file ran out", { runsUntil: new Date(runsUntil).toISOString() });
      return { outcome: 'expired', reason };
    }
  }
  const reason = await deps.refusal(firing);
  if (reason) {
    log.warn('event firing refused', { reason });
    return { outcome: 'refused', reason };
  }
  const prompt = await deps.fire(firing);
  if (runsUntil !== undefined) await linkThread(deps.table, prompt.threadId, firing.origin, runsUntil);
  return { outcome: 'fired' };
}

export async function onEventFile(deps: EventFileDeps, key: string): Promise<FileOutcome> {
  if (!isEventFileKey(key)) return 'ignored';
  const now = (deps.now ?? (() => new Date()))();
  const name = scheduleNameFor(key);
  const object = await readObject(deps, key);
  if (!object) {
    await deleteSchedule(deps, name);
    await removeErrorFile(deps, key);
    await dropPeriodic(deps.table, folderOf(key), key);
    await endExpiry(deps.table, key);
    deps.logger.info('event file removed: schedule deleted', { key, schedule: name });
    return 'removed';
  }
  const limits = await deps.limits();
  const parsed = parseEventFile(key, object.body, { minIntervalMinutes: limits.minEventIntervalMinutes });
  if (!parsed.ok) return refuse(deps, key, parsed.error, now);
  const refusal = (await targetProblem(deps, key, parsed.event)) ?? (await limitProblem(deps, key, object.origin.depth, limits));
  if (refusal) return refuse(deps, key, refusal, now);
  const event = parsed.event;
  const firesNow = event.type === 'immediate' || (event.type === 'one-shot' && isPast(event, now));
  const input = firesNow ? undefined : scheduleInput(deps, key, event, object.origin, now);
  const tooLong = input && inputSizeProblem(key, input);
  if (tooLong) return refuse(deps, key, tooLong, now);
  await removeErrorFile(deps, key);
  if (!isAgentPeriodic(event, object.origin)) {
    // An operator's version, or not periodic: it does not run out, nor count among the agent's.
    await dropPeriodic(deps.table, folderOf(key), key);
    await endExpiry(deps.table, key);
  }
  if (!input) {
    await deleteSchedule(deps, name);
    const note =
      event.type === 'one-shot'
        ? `this was scheduled for ${event.schedule} ${event.timezone ?? 'UTC'}, which had already passed when the event file was saved`
        : undefined;
    const firing = {
      kind: 'immediate',
      origin: key,
      firingId: `${name}-${object.etag}`,
      text: event.text,
      note,
      ...originFields(object.origin),
      ...targetOf(event),
    } as Firing;
    const fired = await onFiring(deps, firing);
    if (fired.outcome !== 'fired') {
      // Nothing ran from this version: said beside it, as for a file that is not valid.
      await writeErrorFile(deps, key, `${key}: not run: ${fired.reason}; save the file again to try again`, now);
      return 'refused';
    }
    deps.logger.info('event file fired now', { key, type: event.type });
    return 'fired';
  }
  const days = limits.agentPeriodicEventDays;
  let runsUntil: number | undefined;
  if (isAgentPeriodic(event, object.origin)) {
    runsUntil = await startExpiry(deps.table, key, savedByPerson(object.origin), days, now.getTime());
    const problem = await agentPeriodicProblem(deps, key, runsUntil, limits, now.getTime());
    if (problem) return refuse(deps, key, problem, now);
  }
  await upsertSchedule(deps, input);
  if (runsUntil !== undefined && isAgentPeriodic(event, object.origin) && object.origin.writtenIn) {
    await linkThread(deps.table, object.origin.writtenIn, key, runsUntil);
    await tellWriter(deps, key, event, object, runsUntil, days);
  }
  deps.logger.info('event file scheduled', { key, schedule: name, type: event.type });
  return 'scheduled';
}

/** A file that cannot be scheduled: its previous version's schedule goes, and an error file says why. */
async function refuse(deps: EventFileDeps, key: string, reason: string, now: Date): Promise<FileOutcome> {
  await deleteSchedule(deps, scheduleNameFor(key));
  await dropPeriodic(deps.table, folderOf(key), key);
  await writeErrorFile(deps, key, reason, now);
  deps.logger.error('invalid event file', { key, error: reason });
  return 'invalid';
}
