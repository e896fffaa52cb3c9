// Event files: JSON files under `events/` in the data bucket, dropped by users,
// deployments and the agent itself. Pure validation: `parseEventFile` turns a file's key and body
// into a typed event or into one human-readable error (naming the file and the field) that can be
// written next to it as `events/x.error.json`.
//
//   { "type": "immediate", "threadId": "slack:C123ABC:1234567890.123456", "text": "The deploy finished" }
//   { "type": "one-shot", "adapterId": "slack", "channelId": "C123ABC", "text": "…",
//     "schedule": "2025-03-01T09:00:00", "timezone": "America/New_York" }
//   { "type": "periodic", "threadId": "…", "text": "…", "schedule": "0 9 * * 1-5", "timezone": "America/New_York" }
//   { "type": "periodic", "threadId": "…", "text": "…", "schedule": "every 30m" }
//
// Where the file lives limits what it may target and may supply the target (shared/events/scope.ts).
//
// Decisions:
// - The parsed event keeps the file's flat shape (what users write is what code reads);
//   `eventTarget` gives the target as a tagged union.
// - Target: `threadId` (an existing thread, `adapter:channel:thread`) or `adapterId` + `channelId`
//   (a new thread in that channel), never both, never neither. `channelId` is the adapter's own
//   channel id (Slack's `C123ABC`), taken as written: only the adapter knows its format.
// - `timezone` defaults to `UTC` on scheduled events and is stored in canonical case
//   (`america/new_york` → `America/New_York`). Immediate events take neither `schedule` nor
//   `timezone`: either one there means the author wanted a scheduled type, so it is an error.
// - Unknown fields are errors (a typo such as `shedule` would otherwise silently drop the
//   schedule), with a "did you mean" when a known field is close.
// - A leading byte-order mark is ignored (editors on Windows add one; JSON.parse refuses it).
import { createHash } from 'node:crypto';
import * as z from 'zod';
import { DEFAULT_MIN_EVENT_INTERVAL_MINUTES } from '../defaults.ts';
import { promptTextProblem } from '../contracts.ts';
import { q, stringField, typeName } from './fields.ts';
import { checkEventTarget, eventTargetShape } from './target.ts';
import { forTerminal } from '../support/display.ts';
import { closest } from '../support/closest.ts';
import { encodeSegment } from '../ids.ts';
import { EVENTS_PREFIX, eventScopeOf, targetOutsideChannel, type EventScope } from './scope.ts';
import {
  canonicalTimeZone,
  isIntervalSchedule,
  parseCron,
  parseInterval,
  parseOneShotTime,
  periodicCronProblem,
  periodicShortestIntervalMinutes,
  timeZoneProblem,
} from './schedule-expressions.ts';

export const EVENT_TYPES = ['immediate', 'one-shot', 'periodic'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

const textSchema = stringField('text', 'it is the message the agent receives')
  .refine((s) => s.trim().length > 0, { error: '"text" is empty: it is the message the agent receives' })
  // The event text becomes a prompt: the same byte limit applies.
  .refine((s) => !promptTextProblem(s), { error: (iss) => `"text" ${promptTextProblem(iss.input as string, 'is too long: it')}` });

const timezoneSchema = stringField('timezone', '')
  .superRefine((s, ctx) => {
    const problem = timeZoneProblem(s);
    if (problem) ctx.addIssue({ code: 'custom', message: `"timezone" ${q(s)} ${problem}` });
  })
  .transform(canonicalTimeZone)
  .default('UTC');

const oneShotScheduleSchema = stringField(
  'schedule',
  'a one-shot event needs the local time to run at, like "2025-03-01T09:00:00"',
).superRefine((s, ctx) => {
  const parsed = parseOneShotTime(s);
  if (parsed.ok) return;
  let message: string;
  if (parsed.error !== 'format') {
    message = `"schedule" ${q(s)} is not a real date and time: ${parsed.error}`;
  } else if (parseCron(s).ok) {
    message = `"schedule" ${q(s)} is a cron expression; a one-shot event needs a date and time like "2025-03-01T09:00:00" (use type "periodic" to repeat)`;
  } else {
    message =
      `"schedule" ${q(s)} is not a one-shot time: write YYYY-MM-DDTHH:MM[:SS] in local time without an offset, ` +
      `like "2025-03-01T09:00:00" (read in "timezone"), or an absolute time ending in Z or an offset like "+05:30"`;
  }
  ctx.addIssue({ code: 'custom', message });
});

const periodicScheduleSchema = stringField(
  'schedule',
  'a periodic event needs a 5-field cron, like "0 9 * * 1-5", or an interval, like "every 30m"',
).superRefine((s, ctx) => {
  if (isIntervalSchedule(s)) {
    const parsed = parseInterval(s);
    if (!parsed.ok) ctx.addIssue({ code: 'custom', message: `"schedule" ${q(s)} ${parsed.error}` });
    return;
  }
  if (parseOneShotTime(s).ok) {
    ctx.addIssue({
      code: 'custom',
      message: `"schedule" ${q(s)} is a date and time; a periodic event needs a 5-field cron like "0 9 * * 1-5" (use type "one-shot" to run once)`,
    });
    return;
  }
  const problem = periodicCronProblem(s);
  if (problem) ctx.addIssue({ code: 'custom', message: `"schedule" ${q(s)} ${problem}` });
});

export const immediateEventSchema = z.strictObject({
  type: z.literal('immediate'),
  ...eventTargetShape,
  text: textSchema,
});

export const oneShotEventSchema = z.strictObject({
  type: z.literal('one-shot'),
  ...eventTargetShape,
  text: textSchema,
  /** `YYYY-MM-DDTHH:MM[:SS]` local time in `timezone`, or an absolute time with `Z`/offset. */
  schedule: oneShotScheduleSchema,
  timezone: timezoneSchema,
});

export const periodicEventSchema = z.strictObject({
  type: z.literal('periodic'),
  ...eventTargetShape,
  text: textSchema,
  /** 5-field cron (minute hour day-of-month month day-of-week) in `timezone`, or `every N m|h|d`. */
  schedule: periodicScheduleSchema,
  timezone: timezoneSchema,
  /**
   * A heartbeat: each firing the agent reads HEARTBEAT.md (its goals and recurring tasks)
   * and decides what, if anything, to do; when nothing, it stays silent. Off unless set.
   */
  heartbeat: z.boolean({ error: '"heartbeat" must be true or false' }).optional(),
});

/** The event file schema: a discriminated union on `type`, with the target rule on top. */
export const eventFileSchema = z
  .discriminatedUnion('type', [immediateEventSchema, oneShotEventSchema, periodicEventSchema])
  // Run even when a field failed, so one pass reports every problem.
  .superRefine(checkEventTarget, { when: () => true });

export type EventFile = z.output<typeof eventFileSchema>;
export type ImmediateEvent = Extract<EventFile, { type: 'immediate' }>;
export type OneShotEvent = Extract<EventFile, { type: 'one-shot' }>;
export type PeriodicEvent = Extract<EventFile, { type: 'periodic' }>;
export type ScheduledEvent = OneShotEvent | PeriodicEvent;

export type EventTarget = { kind: 'thread'; threadId: string } | { kind: 'channel'; adapterId: string; channelId: string };

/** Where a parsed event goes: `orchestrator.send(threadId)` or `sendToChannel(adapterId, channelId)`. */
export function eventTarget(event: EventFile): EventTarget {
  if (event.threadId !== undefined) return { kind: 'thread', threadId: event.threadId };
  if (event.adapterId !== undefined && event.channelId !== undefined) {
    return { kind: 'channel', adapterId: event.adapterId, channelId: event.channelId };
  }
  throw new Error('Event has no target (not from parseEventFile?)');
}

const FIELDS_BY_TYPE: Record<EventType, string[]> = {
  immediate: Object.keys(immediateEventSchema.shape),
  'one-shot': Object.keys(oneShotEventSchema.shape),
  periodic: Object.keys(periodicEventSchema.shape),
};
const ALL_FIELDS = [...new Set(Object.values(FIELDS_BY_TYPE).flat())];

function unknownFieldProblems(type: EventType, keys: string[]): string[] {
  const allowed = FIELDS_BY_TYPE[type];
  const problems: string[] = [];
  const misplaced = keys.filter((k) => type === 'immediate' && (k === 'schedule' || k === 'timezone'));
  if (misplaced.length > 0) {
    problems.push(
      `${misplaced.map((k) => `"${k}"`).join(' and ')} ${misplaced.length > 1 ? 'are' : 'is'} not allowed on an immediate event, ` +
        `which runs as soon as the file appears: use type "one-shot" or "periodic" to run it later`,
    );
  }
  const unknown = keys.filter((k) => !misplaced.includes(k));
  if (unknown.length > 0) {
    const named = unknown
      .map((k) => {
        const guess = closest(k, ALL_FIELDS);
        return guess && allowed.includes(guess) ? `"${k}" (did you mean "${guess}"?)` : `"${k}"`;
      })
      .join(', ');
    problems.push(`unknown field${unknown.length > 1 ? 's' : ''} ${named}; a ${type} event has ${allowed.map((k) => `"${k}"`).join(', ')}`);
  }
  return problems;
}

export type ParseEventFileResult = { ok: true; event: EventFile } | { ok: false; error: string };

export interface ParseEventFileOptions {
  /** The shortest time allowed between two firings of a periodic event. */
  minIntervalMinutes?: number;
}

/** The problems of a valid event against where its file lives and the deployment's limits. */
function placementProblems(scope: EventScope, event: EventFile, options: ParseEventFileOptions): string[] {
  const problems: string[] = [];
  if (scope.kind === 'channel') {
    const outside = targetOutsideChannel(scope, event);
    if (outside) problems.push(outside);
  }
  const minimum = options.minIntervalMinutes ?? DEFAULT_MIN_EVENT_INTERVAL_MINUTES;
  if (event.type === 'periodic') {
    const shortest = periodicShortestIntervalMinutes(event.schedule);
    if (shortest < minimum) {
      problems.push(
        `"schedule" ${q(event.schedule)} fires every ${shortest} minute${shortest === 1 ? '' : 's'} at its fastest; ` +
          `the minimum interval between firings is ${minimum} minutes (minEventIntervalMinutes in settings.json)`,
      );
    }
  }
  return problems;
}

/** A file's or folder's name below `events/`: what reaches operators' terminals and chats (the runs listing). */
const NAME_SEGMENT = /^[A-Za-z0-9._-]+$/;

/**
 * Why the file's name, or a folder's below `events/`, is refused: letters, digits, ".", "_" and "-"
 * only, so no name can carry terminal escape sequences or chat markup. A channel's folder is the
 * channel's id encoded as in the data tree (`encodeSegment`), which keeps to the same characters and "%".
 */
export function eventFileNameProblem(key: string, scope: Exclude<EventScope, { kind: 'misplaced' }>): string | undefined {
  const names = key.slice(EVENTS_PREFIX.length).split('/');
  if (scope.kind === 'channel') {
    const [, folder] = names.splice(0, 2);
    const expected = encodeSegment(scope.channelId);
    if (folder !== expected)
      return `the folder ${forTerminal(q(folder!))} should be named ${q(expected)}: the channel's id, encoded as in the data tree`;
  }
  const bad = names.find((name) => !NAME_SEGMENT.test(name) || name === '.' || name === '..');
  if (bad === undefined) return undefined;
  return `the name ${forTerminal(q(bad))} may use only letters, digits, ".", "_" and "-" (names are shown to operators): rename the file`;
}

/**
 * Validate one event file. The error is one line, `<key>: <problem>[; <problem>…]`, each problem
 * a sentence naming the field, e.g.
 * `events/report.json: "timezone" "America/NewYork" is not a known IANA time zone (…)`.
 */
export function parseEventFile(key: string, body: string, options: ParseEventFileOptions = {}): ParseEventFileResult {
  const fail = (problems: string[]): ParseEventFileResult => ({ ok: false, error: `${key}: ${problems.join('; ')}` });
  const scope = eventScopeOf(key);
  if (scope.kind === 'misplaced') return fail([scope.error]);
  const nameProblem = eventFileNameProblem(key, scope);
  // The key itself is quoted and escaped: it holds what the name check refused.
  if (nameProblem) return { ok: false, error: `${forTerminal(q(key))}: ${nameProblem}` };
  let raw: unknown;
  try {
    raw = JSON.parse(body.replace(/^\uFEFF/, ''));
  } catch (err) {
    return fail([`not valid JSON (${err instanceof Error ? err.message : String(err)})`]);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return fail([`must hold a JSON object like {"type": "immediate", "threadId": "…", "text": "…"}, not ${typeName(raw)}`]);
  }
  let record = raw as Record<string, unknown>;
  // A channel's file without a target starts a new thread in its channel.
  if (scope.kind === 'channel' && ['threadId', 'adapterId', 'channelId'].every((field) => record[field] === undefined)) {
    record = { ...record, adapterId: scope.adapterId, channelId: scope.channelId };
  }
  const allowedTypes = EVENT_TYPES.map(q).join(', ');
  const type = record.type;
  if (type === undefined) return fail([`"type" is missing: use one of ${allowedTypes}`]);
  if (typeof type !== 'string' || !(EVENT_TYPES as readonly string[]).includes(type)) {
    const guess = typeof type === 'string' ? closest(type, EVENT_TYPES) : undefined;
    const shown = typeof type === 'string' ? q(type) : `(${typeName(type)})`;
    return fail([`"type" ${shown} is not an event type: use one of ${allowedTypes}${guess ? ` (did you mean ${q(guess)}?)` : ''}`]);
  }

  const result = eventFileSchema.safeParse(record);
  if (result.success) {
    const problems = placementProblems(scope, result.data, options);
    return problems.length ? fail(problems) : { ok: true, event: result.data };
  }
  const problems: string[] = [];
  for (const issue of result.error.issues) {
    if (issue.code === 'unrecognized_keys') problems.push(...unknownFieldProblems(type as EventType, issue.keys));
    else problems.push(issue.message);
  }
  return fail([...new Set(problems)]);
}

const SLUG_MAX = 40;

/**
 * A deterministic EventBridge Scheduler schedule name (1-64 of `[0-9A-Za-z._-]`) for an event file:
 * `ev-` + a readable slug of the file name (accents dropped, lowercase, other characters → `-`,
 * at most 40 characters) + `-` + the first 8 hex digits of sha256(full key), e.g.
 * `events/Weekly Report.json` → `ev-weekly-report-3f9a1c2b`. The hash keeps names of different
 * keys apart (same file name in two folders, truncated or non-Latin names); a name without any
 * Latin letter or digit gives just `ev-<hash>`. At most 3 + 40 + 1 + 8 = 52 characters.
 */
export function scheduleNameFor(key: string): string {
  const file = key.slice(key.lastIndexOf('/') + 1).replace(/\.json$/i, '');
  const slug = file
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+/, '')
    .slice(0, SLUG_MAX)
    .replace(/-+$/, '');
  const hash = createHash('sha256').update(key, 'utf8').digest('hex').slice(0, 8);
  return slug ? `ev-${slug}-${hash}` : `ev-${hash}`;
}
