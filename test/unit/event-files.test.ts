import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eventTarget, parseEventFile, scheduleNameFor, type EventFile, type OneShotEvent } from '../../shared/events/schema.ts';
import { errorFileKey, isEventFileKey } from '../../shared/events/keys.ts';
import {
  cronToEventBridge,
  isPast,
  oneShotInstant,
  toSchedulerExpression,
  zonedLocalToInstant,
} from '../../shared/events/schedule-expressions.ts';
import { busDetailSchema, firingSchema } from '../../shared/events/fire.ts';
import { formatIssues } from '../../shared/support/validation.ts';

const KEY = 'events/weekly-report.json';
const THREAD = 'slack:C123ABC:1234567890.123456';

function parseOk(body: unknown): EventFile {
  const result = parseEventFile(KEY, JSON.stringify(body));
  if (!result.ok) assert.fail(`expected a valid event, got: ${result.error}`);
  return result.event;
}

function parseError(body: unknown): string {
  const result = parseEventFile(KEY, typeof body === 'string' ? body : JSON.stringify(body));
  assert.equal(result.ok, false, `expected an error for ${JSON.stringify(body)}`);
  return result.ok ? '' : result.error;
}

test('an event file of each type parses, with its target', () => {
  const periodic = parseOk({
    type: 'periodic',
    threadId: THREAD,
    text: 'Check for new GitHub notifications',
    schedule: '0 9 * * 1-5',
    timezone: 'America/New_York',
  });
  assert.deepEqual(periodic, {
    type: 'periodic',
    threadId: THREAD,
    text: 'Check for new GitHub notifications',
    schedule: '0 9 * * 1-5',
    timezone: 'America/New_York',
  });
  assert.deepEqual(eventTarget(periodic), { kind: 'thread', threadId: THREAD });

  const oneShot = parseOk({
    type: 'one-shot',
    channelId: 'C123ABC',
    adapterId: 'slack',
    text: 'Time for the weekly report',
    schedule: '2025-03-01T09:00:00',
    timezone: 'America/New_York',
  });
  assert.equal(oneShot.type, 'one-shot');
  assert.deepEqual(eventTarget(oneShot), { kind: 'channel', adapterId: 'slack', channelId: 'C123ABC' });

  const immediate = parseOk({ type: 'immediate', threadId: THREAD, text: 'The deploy finished' });
  assert.deepEqual(immediate, { type: 'immediate', threadId: THREAD, text: 'The deploy finished' });
});

test('timezone defaults to UTC and is stored in canonical case; a BOM is ignored', () => {
  const event = parseOk({ type: 'one-shot', threadId: THREAD, text: 'x', schedule: '2026-01-01T09:00' });
  assert.equal(event.type === 'one-shot' && event.timezone, 'UTC');
  const lower = parseOk({ type: 'periodic', threadId: THREAD, text: 'x', schedule: '0 9 * * *', timezone: 'america/new_york' });
  assert.equal(lower.type === 'periodic' && lower.timezone, 'America/New_York');
  const bom = parseEventFile(KEY, `\uFEFF${JSON.stringify({ type: 'immediate', threadId: THREAD, text: 'x' })}`);
  assert.equal(bom.ok, true);
});

test('each invalid file gives one line naming the file and the field', () => {
  const base = { type: 'periodic', threadId: THREAD, text: 'hello', schedule: '0 9 * * 1-5', timezone: 'America/New_York' };
  const cases: Array<[string, unknown, RegExp[]]> = [
    ['not JSON', '{"type": "immediate",', [/not valid JSON \(.+\)/]],
    ['not an object', '[1, 2]', [/must hold a JSON object/, /an array/]],
    ['null', 'null', [/must hold a JSON object/]],
    ['missing type', { threadId: THREAD, text: 'x' }, [/"type" is missing/, /"immediate", "one-shot", "periodic"/]],
    ['unknown type', { ...base, type: 'oneshot' }, [/"type" "oneshot" is not an event type/, /did you mean "one-shot"/]],
    ['type not a string', { ...base, type: 3 }, [/"type"/, /"immediate", "one-shot", "periodic"/]],
    ['missing text', { type: 'immediate', threadId: THREAD }, [/"text" is missing/]],
    ['empty text', { type: 'immediate', threadId: THREAD, text: '   ' }, [/"text" is empty/]],
    ['text not a string', { type: 'immediate', threadId: THREAD, text: 42 }, [/"text" must be a string, not a number/]],
    [
      'text too long',
      // 33,000 four-byte characters: few characters, but over the byte limit.
      { type: 'immediate', threadId: THREAD, text: '😀'.repeat(33_000) },
      [/"text" is too long: it is 129 KB; the limit is 128 KB \(UTF-8\)/],
    ],
    ['no target', { type: 'immediate', text: 'x' }, [/no target/, /"threadId"/, /"adapterId" and "channelId"/]],
    [
      'both targets',
      { type: 'immediate', text: 'x', threadId: THREAD, adapterId: 'slack', channelId: 'C1' },
      [/either "threadId".*not both/],
    ],
    ['adapterId alone', { type: 'immediate', text: 'x', adapterId: 'slack' }, [/"adapterId" needs "channelId"/]],
    ['channelId alone', { type: 'immediate', text: 'x', channelId: 'C1' }, [/"channelId" needs "adapterId"/]],
    [
      'bad threadId',
      { type: 'immediate', text: 'x', threadId: 'C123ABC' },
      [/"threadId" "C123ABC" is not a thread id: expected adapter:channel:thread/],
    ],
    [
      'bad adapterId',
      { type: 'immediate', text: 'x', adapterId: 'Slack!', channelId: 'C1' },
      [/"adapterId" "Slack!" is not an adapter id/],
    ],
    ['cron: too few fields', { ...base, schedule: '0 9 * *' }, [/"schedule"/, /4 fields; expected 5/]],
    ['cron: seconds field', { ...base, schedule: '0 0 9 * * 1' }, [/"schedule"/, /6 fields/, /seconds and years are not supported/]],
    ['cron: minute range', { ...base, schedule: '60 9 * * *' }, [/"schedule"/, /the minute field "60": 60 is out of range \(0-59\)/]],
    ['cron: hour range', { ...base, schedule: '0 24 * * *' }, [/the hour field "24": 24 is out of range \(0-23\)/]],
    ['cron: day-of-month range', { ...base, schedule: '0 9 0 * *' }, [/the day-of-month field "0": 0 is out of range \(1-31\)/]],
    ['cron: month range', { ...base, schedule: '0 9 * 13 *' }, [/the month field "13": 13 is out of range \(1-12 or JAN-DEC\)/]],
    ['cron: month name', { ...base, schedule: '0 9 * JANUARY *' }, [/the month field "JANUARY"/, /JAN-DEC/]],
    ['cron: day-of-week range', { ...base, schedule: '0 9 * * 8' }, [/the day-of-week field "8": 8 is out of range \(0-7 or SUN-SAT/]],
    ['cron: backwards range', { ...base, schedule: '0 17-9 * * *' }, [/the hour field "17-9": range 17-9 runs backwards/]],
    ['cron: zero step', { ...base, schedule: '*/0 * * * *' }, [/the minute field "\*\/0": step 0 must be between 1 and 59/]],
    ['cron: numeric-prefix step', { ...base, schedule: '5/15 * * * *' }, [/the minute field "5\/15"/, /write "5-59\/15"/]],
    ['cron: question mark', { ...base, schedule: '0 9 ? * MON' }, [/the day-of-month field "\?"/, /use "\*"/]],
    ['cron: L', { ...base, schedule: '0 9 L * *' }, [/the day-of-month field "L": L and W .* not supported/]],
    ['cron: #', { ...base, schedule: '0 9 * * 1#2' }, [/the day-of-week field "1#2"/, /not supported/]],
    ['cron: nickname', { ...base, schedule: '@daily' }, [/"schedule"/, /nicknames/]],
    ['cron: EventBridge form', { ...base, schedule: 'cron(0 9 * * ? *)' }, [/"schedule"/, /plain 5-field cron/]],
    ['cron: never fires', { ...base, schedule: '0 9 30 2 *' }, [/"schedule" "0 9 30 2 \*" never fires/]],
    [
      'cron: both day-of-month and day-of-week',
      { ...base, schedule: '0 9 1 * MON' },
      [
        /"schedule" "0 9 1 \* MON" sets both day-of-month \("1"\) and day-of-week \("MON"\)/,
        /EventBridge Scheduler cannot express/,
        /two event files/,
        /"0 9 1 \* \*"/,
        /"0 9 \* \* MON"/,
      ],
    ],
    [
      'periodic with a date',
      { ...base, schedule: '2026-03-01T09:00:00' },
      [/"schedule" .* is a date and time; a periodic event needs a 5-field cron/, /one-shot/],
    ],
    [
      'periodic without schedule',
      { type: 'periodic', threadId: THREAD, text: 'x' },
      [/"schedule" is missing: a periodic event needs a 5-field cron/],
    ],
    [
      'one-shot: no T',
      { ...base, type: 'one-shot', schedule: '2026-03-01 09:00' },
      [/"schedule" "2026-03-01 09:00" is not a one-shot time: write YYYY-MM-DDTHH:MM\[:SS\]/],
    ],
    ['one-shot: date only', { ...base, type: 'one-shot', schedule: '2026-03-01' }, [/"schedule" "2026-03-01" is not a one-shot time/]],
    [
      'one-shot: impossible date',
      { ...base, type: 'one-shot', schedule: '2026-02-29T09:00:00' },
      [/"schedule" "2026-02-29T09:00:00" is not a real date and time: February 2026 has 28 days/],
    ],
    ['one-shot: impossible hour', { ...base, type: 'one-shot', schedule: '2026-03-01T24:00' }, [/"schedule" .* hour 24 is out of range/]],
    [
      'one-shot: cron',
      { ...base, type: 'one-shot', schedule: '0 9 * * *' },
      [/"schedule" "0 9 \* \* \*" is a cron expression/, /periodic/],
    ],
    ['one-shot without schedule', { type: 'one-shot', threadId: THREAD, text: 'x' }, [/"schedule" is missing: a one-shot event needs/]],
    ['unknown time zone', { ...base, timezone: 'America/NewYork' }, [/"timezone" "America\/NewYork" is not a known IANA time zone/]],
    ['offset as time zone', { ...base, timezone: '+05:30' }, [/"timezone" "\+05:30" is a UTC offset, not a time zone/]],
    ['timezone not a string', { ...base, timezone: 5 }, [/"timezone" must be a string/]],
    [
      'schedule on immediate',
      { type: 'immediate', threadId: THREAD, text: 'x', schedule: '0 9 * * *' },
      [/"schedule" is not allowed on an immediate event/, /"one-shot" or "periodic"/],
    ],
    [
      'timezone on immediate',
      { type: 'immediate', threadId: THREAD, text: 'x', timezone: 'UTC' },
      [/"timezone" is not allowed on an immediate event/],
    ],
    [
      'typo field',
      { type: 'periodic', threadId: THREAD, text: 'x', shedule: '0 9 * * *' },
      [/"schedule" is missing/, /unknown field "shedule" \(did you mean "schedule"\?\)/],
    ],
    [
      'unknown fields',
      { ...base, priority: 1, tags: [] },
      [/unknown fields "priority", "tags"/, /a periodic event has "type", .*"timezone"/],
    ],
  ];
  for (const [name, body, patterns] of cases) {
    const error = parseError(body);
    assert.ok(error.startsWith(`${KEY}: `), `${name}: the error names the file: ${error}`);
    assert.ok(!error.includes('\n'), `${name}: one line: ${error}`);
    for (const pattern of patterns) assert.match(error, pattern, `${name}`);
  }
});

test('several problems in one file are reported together, joined with "; "', () => {
  const error = parseError({ type: 'one-shot', text: '', schedule: 'tomorrow', timezone: 'Mars/Olympus' });
  assert.match(error, /"text" is empty/);
  assert.match(error, /"schedule" "tomorrow" is not a one-shot time/);
  assert.match(error, /"timezone" "Mars\/Olympus" is not a known IANA time zone/);
  assert.match(error, /no target/);
  assert.equal(error.split('; ').length, 4);
});

test('event file keys, error file keys', () => {
  assert.equal(isEventFileKey('events/report.json'), true);
  assert.equal(isEventFileKey('events/team/daily.json'), true);
  assert.equal(isEventFileKey('events/report.error.json'), false);
  assert.equal(isEventFileKey('events/report.txt'), false);
  assert.equal(isEventFileKey('events/'), false);
  assert.equal(isEventFileKey('events/.json'), false);
  assert.equal(isEventFileKey('other/report.json'), false);
  assert.equal(isEventFileKey('slack/C1/events/report.json'), false);
  assert.equal(errorFileKey('events/x.json'), 'events/x.error.json');
  assert.equal(errorFileKey('events/team/daily.json'), 'events/team/daily.error.json');
  assert.equal(isEventFileKey(errorFileKey('events/x.json')), false);
});

test('scheduleNameFor is deterministic, readable, and valid for long and unicode names', () => {
  const valid = /^[0-9A-Za-z._-]{1,64}$/;
  const name = scheduleNameFor('events/weekly-report.json');
  assert.equal(name, scheduleNameFor('events/weekly-report.json'));
  assert.match(name, /^ev-weekly-report-[0-9a-f]{8}$/);
  assert.match(scheduleNameFor('events/Weekly Report (v2).json'), /^ev-weekly-report-v2-[0-9a-f]{8}$/);
  assert.match(scheduleNameFor('events/Café déjà vu.json'), /^ev-cafe-deja-vu-[0-9a-f]{8}$/);
  assert.match(scheduleNameFor('events/週報.json'), /^ev-[0-9a-f]{8}$/);
  assert.match(scheduleNameFor('events/🎉.json'), /^ev-[0-9a-f]{8}$/);
  const long = scheduleNameFor(`events/${'very-long-name-'.repeat(20)}.json`);
  assert.match(long, valid);
  assert.ok(long.length <= 64);
  assert.ok(!long.includes('--'), long);
  for (const key of [
    'events/a.json',
    `events/${'x'.repeat(1000)}.json`,
    'events/ünïcödé 名前 ✓.json',
    'events/-.json',
    'events/a/b/c.json',
  ]) {
    assert.match(scheduleNameFor(key), valid, key);
  }
  // Same file name in two folders, and names equal after truncation, stay apart.
  assert.notEqual(scheduleNameFor('events/a/report.json'), scheduleNameFor('events/b/report.json'));
  assert.notEqual(scheduleNameFor(`events/${'x'.repeat(50)}1.json`), scheduleNameFor(`events/${'x'.repeat(50)}2.json`));
});

test('5-field cron converts to EventBridge cron', () => {
  const table: Array<[string, string]> = [
    ['0 9 * * 1-5', 'cron(0 9 ? * 2-6 *)'],
    ['30 8 1 * *', 'cron(30 8 1 * ? *)'],
    // EventBridge documents "0/15" (every 15 minutes from minute 0) for what cron writes "*/15".
    ['*/15 * * * *', 'cron(0/15 * * * ? *)'],
    ['* * * * *', 'cron(* * * * ? *)'],
    ['0 */2 * * *', 'cron(0 0/2 * * ? *)'],
    ['0 0 */5 * *', 'cron(0 0 1/5 * ? *)'],
    ['0 9 * * 0', 'cron(0 9 ? * 1 *)'],
    ['0 9 * * 7', 'cron(0 9 ? * 1 *)'],
    ['0 9 * * 0,7', 'cron(0 9 ? * 1 *)'],
    ['0 9 * * 6', 'cron(0 9 ? * 7 *)'],
    ['0 9 * * 5-7', 'cron(0 9 ? * 1,6,7 *)'],
    ['0 9 * * 1,3,5', 'cron(0 9 ? * 2,4,6 *)'],
    ['0 9 * * */2', 'cron(0 9 ? * 1,3,5,7 *)'],
    ['0 9 * * 1-5/2', 'cron(0 9 ? * 2,4,6 *)'],
    ['0 9 * * 0-6', 'cron(0 9 ? * 1-7 *)'],
    ['0 9 * * MON-FRI', 'cron(0 9 ? * MON-FRI *)'],
    ['0 9 * * mon,wed-fri', 'cron(0 9 ? * MON,WED-FRI *)'],
    ['0 9 * * FRI-SUN', 'cron(0 9 ? * 1,6,7 *)'],
    ['0 9 * * SUN', 'cron(0 9 ? * SUN *)'],
    ['0 0 1 jan,jul *', 'cron(0 0 1 JAN,JUL ? *)'],
    ['0 0 1 JAN-MAR *', 'cron(0 0 1 JAN-MAR ? *)'],
    ['15,45 8-17 * * *', 'cron(15,45 8-17 * * ? *)'],
    ['5-59/15 * * * *', 'cron(5/15 * * * ? *)'],
    ['10-40/10 * * * *', 'cron(10,20,30,40 * * * ? *)'],
    ['0 9 1,15 */3 *', 'cron(0 9 1,15 1/3 ? *)'],
  ];
  for (const [five, expected] of table) {
    const result = cronToEventBridge(five);
    assert.ok(result.ok, `${five}: ${result.ok ? '' : result.error}`);
    assert.equal(result.expression, expected, five);
  }
  const both = cronToEventBridge('0 9 1 * 1');
  assert.equal(both.ok, false);
});

test('toSchedulerExpression: one-shot → at() in the zone, periodic → cron()', () => {
  const periodic = parseOk({ type: 'periodic', threadId: THREAD, text: 'x', schedule: '0 9 * * 1-5', timezone: 'America/New_York' });
  assert.deepEqual(toSchedulerExpression(periodic), { expression: 'cron(0 9 ? * 2-6 *)', timezone: 'America/New_York' });

  const local = parseOk({ type: 'one-shot', threadId: THREAD, text: 'x', schedule: '2025-03-01T09:00', timezone: 'America/New_York' });
  assert.deepEqual(toSchedulerExpression(local), { expression: 'at(2025-03-01T09:00:00)', timezone: 'America/New_York' });

  // An absolute instant becomes the zone's wall time at that instant.
  const utc = parseOk({ type: 'one-shot', threadId: THREAD, text: 'x', schedule: '2025-03-01T14:00:00Z', timezone: 'America/New_York' });
  assert.deepEqual(toSchedulerExpression(utc), { expression: 'at(2025-03-01T09:00:00)', timezone: 'America/New_York' });
  const offset = parseOk({ type: 'one-shot', threadId: THREAD, text: 'x', schedule: '2025-03-01T09:00:00+05:30' });
  assert.deepEqual(toSchedulerExpression(offset), { expression: 'at(2025-03-01T03:30:00)', timezone: 'UTC' });
  const millis = parseOk({ type: 'one-shot', threadId: THREAD, text: 'x', schedule: '2025-03-01T03:30:00.789Z', timezone: 'Asia/Kolkata' });
  assert.deepEqual(toSchedulerExpression(millis), { expression: 'at(2025-03-01T09:00:00)', timezone: 'Asia/Kolkata' });

  // 06:30Z on 2026-11-01 is the second 01:30 in New York (EST); "at(01:30)" would mean the first
  // (EDT, 05:30Z), so the exact UTC form is used instead.
  const second = parseOk({ type: 'one-shot', threadId: THREAD, text: 'x', schedule: '2026-11-01T06:30:00Z', timezone: 'America/New_York' });
  assert.deepEqual(toSchedulerExpression(second), { expression: 'at(2026-11-01T06:30:00)', timezone: 'UTC' });
  const first = parseOk({ type: 'one-shot', threadId: THREAD, text: 'x', schedule: '2026-11-01T05:30:00Z', timezone: 'America/New_York' });
  assert.deepEqual(toSchedulerExpression(first), { expression: 'at(2026-11-01T01:30:00)', timezone: 'America/New_York' });

  const immediate = parseOk({ type: 'immediate', threadId: THREAD, text: 'x' });
  assert.throws(() => toSchedulerExpression(immediate), /immediate/);
});

test('one-shot local times become instants in their zone, DST included', () => {
  // In the spring-forward gap: the first valid instant after it, 03:00 EDT = 07:00Z.
  assert.equal(zonedLocalToInstant('2026-03-08T02:30:00', 'America/New_York').toISOString(), '2026-03-08T07:00:00.000Z');
  // Just before and after the gap.
  assert.equal(zonedLocalToInstant('2026-03-08T01:59:59', 'America/New_York').toISOString(), '2026-03-08T06:59:59.000Z');
  assert.equal(zonedLocalToInstant('2026-03-08T03:00:00', 'America/New_York').toISOString(), '2026-03-08T07:00:00.000Z');
  // Ambiguous (fall back): the first occurrence, 01:30 EDT = 05:30Z.
  assert.equal(zonedLocalToInstant('2026-11-01T01:30:00', 'America/New_York').toISOString(), '2026-11-01T05:30:00.000Z');
  // Europe/London: GMT in winter, BST (+01:00) in summer; its gap is 01:00-02:00 on 2026-03-29.
  assert.equal(zonedLocalToInstant('2026-01-15T09:00:00', 'Europe/London').toISOString(), '2026-01-15T09:00:00.000Z');
  assert.equal(zonedLocalToInstant('2026-07-01T09:00:00', 'Europe/London').toISOString(), '2026-07-01T08:00:00.000Z');
  assert.equal(zonedLocalToInstant('2026-03-29T01:30:00', 'Europe/London').toISOString(), '2026-03-29T01:00:00.000Z');
  // Asia/Kolkata: +05:30 all year.
  assert.equal(zonedLocalToInstant('2026-03-01T09:00:00', 'Asia/Kolkata').toISOString(), '2026-03-01T03:30:00.000Z');
  assert.equal(zonedLocalToInstant('2026-03-01T00:15', 'Asia/Kolkata').toISOString(), '2026-02-28T18:45:00.000Z');
  // A half-hour DST shift (Lord Howe Island, 02:00 → 02:30 on 2026-10-04).
  assert.equal(zonedLocalToInstant('2026-10-04T02:10:00', 'Australia/Lord_Howe').toISOString(), '2026-10-03T15:30:00.000Z');
  // A gap across midnight (Nuuk jumps 23:00 → 00:00 on 2026-03-28): the next day's 00:00 (-01:00).
  assert.equal(zonedLocalToInstant('2026-03-28T23:30:00', 'America/Nuuk').toISOString(), '2026-03-29T01:00:00.000Z');
  assert.equal(zonedLocalToInstant('2026-03-28T22:59:59', 'America/Nuuk').toISOString(), '2026-03-29T00:59:59.000Z');
  assert.equal(zonedLocalToInstant('2026-03-01T09:00:00', 'UTC').toISOString(), '2026-03-01T09:00:00.000Z');
  assert.throws(() => zonedLocalToInstant('2026-02-30T09:00:00', 'UTC'), /February/);
  assert.throws(() => zonedLocalToInstant('2026-03-01T09:00:00', 'Nowhere/Special'));
});

test('one-shot events: fire instant and isPast', () => {
  const event = parseOk({
    type: 'one-shot',
    threadId: THREAD,
    text: 'x',
    schedule: '2026-03-01T09:00:00',
    timezone: 'Asia/Kolkata',
  }) as OneShotEvent;
  assert.equal(oneShotInstant(event).toISOString(), '2026-03-01T03:30:00.000Z');
  assert.equal(isPast(event, new Date('2026-03-01T03:29:59Z')), false);
  assert.equal(isPast(event, new Date('2026-03-01T03:30:00Z')), false); // due, not past
  assert.equal(isPast(event, new Date('2026-03-01T03:30:01Z')), true);
  const absolute = parseOk({
    type: 'one-shot',
    threadId: THREAD,
    text: 'x',
    schedule: '2026-03-01T09:00:00-05:00',
    timezone: 'Europe/London',
  }) as OneShotEvent;
  assert.equal(oneShotInstant(absolute).toISOString(), '2026-03-01T14:00:00.000Z');
  const periodic = parseOk({ type: 'periodic', threadId: THREAD, text: 'x', schedule: '0 9 * * *' });
  const immediate = parseOk({ type: 'immediate', threadId: THREAD, text: 'x' });
  assert.equal(isPast(periodic, new Date('2100-01-01T00:00:00Z')), false);
  assert.equal(isPast(immediate, new Date('2100-01-01T00:00:00Z')), false);
});

test('firings and bus events follow the target rule of event files, with the same sentences', () => {
  const firing = { kind: 'bus', origin: 'my.ci Deploy', firingId: 'bus-1', text: 'green' };
  assert.ok(firingSchema.safeParse({ ...firing, threadId: THREAD }).success);
  assert.ok(firingSchema.safeParse({ ...firing, adapterId: 'slack', channelId: 'C123ABC' }).success);
  const both = busDetailSchema.safeParse({ text: 'green', threadId: THREAD, adapterId: 'slack' });
  assert.ok(!both.success);
  assert.match(formatIssues(both.error), /^\(root\): set either "threadId" .* not both: remove "adapterId" or "threadId"$/);
  const file = parseEventFile(KEY, JSON.stringify({ type: 'immediate', text: 'green', threadId: THREAD, adapterId: 'slack' }));
  assert.ok(!file.ok);
  assert.equal(file.error, `${KEY}: ${both.error.issues[0]!.message}`);
  const badThread = firingSchema.safeParse({ ...firing, threadId: 'not a thread' });
  assert.ok(!badThread.success);
  assert.match(formatIssues(badThread.error), /^threadId: "threadId" "not a thread" is not a thread id/);
  assert.ok(!busDetailSchema.safeParse({ text: 'green', threadId: THREAD, extra: 1 }).success, 'the bus detail is strict');
});

test("a channel's event file acts only in its channel; a file without a target starts a thread there", () => {
  const own = parseEventFile('events/slack/C123ABC/r.json', JSON.stringify({ type: 'immediate', text: 'hi' }));
  assert.ok(own.ok);
  assert.deepEqual(eventTarget(own.event), { kind: 'channel', adapterId: 'slack', channelId: 'C123ABC' });
  const thread = parseEventFile('events/slack/C123ABC/r.json', JSON.stringify({ type: 'immediate', threadId: THREAD, text: 'hi' }));
  assert.ok(thread.ok);
  const elsewhere = parseEventFile(
    'events/slack/C123ABC/r.json',
    JSON.stringify({ type: 'immediate', threadId: 'slack:C999:1.2', text: 'hi' }),
  );
  assert.equal(elsewhere.ok, false);
  assert.match(elsewhere.ok ? '' : elsewhere.error, /outside this file's channel.*slack:C123ABC/);
  const other = parseEventFile(
    'events/slack/C123ABC/r.json',
    JSON.stringify({ type: 'immediate', adapterId: 'slack', channelId: 'C999', text: 'hi' }),
  );
  assert.equal(other.ok, false);
  const misplaced = parseEventFile('events/slack/r.json', JSON.stringify({ type: 'immediate', threadId: THREAD, text: 'hi' }));
  assert.match(misplaced.ok ? '' : misplaced.error, /belong in a channel's folder/);
  // Operators' files, in any other folder, reach anywhere.
  assert.ok(parseEventFile('events/ops/r.json', JSON.stringify({ type: 'immediate', threadId: 'slack:C999:1.2', text: 'hi' })).ok);
});

test('periodic events faster than the minimum interval are refused', () => {
  const at = (schedule: string, minIntervalMinutes?: number) =>
    parseEventFile(KEY, JSON.stringify({ type: 'periodic', threadId: THREAD, text: 'x', schedule }), { minIntervalMinutes });
  assert.match(
    (at('* * * * *') as { error: string }).error,
    /fires every 1 minute at its fastest; the minimum interval between firings is 5 minutes/,
  );
  assert.equal(at('*/5 * * * *').ok, true);
  assert.equal(at('0,3 9 * * *').ok, false);
  assert.equal(at('0,55 9 * * *').ok, true, '9:55 and the next 9:00 are far apart');
  assert.equal(at('55 9,10 * * *').ok, true);
  assert.equal(at('0,58 9,10 * * *').ok, false, '9:58 to 10:00');
  assert.equal(at('* * * * *', 1).ok, true);
});

test('interval schedules: "every 30m" becomes rate(30 minutes); bad intervals and the minimum interval are refused', () => {
  const at = (schedule: string, minIntervalMinutes?: number) =>
    parseEventFile(KEY, JSON.stringify({ type: 'periodic', threadId: THREAD, text: 'x', schedule }), { minIntervalMinutes });
  const expression = (schedule: string) => {
    const parsed = at(schedule);
    if (!parsed.ok) assert.fail(parsed.error);
    return toSchedulerExpression(parsed.event as Extract<EventFile, { type: 'periodic' }>).expression;
  };
  assert.equal(expression('every 30m'), 'rate(30 minutes)');
  assert.equal(expression('every 1 hour'), 'rate(1 hour)');
  assert.equal(expression('Every 2h'), 'rate(2 hours)');
  assert.equal(expression('every 1d'), 'rate(1 day)');
  assert.equal(expression('every 90 minutes'), 'rate(90 minutes)');
  assert.match(
    (at('every 3m') as { error: string }).error,
    /fires every 3 minutes at its fastest; the minimum interval between firings is 5 minutes/,
  );
  assert.equal(at('every 3m', 1).ok, true);
  assert.match(
    (at('every 30 fortnights') as { error: string }).error,
    /"schedule" "every 30 fortnights" is not an interval: write "every N"/,
  );
  assert.match((at('every 0m') as { error: string }).error, /needs an interval of at least 1/);
  assert.match((at('every 400d') as { error: string }).error, /longer than a year/);
  assert.match((at('every half hour') as { error: string }).error, /is not an interval/);
});

test('event file names, and folder names below events/, use only letters, digits, ".", "_" and "-"', () => {
  const body = JSON.stringify({ type: 'immediate', text: 'hi' });
  for (const key of [
    'events/slack/C123ABC/daily_report-2.v1.json',
    'events/ops/weekly.json',
    'events/teams/19%3Aabc%40thread.tacv2/x.json',
  ]) {
    assert.ok(
      parseEventFile(key, key.startsWith('events/ops') ? JSON.stringify({ type: 'immediate', threadId: THREAD, text: 'hi' }) : body).ok,
      key,
    );
  }
  const refused = [
    'events/slack/C123ABC/\u001b[2J\u001b[Hforged.json',
    'events/slack/C123ABC/x```<!channel>.json',
    'events/slack/C123ABC/two words.json',
    'events/slack/C123ABC/sub folder/x.json',
    'events/ops\u202e/x.json',
    'events/Weekly Report.json',
  ];
  for (const key of refused) {
    const result = parseEventFile(key, body);
    assert.equal(result.ok, false, key);
    const error = result.ok ? '' : result.error;
    assert.match(error, /may use only letters, digits, "\.", "_" and "-"/, key);
    // The refused name is quoted, never printed as it is.
    assert.doesNotMatch(error, /[\u0000-\u001f\u202e]/);
  }
  // A channel's folder is its id encoded as in the data tree, and nothing else.
  const folder = parseEventFile('events/teams/19:abc@thread.tacv2/x.json', body);
  assert.match(folder.ok ? '' : folder.error, /should be named "19%3Aabc%40thread\.tacv2"/);
});
