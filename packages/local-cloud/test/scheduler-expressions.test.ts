// The local Scheduler's reading of EventBridge Scheduler expressions and its fire times: what the
// stack emits (cronToEventBridge) reads back to the same schedule, and cron fires around DST as
// EventBridge documents it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Cron } from 'croner';
import { cronToEventBridge } from '../../../shared/events/schedule-expressions.ts';
import { fromSchedulerExpression } from '../src/scheduler/expressions.ts';
import { nextFireTime } from '../src/scheduler/next-fire.ts';

const iso = (d: Date | null) => d?.toISOString();

test('fromSchedulerExpression reads at(), cron() and rate() back', () => {
  assert.deepEqual(fromSchedulerExpression('at(2026-03-08T02:30:00)'), { kind: 'at', local: '2026-03-08T02:30:00' });
  assert.deepEqual(fromSchedulerExpression('cron(0 9 ? * 2-6 *)'), { kind: 'cron', fiveField: '0 9 * * 1-5' });
  assert.deepEqual(fromSchedulerExpression('cron(30 8 1 * ? *)'), { kind: 'cron', fiveField: '30 8 1 * *' });
  assert.deepEqual(fromSchedulerExpression('cron(0/15 * * * ? *)'), { kind: 'cron', fiveField: '*/15 * * * *' });
  assert.deepEqual(fromSchedulerExpression('cron(5/15 * * * ? *)'), { kind: 'cron', fiveField: '5-59/15 * * * *' });
  assert.deepEqual(fromSchedulerExpression('cron(0 10 * * ? *)'), { kind: 'cron', fiveField: '0 10 * * *' });
  assert.deepEqual(fromSchedulerExpression('cron(0 18 ? * MON-FRI *)'), { kind: 'cron', fiveField: '0 18 * * MON-FRI' });
  assert.deepEqual(fromSchedulerExpression('cron(0 9 ? * 1,7 *)'), { kind: 'cron', fiveField: '0 9 * * 0,6' });
  assert.deepEqual(fromSchedulerExpression('cron(0 9 ? * * *)'), { kind: 'cron', fiveField: '0 9 * * *' });
  assert.deepEqual(fromSchedulerExpression('rate(1 minute)'), { kind: 'rate', ms: 60_000 });
  assert.deepEqual(fromSchedulerExpression('rate(5 minutes)'), { kind: 'rate', ms: 300_000 });
  assert.deepEqual(fromSchedulerExpression('rate(2 hours)'), { kind: 'rate', ms: 7_200_000 });
  assert.deepEqual(fromSchedulerExpression('rate(1 day)'), { kind: 'rate', ms: 86_400_000 });

  const invalid: Array<[string, RegExp]> = [
    ['cron(0 9 L * ? *)', /L, W and #/],
    ['cron(0 9 15W * ? *)', /L, W and #/],
    ['cron(0 9 ? * 3#2 *)', /L, W and #/],
    ['cron(0 9 ? * 6L *)', /L, W and #/],
    ['cron(0 9 * * * *)', /exactly one of day-of-month and day-of-week must be "\?"/],
    ['cron(0 9 ? * ? *)', /exactly one/],
    ['cron(0 9 * * ? 2027)', /year/],
    ['cron(0 9 * * ?)', /6 fields/],
    ['cron(0 9 ? * 0 *)', /out of range \(1-7\)/],
    ['cron(0 9 ? * */2 *)', /"\/" is not allowed in the day-of-week field/],
    ['rate(1 minutes)', /use "minute"/],
    ['rate(5 minute)', /use "minutes"/],
    ['rate(0 minutes)', /positive/],
    ['rate(5 weeks)', /unit/],
    ['at(2026-02-30T09:00:00)', /real date/],
    ['at(2026-03-01T09:00)', /yyyy-mm-ddThh:mm:ss/],
    ['0 9 * * *', /not an at\(\), cron\(\) or rate\(\)/],
  ];
  for (const [expression, pattern] of invalid) {
    const parsed = fromSchedulerExpression(expression);
    assert.equal(parsed.kind, 'invalid', expression);
    assert.match(parsed.kind === 'invalid' ? parsed.error : '', pattern, expression);
  }
});

test('cron round-trips through EventBridge form with the same fire times', () => {
  const crons = [
    '0 9 * * 1-5',
    '30 8 1 * *',
    '*/15 * * * *',
    '0 9 * * */2',
    '0 9 * * 5-7',
    '0 9 * * FRI-SUN',
    '10-40/10 8-17 * * *',
    '0 0 1 jan,jul *',
    '0 0 */5 * *',
    '0 9 * * 0,7',
    '0 12 * * sat,sun',
    '45 23 28-31 2 *',
  ];
  const from = new Date('2026-01-01T00:00:00Z');
  for (const five of crons) {
    const eb = cronToEventBridge(five);
    assert.ok(eb.ok, five);
    const back = fromSchedulerExpression(eb.expression);
    assert.equal(back.kind, 'cron', `${five} → ${eb.expression}`);
    if (back.kind !== 'cron') continue;
    const runs = (pattern: string) =>
      new Cron(pattern, { timezone: 'Europe/Berlin', paused: true, mode: '5-part' }).nextRuns(40, from).map((d) => d.toISOString());
    assert.deepEqual(runs(back.fiveField), runs(five), `${five} → ${eb.expression} → ${back.fiveField}`);
  }
  // Exact text where the forms allow it.
  for (const five of ['0 9 * * 1-5', '30 8 1 * *', '*/15 * * * *', '0 9 * * MON-FRI', '0 0 1 JAN,JUL *']) {
    const eb = cronToEventBridge(five);
    assert.deepEqual(fromSchedulerExpression(eb.ok ? eb.expression : ''), { kind: 'cron', fiveField: five });
  }
});

test('DST: 09:00 daily in New York is 14:00Z in winter (EST) and 13:00Z in summer (EDT)', () => {
  const daily = 'cron(0 9 * * ? *)';
  const tz = 'America/New_York';
  // Spring forward on Sunday 2026-03-08.
  assert.equal(iso(nextFireTime(daily, tz, new Date('2026-03-07T00:00:00Z'))), '2026-03-07T14:00:00.000Z');
  assert.equal(iso(nextFireTime(daily, tz, new Date('2026-03-07T14:00:00Z'))), '2026-03-08T13:00:00.000Z'); // strictly after
  assert.equal(iso(nextFireTime(daily, tz, new Date('2026-03-09T00:00:00Z'))), '2026-03-09T13:00:00.000Z');
  // Fall back on Sunday 2026-11-01.
  assert.equal(iso(nextFireTime(daily, tz, new Date('2026-10-31T00:00:00Z'))), '2026-10-31T13:00:00.000Z');
  assert.equal(iso(nextFireTime(daily, tz, new Date('2026-10-31T13:00:00Z'))), '2026-11-01T14:00:00.000Z');
  assert.equal(iso(nextFireTime(daily, tz, new Date('2026-11-02T00:00:00Z'))), '2026-11-02T14:00:00.000Z');
  // Weekdays only: Friday 2026-03-06 → Monday 2026-03-09 (EDT by then).
  assert.equal(iso(nextFireTime('cron(0 9 ? * 2-6 *)', tz, new Date('2026-03-06T14:00:00Z'))), '2026-03-09T13:00:00.000Z');
});

test('DST gap: 30 2 * * * on 2026-03-08 in New York (02:30 does not exist)', () => {
  const tz = 'America/New_York';
  const after = new Date('2026-03-08T00:00:00Z');
  // croner treats a single minute and hour as a "fixed-time" job and runs it at the first valid
  // time after the gap: 03:00 EDT = 07:00Z.
  assert.equal(iso(new Cron('30 2 * * *', { timezone: tz, paused: true }).nextRun(after)), '2026-03-08T07:00:00.000Z');
  assert.equal(iso(nextFireTime('cron(30 2 * * ? *)', tz, after, { dst: 'croner' })), '2026-03-08T07:00:00.000Z');
  // EventBridge Scheduler documents that such an invocation is skipped; the stand-in does the
  // same by default: the next run is 02:30 EDT on 2026-03-09 = 06:30Z.
  assert.equal(iso(nextFireTime('cron(30 2 * * ? *)', tz, after)), '2026-03-09T06:30:00.000Z');
  // An interval job simply has no runs inside the gap (both modes).
  for (const dst of ['eventbridge', 'croner'] as const) {
    const runs: string[] = [];
    let t = new Date('2026-03-08T06:15:00Z');
    for (let i = 0; i < 3; i++) runs.push(iso((t = nextFireTime('cron(0/30 * * * ? *)', tz, t, { dst })!))!);
    assert.deepEqual(runs, ['2026-03-08T06:30:00.000Z', '2026-03-08T07:00:00.000Z', '2026-03-08T07:30:00.000Z'], dst);
  }
});

test('DST overlap: a repeated wall time fires once (EventBridge) while croner runs interval jobs twice', () => {
  const tz = 'America/New_York';
  // 01:30 happens twice on 2026-11-01: 05:30Z (EDT) and 06:30Z (EST). Fixed-time: once, first.
  assert.equal(iso(nextFireTime('cron(30 1 * * ? *)', tz, new Date('2026-11-01T04:00:00Z'))), '2026-11-01T05:30:00.000Z');
  assert.equal(iso(nextFireTime('cron(30 1 * * ? *)', tz, new Date('2026-11-01T05:30:00Z'))), '2026-11-02T06:30:00.000Z');
  const series = (dst: 'eventbridge' | 'croner') => {
    const runs: string[] = [];
    let t = new Date('2026-11-01T04:45:00Z');
    for (let i = 0; i < 4; i++) runs.push(iso((t = nextFireTime('cron(0/30 * * * ? *)', tz, t, { dst })!))!);
    return runs;
  };
  assert.deepEqual(series('croner'), [
    '2026-11-01T05:00:00.000Z',
    '2026-11-01T05:30:00.000Z',
    '2026-11-01T06:00:00.000Z',
    '2026-11-01T06:30:00.000Z',
  ]);
  assert.deepEqual(series('eventbridge'), [
    '2026-11-01T05:00:00.000Z',
    '2026-11-01T05:30:00.000Z',
    '2026-11-01T07:00:00.000Z',
    '2026-11-01T07:30:00.000Z',
  ]);
});

test('one-shot at() times: in a DST gap the first valid instant after it; a past one is answered too', () => {
  // In the spring-forward gap: the first valid instant after it, 03:00 EDT = 07:00Z.
  assert.equal(
    iso(nextFireTime('at(2026-03-08T02:30:00)', 'America/New_York', new Date('2026-01-01T00:00:00Z'))),
    '2026-03-08T07:00:00.000Z',
  );
  // at() is answered even when it is before `after`: the caller decides what a past one-shot means.
  assert.equal(iso(nextFireTime('at(2020-01-01T00:00:00)', 'UTC', new Date('2026-01-01T00:00:00Z'))), '2020-01-01T00:00:00.000Z');
});

test('nextFireTime: rate adds to `after`; an invalid expression throws', () => {
  assert.equal(iso(nextFireTime('rate(5 minutes)', 'UTC', new Date('2026-01-01T00:00:00Z'))), '2026-01-01T00:05:00.000Z');
  assert.throws(() => nextFireTime('cron(0 9 L * ? *)', 'UTC', new Date()), /Invalid schedule expression/);
  assert.throws(() => nextFireTime('every day', 'UTC', new Date()), /Invalid schedule expression/);
});
