// Local stand-in for Amazon EventBridge Scheduler. It serves the part of the Scheduler API that
// production code calls through @aws-sdk/client-scheduler (restJson1: the operation is the HTTP
// method and path, errors carry an x-amzn-ErrorType header and a {"Message"} body), so the same code
// runs unchanged against AWS_ENDPOINT_URL_SCHEDULER=<endpoint>, and it fires the schedules itself,
// on a clock that tests can drive.
//
//   CreateSchedule       POST   /schedules/{Name}               body: everything else, GroupName included
//   UpdateSchedule       PUT    /schedules/{Name}               (a full replacement, as in AWS)
//   GetSchedule          GET    /schedules/{Name}?groupName=
//   DeleteSchedule       DELETE /schedules/{Name}?groupName=&clientToken=
//   ListSchedules        GET    /schedules?ScheduleGroup=&NamePrefix=&State=&NextToken=&MaxResults=
//   CreateScheduleGroup  POST   /schedule-groups/{Name}
//   GetScheduleGroup     GET    /schedule-groups/{Name}
//   DeleteScheduleGroup  DELETE /schedule-groups/{Name}?clientToken=
//   ListScheduleGroups   GET    /schedule-groups?NamePrefix=&NextToken=&MaxResults=
// Timestamps travel as epoch seconds (restJson1's default for body members).
//
// Firing follows the service's documented behaviour: at() fires once at a wall-clock time in the
// schedule's time zone; cron() is evaluated in the time zone, a time that does not exist on the
// day clocks go forward is skipped and a time that occurs twice when they go back fires once;
// rate() counts fixed durations (a day is 24 hours) from StartDate, or from creation without one.
// Each invocation attempt gets the context attributes substituted into the target's Input (the
// execution id is one per firing, the attempt number counts its retries); a failing target is retried up to RetryPolicy.MaximumRetryAttempts (immediately, or after
// retryDelayMs) and then dead-lettered (recorded in deadLetters, not sent to SQS).
// Differences: targets are invoked at the scheduled instant (no 60-second jitter, and a FLEXIBLE
// time window is accepted but not used); at() in the past fires on the next tick, and an at() time
// that a DST gap skips fires at the end of the gap (AWS documents neither); cron() with L, W, # or
// a year other than '*' is refused (see Schedule expressions below).
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { timeZoneProblem, zonedLocalToInstant } from '../../shared/events/schedule-expressions.ts';
import { fromSchedulerExpression, type ParsedSchedulerExpression } from './scheduler/expressions.ts';
import { nextFireTime } from './scheduler/next-fire.ts';
import { LOCAL_ACCOUNT, LOCAL_PARTITION, LOCAL_REGION } from './template.ts';
import { ApiError, isPlainObject, readBody, sendJson as sendAwsJson } from './aws-protocol.ts';

const JSON_CONTENT_TYPE = 'application/json';

// ---------------------------------------------------------------------------------------------
// Public types
// ---------------------------------------------------------------------------------------------

/** The scheduler's time source. With `set`, advance() moves it (see createManualClock). */
export interface SchedulerClock {
  now(): number;
  set?(epochMs: number): void;
}

export interface ManualClock extends SchedulerClock {
  set(epochMs: number): void;
  advance(ms: number): void;
}

/** A clock that only moves when told to: pass it as `clock` and drive it with the scheduler's advance(). */
export function createManualClock(start: number | string | Date): ManualClock {
  let current = typeof start === 'number' ? start : new Date(start).getTime();
  if (!Number.isFinite(current)) throw new Error(`Invalid start time: ${String(start)}`);
  return {
    now: () => current,
    set(epochMs) {
      current = epochMs;
    },
    advance(ms) {
      current += ms;
    },
  };
}

export interface ScheduleRetryPolicy {
  MaximumEventAgeInSeconds: number;
  MaximumRetryAttempts: number;
}

export interface ScheduleTarget {
  Arn: string;
  RoleArn: string;
  Input?: string;
  RetryPolicy: ScheduleRetryPolicy;
  DeadLetterConfig?: { Arn?: string };
  /** EcsParameters, SqsParameters, ...: kept and returned as given. */
  [parameters: string]: unknown;
}

export type ScheduleState = 'ENABLED' | 'DISABLED';
export type ActionAfterCompletion = 'NONE' | 'DELETE';

/** A live view of one schedule (updated in place). */
export interface LocalSchedule {
  readonly arn: string;
  readonly name: string;
  readonly group: string;
  readonly expression: string;
  /** The time zone the expression is evaluated in ('UTC' when none was given). */
  readonly timezone: string;
  readonly state: ScheduleState;
  readonly description: string | undefined;
  readonly startDate: Date | undefined;
  readonly endDate: Date | undefined;
  readonly target: ScheduleTarget;
  readonly flexibleTimeWindow: { Mode: 'OFF' | 'FLEXIBLE'; MaximumWindowInMinutes?: number };
  readonly actionAfterCompletion: ActionAfterCompletion;
  /** When it fires next; undefined if disabled or completed. */
  readonly nextFire: Date | undefined;
  readonly creationDate: Date;
  readonly lastModificationDate: Date;
}

/** One invocation attempt. */
export interface LocalFiring {
  scheduleArn: string;
  name: string;
  group: string;
  /** <aws.scheduler.scheduled-time>: the instant the schedule was due, e.g. 2026-03-08T14:00:00Z. */
  scheduledTime: string;
  executionId: string;
  attempt: number;
  targetArn: string;
  /** The Input as sent, context attributes substituted. */
  input: string;
  ok: boolean;
  error?: string;
}

/** A firing whose every attempt failed, for a schedule with a DeadLetterConfig. */
export interface LocalDeadLetter {
  scheduleArn: string;
  name: string;
  group: string;
  deadLetterArn: string;
  targetArn: string;
  scheduledTime: string;
  executionId: string;
  attempts: number;
  input: string;
  errorCode: string;
  errorMessage: string;
}

export interface ScheduledInvocation {
  scheduleArn: string;
  scheduledTime: string;
  executionId: string;
  attemptNumber: number;
  target: ScheduleTarget;
}

export interface LocalSchedulerOptions {
  /** The stand-in's HTTP port on 127.0.0.1. Default: any free port. */
  port?: number;
  /**
   * Default Date.now, and then a timer fires what is due every tickIntervalMs. With a clock given,
   * nothing fires by itself: call tick() or advance().
   */
  clock?: SchedulerClock;
  /** Real-time mode only. Default 1000. */
  tickIntervalMs?: number;
  /** Wait between attempts of a failing target. Default 0 (retry at once). */
  retryDelayMs?: number;
  /** Default LOCAL_REGION / LOCAL_ACCOUNT, as in the other stand-ins' ARNs. */
  region?: string;
  account?: string;
  /** Invokes the target (e.g. the Lambda function behind targetArn) with the substituted Input. */
  invokeTarget(targetArn: string, input: string, invocation: ScheduledInvocation): Promise<void>;
  /** A firing failed for good (after its retries), or a real-time tick failed. */
  onError?(error: unknown, firing?: LocalFiring): void;
}

export interface LocalScheduler {
  endpoint: string;
  /** By `${group}/${name}`. */
  schedules: ReadonlyMap<string, LocalSchedule>;
  /** Every invocation attempt, in order. */
  firings: readonly LocalFiring[];
  deadLetters: readonly LocalDeadLetter[];
  /** The scheduler's current time. */
  now(): number;
  /**
   * Moves time forward by ms, firing everything that comes due on the way in time order (a
   * periodic schedule once per due instant), each awaited; the clock stands at each due instant
   * while its target runs. Moves the clock through its `set`, else an offset of the stand-in's own.
   */
  advance(ms: number): Promise<void>;
  /** Fires what is due now (in time order), awaiting the targets. */
  tick(): Promise<void>;
  close(): Promise<void>;
}

type ParsedExpression = Exclude<ParsedSchedulerExpression, { kind: 'invalid' }>;

/** ISO 8601 to the second, as the context attribute shows it: 2026-03-08T14:00:00Z. */
function isoSeconds(epochMs: number): string {
  return new Date(epochMs).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

// ---------------------------------------------------------------------------------------------
// The stand-in
// ---------------------------------------------------------------------------------------------

const validation = (message: string) => new ApiError('ValidationException', message, 400);
const notFound = (message: string) => new ApiError('ResourceNotFoundException', message, 404);
const conflict = (message: string) => new ApiError('ConflictException', message, 409);

type MutableSchedule = { -readonly [K in keyof LocalSchedule]: LocalSchedule[K] };

interface ScheduleRecord {
  view: MutableSchedule;
  parsed: ParsedExpression;
  /** The expression timezone as given (GetSchedule returns it only then). */
  givenTimezone: string | undefined;
  kmsKeyArn: string | undefined;
  clientToken: string | undefined;
  /** Creation order, to break ties between schedules due at the same instant. */
  sequence: number;
}

interface GroupRecord {
  arn: string;
  name: string;
  creationDate: Date;
  lastModificationDate: Date;
}

const NAME_PATTERN = /^[0-9a-zA-Z\-_.]{1,64}$/;
const DEFAULT_GROUP = 'default';
const DEFAULT_RETRY_POLICY: ScheduleRetryPolicy = { MaximumEventAgeInSeconds: 86_400, MaximumRetryAttempts: 185 };

type Route = (input: { name?: string; query: URLSearchParams; body: Record<string, unknown> }) => unknown;

export async function startLocalScheduler(options: LocalSchedulerOptions): Promise<LocalScheduler> {
  const clock: SchedulerClock = options.clock ?? { now: () => Date.now() };
  const realTime = options.clock === undefined;
  const region = options.region ?? LOCAL_REGION;
  const account = options.account ?? LOCAL_ACCOUNT;
  const arnPrefix = `arn:${LOCAL_PARTITION}:scheduler:${region}:${account}`;
  const records = new Map<string, ScheduleRecord>();
  const views = new Map<string, LocalSchedule>();
  const groups = new Map<string, GroupRecord>();
  const firings: LocalFiring[] = [];
  const deadLetters: LocalDeadLetter[] = [];
  let offsetMs = 0;
  let sequence = 0;
  let closing = false;

  const now = () => clock.now() + offsetMs;
  function setNow(epochMs: number): void {
    if (clock.set) clock.set(epochMs - offsetMs);
    else offsetMs += epochMs - now();
  }

  groups.set(DEFAULT_GROUP, {
    arn: `${arnPrefix}:schedule-group/${DEFAULT_GROUP}`,
    name: DEFAULT_GROUP,
    creationDate: new Date(now()),
    lastModificationDate: new Date(now()),
  });

  // ---- firing --------------------------------------------------------------------------------

  /** The first instant at or after now that the schedule fires (when it is (re)configured). */
  function firstFire(record: ScheduleRecord): number | undefined {
    const { view, parsed } = record;
    if (view.state !== 'ENABLED') return undefined;
    const current = now();
    const start = view.startDate?.getTime();
    const end = view.endDate?.getTime();
    let next: number | undefined;
    switch (parsed.kind) {
      case 'at':
        // StartDate and EndDate do not apply to one-time schedules.
        return zonedLocalToInstant(parsed.local, view.timezone).getTime();
      case 'rate':
        if (start === undefined) next = current;
        else if (start >= current) next = start;
        else next = start + Math.ceil((current - start) / parsed.ms) * parsed.ms;
        break;
      case 'cron':
        // The next cron fire is strictly after the time given (to the second): a cron instant at
        // StartDate itself counts.
        next = nextFireTime(
          view.expression,
          view.timezone,
          new Date(start === undefined ? current : Math.max(current, start - 1000)),
        )?.getTime();
        break;
    }
    return next !== undefined && (end === undefined || next < end) ? next : undefined;
  }

  /** The instant after `fired` that the schedule fires next. */
  function followingFire(record: ScheduleRecord, fired: number): number | undefined {
    const { view, parsed } = record;
    if (view.state !== 'ENABLED') return undefined;
    const end = view.endDate?.getTime();
    let next: number | undefined;
    switch (parsed.kind) {
      case 'at':
        return undefined;
      case 'rate':
        next = fired + parsed.ms;
        break;
      case 'cron':
        next = nextFireTime(view.expression, view.timezone, new Date(fired))?.getTime();
        break;
    }
    return next !== undefined && (end === undefined || next < end) ? next : undefined;
  }

  function dueBefore(until: number): ScheduleRecord | undefined {
    let earliest: ScheduleRecord | undefined;
    for (const record of records.values()) {
      const next = record.view.nextFire?.getTime();
      if (next === undefined || next > until || record.view.state !== 'ENABLED') continue;
      const best = earliest?.view.nextFire?.getTime();
      if (earliest === undefined || best === undefined || next < best || (next === best && record.sequence < earliest.sequence)) {
        earliest = record;
      }
    }
    return earliest;
  }

  async function runDue(until: number, moveClock: boolean): Promise<void> {
    for (;;) {
      if (closing) return;
      const record = dueBefore(until);
      if (!record) return;
      const at = record.view.nextFire!.getTime();
      if (moveClock && at > now()) setNow(at);
      await fire(record, at);
    }
  }

  async function fire(record: ScheduleRecord, scheduledAt: number): Promise<void> {
    const { view } = record;
    const key = `${view.group}/${view.name}`;
    // Move the schedule on first: its target may update or delete it.
    view.nextFire = dateOrUndefined(followingFire(record, scheduledAt));
    const target = view.target;
    const scheduledTime = isoSeconds(scheduledAt);
    const retryPolicy = target.RetryPolicy;
    const maxAttempts = 1 + retryPolicy.MaximumRetryAttempts;
    // One id per firing, the same on each retry of it (attempt-number tells the attempts apart), so
    // a target can deduplicate retries by it; 16 hex digits like the service's.
    const executionId = randomBytes(8).toString('hex');
    let failure: { error: unknown; firing: LocalFiring } | undefined;
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      if (attempt > 1) {
        if (options.retryDelayMs) await delay(options.retryDelayMs);
        if (now() - scheduledAt > retryPolicy.MaximumEventAgeInSeconds * 1000 || closing) break;
      }
      const input = substituteContext(target.Input ?? '{}', {
        '<aws.scheduler.schedule-arn>': view.arn,
        '<aws.scheduler.scheduled-time>': scheduledTime,
        '<aws.scheduler.execution-id>': executionId,
        '<aws.scheduler.attempt-number>': String(attempt),
      });
      const firing: LocalFiring = {
        scheduleArn: view.arn,
        name: view.name,
        group: view.group,
        scheduledTime,
        executionId,
        attempt,
        targetArn: target.Arn,
        input,
        ok: false,
      };
      firings.push(firing);
      try {
        await options.invokeTarget(target.Arn, input, {
          scheduleArn: view.arn,
          scheduledTime,
          executionId,
          attemptNumber: attempt,
          target,
        });
        firing.ok = true;
        failure = undefined;
        break;
      } catch (error) {
        firing.error = errorMessage(error);
        failure = { error, firing };
      }
    }
    if (failure) {
      const deadLetterArn = target.DeadLetterConfig?.Arn;
      if (deadLetterArn) {
        deadLetters.push({
          scheduleArn: view.arn,
          name: view.name,
          group: view.group,
          deadLetterArn,
          targetArn: target.Arn,
          scheduledTime,
          executionId,
          attempts: failure.firing.attempt,
          input: failure.firing.input,
          errorCode: errorCode(failure.error),
          errorMessage: errorMessage(failure.error),
        });
      }
      options.onError?.(failure.error, failure.firing);
    }
    // Completed (a one-time schedule, or past its EndDate): ActionAfterCompletion applies.
    if (records.get(key) === record && view.nextFire === undefined && view.state === 'ENABLED' && view.actionAfterCompletion === 'DELETE') {
      records.delete(key);
      views.delete(key);
    }
  }

  let chain: Promise<void> = Promise.resolve();
  function serialize(work: () => Promise<void>): Promise<void> {
    const run = chain.then(work);
    chain = run.catch(() => undefined);
    return run;
  }

  const tick = () => serialize(() => runDue(now(), false));
  const advance = (ms: number) => {
    if (!Number.isFinite(ms) || ms < 0) return Promise.reject(new Error(`advance: ms must be a non-negative number, got ${ms}`));
    return serialize(async () => {
      const until = now() + ms;
      await runDue(until, true);
      if (now() < until) setNow(until);
    });
  };

  // ---- API -----------------------------------------------------------------------------------

  function requireGroup(name: string): GroupRecord {
    const group = groups.get(name);
    if (!group) throw notFound(`Schedule group ${name} does not exist.`);
    return group;
  }

  function groupNameOf(value: unknown): string {
    if (value === undefined || value === null || value === '') return DEFAULT_GROUP;
    if (typeof value !== 'string' || !NAME_PATTERN.test(value)) {
      throw validation(
        `1 validation error detected: Value '${String(value)}' at 'groupName' failed to satisfy constraint: Member must satisfy regular expression pattern: [0-9a-zA-Z-_.]+`,
      );
    }
    return value;
  }

  function scheduleName(name: string | undefined): string {
    if (name === undefined || !NAME_PATTERN.test(name)) {
      throw validation(
        `1 validation error detected: Value '${String(name)}' at 'name' failed to satisfy constraint: Member must satisfy regular expression pattern: [0-9a-zA-Z-_.]+`,
      );
    }
    return name;
  }

  function findRecord(name: string, groupValue: unknown): ScheduleRecord {
    const group = groupNameOf(groupValue);
    requireGroup(group);
    const record = records.get(`${group}/${name}`);
    if (!record) throw notFound(`Schedule ${name} does not exist.`);
    return record;
  }

  /** Validates a Create/UpdateSchedule body into the schedule's fields. */
  function scheduleFields(body: Record<string, unknown>) {
    const expression = body.ScheduleExpression;
    if (typeof expression !== 'string' || expression.length === 0 || expression.length > 256) {
      throw validation('ScheduleExpression is required and must be 1 to 256 characters long.');
    }
    const parsed = fromSchedulerExpression(expression);
    if (parsed.kind === 'invalid') throw validation(`Invalid Schedule Expression ${expression}: ${parsed.error}.`);
    const givenTimezone = optionalString(body.ScheduleExpressionTimezone, 'ScheduleExpressionTimezone');
    const timezoneProblem = givenTimezone === undefined ? null : timeZoneProblem(givenTimezone);
    if (timezoneProblem !== null) throw validation(`Invalid ScheduleExpressionTimezone ${givenTimezone}: it ${timezoneProblem}.`);
    const state = body.State ?? 'ENABLED';
    if (state !== 'ENABLED' && state !== 'DISABLED') throw validation(`Invalid State ${String(state)}: must be ENABLED or DISABLED.`);
    const actionAfterCompletion = body.ActionAfterCompletion ?? 'NONE';
    if (actionAfterCompletion !== 'NONE' && actionAfterCompletion !== 'DELETE') {
      throw validation(`Invalid ActionAfterCompletion ${String(actionAfterCompletion)}: must be NONE or DELETE.`);
    }
    const window = asObject(body.FlexibleTimeWindow, 'FlexibleTimeWindow');
    if (window.Mode !== 'OFF' && window.Mode !== 'FLEXIBLE') throw validation('FlexibleTimeWindow.Mode must be OFF or FLEXIBLE.');
    const maxWindow = window.MaximumWindowInMinutes;
    if (
      window.Mode === 'FLEXIBLE' &&
      !(typeof maxWindow === 'number' && Number.isInteger(maxWindow) && maxWindow >= 1 && maxWindow <= 1440)
    ) {
      throw validation('FlexibleTimeWindow.MaximumWindowInMinutes must be between 1 and 1440 when Mode is FLEXIBLE.');
    }
    if (window.Mode === 'OFF' && maxWindow !== undefined) {
      throw validation('FlexibleTimeWindow.MaximumWindowInMinutes cannot be set when Mode is OFF.');
    }
    const startDate = optionalDate(body.StartDate, 'StartDate');
    const endDate = optionalDate(body.EndDate, 'EndDate');
    if (startDate && endDate && endDate.getTime() <= startDate.getTime()) {
      throw validation('The EndDate you specify must come after the StartDate.');
    }
    const description = optionalString(body.Description, 'Description');
    if (description !== undefined && description.length > 512) throw validation('Description must be at most 512 characters long.');
    return {
      expression,
      parsed: parsed as ParsedExpression,
      givenTimezone,
      state: state as ScheduleState,
      actionAfterCompletion: actionAfterCompletion as ActionAfterCompletion,
      flexibleTimeWindow: window as LocalSchedule['flexibleTimeWindow'],
      startDate,
      endDate,
      description,
      kmsKeyArn: optionalString(body.KmsKeyArn, 'KmsKeyArn'),
      target: validTarget(body.Target),
    };
  }

  function createSchedule(name: string, body: Record<string, unknown>): unknown {
    const group = groupNameOf(body.GroupName);
    requireGroup(group);
    const key = `${group}/${name}`;
    const clientToken = optionalString(body.ClientToken, 'ClientToken');
    const existing = records.get(key);
    if (existing) {
      // A retried request (same idempotency token) gets the same answer.
      if (clientToken !== undefined && existing.clientToken === clientToken) return { ScheduleArn: existing.view.arn };
      throw conflict(`Schedule ${name} already exists.`);
    }
    const fields = scheduleFields(body);
    const created = new Date(now());
    const record: ScheduleRecord = {
      view: {
        arn: `${arnPrefix}:schedule/${group}/${name}`,
        name,
        group,
        expression: fields.expression,
        timezone: fields.givenTimezone ?? 'UTC',
        state: fields.state,
        description: fields.description,
        startDate: fields.startDate,
        endDate: fields.endDate,
        target: fields.target,
        flexibleTimeWindow: fields.flexibleTimeWindow,
        actionAfterCompletion: fields.actionAfterCompletion,
        nextFire: undefined,
        creationDate: created,
        lastModificationDate: created,
      },
      parsed: fields.parsed,
      givenTimezone: fields.givenTimezone,
      kmsKeyArn: fields.kmsKeyArn,
      clientToken,
      sequence: sequence++,
    };
    record.view.nextFire = dateOrUndefined(firstFire(record));
    records.set(key, record);
    views.set(key, record.view);
    return { ScheduleArn: record.view.arn };
  }

  function updateSchedule(name: string, body: Record<string, unknown>): unknown {
    const record = findRecord(name, body.GroupName);
    const fields = scheduleFields(body);
    const { view } = record;
    Object.assign(view, {
      expression: fields.expression,
      timezone: fields.givenTimezone ?? 'UTC',
      state: fields.state,
      description: fields.description,
      startDate: fields.startDate,
      endDate: fields.endDate,
      target: fields.target,
      flexibleTimeWindow: fields.flexibleTimeWindow,
      actionAfterCompletion: fields.actionAfterCompletion,
      lastModificationDate: new Date(now()),
    });
    record.parsed = fields.parsed;
    record.givenTimezone = fields.givenTimezone;
    record.kmsKeyArn = fields.kmsKeyArn;
    view.nextFire = dateOrUndefined(firstFire(record));
    return { ScheduleArn: view.arn };
  }

  function wireSchedule(record: ScheduleRecord): Record<string, unknown> {
    const { view } = record;
    return dropUndefined({
      Arn: view.arn,
      GroupName: view.group,
      Name: view.name,
      ScheduleExpression: view.expression,
      StartDate: epochSeconds(view.startDate),
      EndDate: epochSeconds(view.endDate),
      Description: view.description,
      ScheduleExpressionTimezone: record.givenTimezone,
      State: view.state,
      CreationDate: epochSeconds(view.creationDate),
      LastModificationDate: epochSeconds(view.lastModificationDate),
      KmsKeyArn: record.kmsKeyArn,
      Target: view.target,
      FlexibleTimeWindow: view.flexibleTimeWindow,
      ActionAfterCompletion: view.actionAfterCompletion,
    });
  }

  function wireGroup(group: GroupRecord): Record<string, unknown> {
    return {
      Arn: group.arn,
      Name: group.name,
      State: 'ACTIVE',
      CreationDate: epochSeconds(group.creationDate),
      LastModificationDate: epochSeconds(group.lastModificationDate),
    };
  }

  const routes: Record<string, Route> = {
    'POST /schedules/{Name}': ({ name, body }) => createSchedule(scheduleName(name), body),
    'PUT /schedules/{Name}': ({ name, body }) => updateSchedule(scheduleName(name), body),
    'GET /schedules/{Name}': ({ name, query }) => wireSchedule(findRecord(scheduleName(name), query.get('groupName'))),
    'DELETE /schedules/{Name}': ({ name, query }) => {
      const record = findRecord(scheduleName(name), query.get('groupName'));
      records.delete(`${record.view.group}/${record.view.name}`);
      views.delete(`${record.view.group}/${record.view.name}`);
      return {};
    },
    'GET /schedules': ({ query }) => {
      const group = query.get('ScheduleGroup') ?? undefined;
      const prefix = query.get('NamePrefix') ?? '';
      const state = query.get('State') ?? undefined;
      if (state !== undefined && state !== 'ENABLED' && state !== 'DISABLED') throw validation(`Invalid State ${state}.`);
      const matching = [...records.values()]
        .filter((record) => (group === undefined || record.view.group === group) && record.view.name.startsWith(prefix))
        .filter((record) => state === undefined || record.view.state === state)
        .sort((a, b) => a.view.group.localeCompare(b.view.group) || a.view.name.localeCompare(b.view.name));
      const { page, nextToken } = paginate(matching, query);
      return dropUndefined({
        Schedules: page.map((record) => ({
          Arn: record.view.arn,
          Name: record.view.name,
          GroupName: record.view.group,
          State: record.view.state,
          CreationDate: epochSeconds(record.view.creationDate),
          LastModificationDate: epochSeconds(record.view.lastModificationDate),
          Target: { Arn: record.view.target.Arn },
        })),
        NextToken: nextToken,
      });
    },
    'POST /schedule-groups/{Name}': ({ name }) => {
      const groupName = scheduleName(name);
      if (groups.has(groupName)) throw conflict(`Schedule group ${groupName} already exists.`);
      const created = new Date(now());
      const group = {
        arn: `${arnPrefix}:schedule-group/${groupName}`,
        name: groupName,
        creationDate: created,
        lastModificationDate: created,
      };
      groups.set(groupName, group);
      return { ScheduleGroupArn: group.arn };
    },
    'GET /schedule-groups/{Name}': ({ name }) => wireGroup(requireGroup(scheduleName(name))),
    'DELETE /schedule-groups/{Name}': ({ name }) => {
      const groupName = scheduleName(name);
      requireGroup(groupName);
      if (groupName === DEFAULT_GROUP) throw validation('You cannot delete the default group.');
      groups.delete(groupName);
      // The service deletes the group's schedules with it.
      for (const [key, record] of records) {
        if (record.view.group === groupName) {
          records.delete(key);
          views.delete(key);
        }
      }
      return {};
    },
    'GET /schedule-groups': ({ query }) => {
      const prefix = query.get('NamePrefix') ?? '';
      const matching = [...groups.values()].filter((group) => group.name.startsWith(prefix)).sort((a, b) => a.name.localeCompare(b.name));
      const { page, nextToken } = paginate(matching, query);
      return dropUndefined({ ScheduleGroups: page.map(wireGroup), NextToken: nextToken });
    },
  };

  async function serveRequest(request: IncomingMessage, response: ServerResponse): Promise<void> {
    try {
      const url = new URL(request.url ?? '/', 'http://localhost');
      const segments = url.pathname.split('/').filter((segment) => segment !== '');
      const [collection, rawName, ...rest] = segments;
      const routeKey =
        rest.length === 0 && rawName !== undefined ? `${request.method} /${collection}/{Name}` : `${request.method} /${collection ?? ''}`;
      const route = rest.length === 0 && Object.hasOwn(routes, routeKey) ? routes[routeKey] : undefined;
      const text = await readBody(request);
      if (!route) throw new ApiError('UnknownOperationException', `No operation for ${request.method} ${url.pathname}`, 404);
      sendAwsJson(
        response,
        200,
        route({ name: rawName === undefined ? undefined : decodeURIComponent(rawName), query: url.searchParams, body: parseBody(text) }),
        JSON_CONTENT_TYPE,
      );
    } catch (error) {
      if (error instanceof ApiError) {
        sendAwsJson(response, error.statusCode, { Message: error.message }, JSON_CONTENT_TYPE, error.type);
        return;
      }
      console.error('[scheduler] request failed:', error);
      sendAwsJson(response, 500, { Message: String(error) }, JSON_CONTENT_TYPE, 'InternalServerException');
    }
  }

  // ---- server --------------------------------------------------------------------------------

  const server = createServer((request, response) => void serveRequest(request, response));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  const report = (error: unknown) => (options.onError ? options.onError(error) : console.error('[scheduler] tick failed:', error));
  // One tick at a time: a slow target does not pile ticks up behind it.
  let tickPending = false;
  const timer = realTime
    ? setInterval(() => {
        if (tickPending) return;
        tickPending = true;
        void tick()
          .catch(report)
          .finally(() => (tickPending = false));
      }, options.tickIntervalMs ?? 1000)
    : undefined;
  timer?.unref();

  let closed: Promise<void> | undefined;
  function close(): Promise<void> {
    closed ??= (async () => {
      closing = true;
      if (timer) clearInterval(timer);
      const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await chain;
      await serverClosed;
    })();
    return closed;
  }

  return { endpoint: `http://127.0.0.1:${port}`, schedules: views, firings, deadLetters, now, advance, tick, close };
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

function validTarget(value: unknown): ScheduleTarget {
  const target = asObject(value, 'Target');
  if (typeof target.Arn !== 'string' || target.Arn.length === 0 || target.Arn.length > 1600) {
    throw validation('Target.Arn is required and must be 1 to 1600 characters long.');
  }
  if (typeof target.RoleArn !== 'string' || target.RoleArn.length === 0 || target.RoleArn.length > 1600) {
    throw validation('Target.RoleArn is required and must be 1 to 1600 characters long.');
  }
  if (target.Input !== undefined && (typeof target.Input !== 'string' || target.Input.length === 0)) {
    throw validation('Target.Input must be a non-empty string.');
  }
  const retry = target.RetryPolicy === undefined ? {} : asObject(target.RetryPolicy, 'Target.RetryPolicy');
  const retryPolicy: ScheduleRetryPolicy = {
    MaximumEventAgeInSeconds: boundedInteger(
      retry.MaximumEventAgeInSeconds,
      DEFAULT_RETRY_POLICY.MaximumEventAgeInSeconds,
      60,
      86_400,
      'MaximumEventAgeInSeconds',
    ),
    MaximumRetryAttempts: boundedInteger(
      retry.MaximumRetryAttempts,
      DEFAULT_RETRY_POLICY.MaximumRetryAttempts,
      0,
      185,
      'MaximumRetryAttempts',
    ),
  };
  if (target.DeadLetterConfig !== undefined) {
    const deadLetter = asObject(target.DeadLetterConfig, 'Target.DeadLetterConfig');
    // Any non-empty string: locally it may be a placeholder resolved from the template.
    if (deadLetter.Arn !== undefined && (typeof deadLetter.Arn !== 'string' || deadLetter.Arn === '')) {
      throw validation('Target.DeadLetterConfig.Arn must be a non-empty string.');
    }
  }
  return { ...target, RetryPolicy: retryPolicy } as ScheduleTarget;
}

function boundedInteger(value: unknown, fallback: number, min: number, max: number, field: string): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw validation(`${field} must be an integer between ${min} and ${max}.`);
  }
  return value;
}

function substituteContext(input: string, values: Record<string, string>): string {
  return input.replace(/<aws\.scheduler\.(schedule-arn|scheduled-time|execution-id|attempt-number)>/g, (whole) => values[whole] ?? whole);
}

function paginate<T>(items: T[], query: URLSearchParams): { page: T[]; nextToken: string | undefined } {
  const maxText = query.get('MaxResults');
  const max = maxText === null ? 100 : Number(maxText);
  if (!Number.isInteger(max) || max < 1 || max > 100) throw validation('MaxResults must be between 1 and 100.');
  const token = query.get('NextToken');
  let offset = 0;
  if (token !== null) {
    offset = Number(Buffer.from(token, 'base64').toString('utf8'));
    if (!Number.isInteger(offset) || offset < 0) throw validation('Invalid NextToken.');
  }
  const page = items.slice(offset, offset + max);
  const nextToken = offset + max < items.length ? Buffer.from(String(offset + max), 'utf8').toString('base64') : undefined;
  return { page, nextToken };
}

function optionalString(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw validation(`${field} must be a string.`);
  return value;
}

function optionalDate(value: unknown, field: string): Date | undefined {
  if (value === undefined || value === null) return undefined;
  // restJson1 sends epoch seconds; accept an ISO string too.
  const date = typeof value === 'number' ? new Date(value * 1000) : typeof value === 'string' ? new Date(value) : new Date(NaN);
  if (Number.isNaN(date.getTime())) throw validation(`${field} must be a timestamp.`);
  return date;
}

function asObject(value: unknown, field: string): Record<string, unknown> {
  if (!isPlainObject(value)) throw validation(`${field} is required and must be an object.`);
  return value;
}

function parseBody(text: string): Record<string, unknown> {
  if (text.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (isPlainObject(parsed)) return parsed;
  } catch {
    // fall through
  }
  throw new ApiError('SerializationException', 'The request body is not a JSON object', 400);
}

function epochSeconds(date: Date | undefined): number | undefined {
  return date === undefined ? undefined : date.getTime() / 1000;
}

function dateOrUndefined(epochMs: number | undefined): Date | undefined {
  return epochMs === undefined ? undefined : new Date(epochMs);
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function errorCode(error: unknown): string {
  return error instanceof Error && error.name !== 'Error' ? error.name : 'TargetInvocationError';
}

function dropUndefined(source: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(source).filter(([, value]) => value !== undefined));
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
