// Schedule expressions for event files: the 5-field cron users write, the one-shot
// times they write, and the EventBridge Scheduler expressions (`at(...)`, `cron(...)`, `rate(...)`)
// they become. Pure functions: no I/O, no clock (callers pass `now`/`after`).
//
// croner does the calendar work: it reads cron into the minutes, hours, days and months it selects,
// finds runs, and converts between instants and wall times in an IANA zone (DST included). Ours are
// the rules of the user-facing form, the messages for what it refuses, and the translation to
// EventBridge syntax.
//
// Decisions, in one place:
// - User cron is classic 5-field cron (minute hour day-of-month month day-of-week), its common
//   subset: `*`, lists `,`, ranges `-`, steps `/` after `*` or a range, month names JAN-DEC and
//   day names SUN-SAT (case-insensitive). Day-of-week 0-7 with 0 and 7 = Sunday; a name range may
//   end in SUN (`FRI-SUN` = Friday to Sunday), as in croner and Vixie cron. Not accepted: `?`, `L`,
//   `W`, `#`, `@daily`-style nicknames, seconds or year fields, `5/15` (write `5-59/15`), steps
//   larger than the field's span, ranges that run backwards.
// - EventBridge cron is 6-field with a year, days of week 1-7 (1 = Sunday), and exactly one of
//   day-of-month/day-of-week set to `?`. Classic cron (and croner, whose default is the same OR)
//   fires when a restricted day-of-month or a restricted day-of-week matches; EventBridge cannot
//   express that, so such a cron is rejected (see schema.ts) and the OR never comes into play.
// - Conversion only emits forms the EventBridge documentation shows: `*/n` becomes `<min>/n`
//   (`*/15` → `0/15`, documented as "every 15 minutes starting at 0"); a stepped range that runs
//   to the field's end becomes `<start>/n`, any other stepped range is written out as a list;
//   day-of-week never uses `/` (EventBridge does not allow it there), so a stepped or numeric
//   day-of-week is converted value by value (`1-5` → `2-6`, `*/2` → `1,3,5,7`, `0,7` → `1`).
// - Time zones are IANA names, checked with Intl. One-shot times are local wall times in the
//   event's zone (default UTC); a trailing `Z` or offset makes them absolute instants instead.
// - DST. EventBridge Scheduler skips a cron time that does not exist (spring forward) and runs a
//   time that occurs twice (fall back) once. One-shot times are ours to resolve, since `at()` takes
//   a wall time: a local time inside a gap fires at the first valid instant after it (02:30 on a
//   02:00→03:00 day fires at 03:00), so nothing fires later than the moment the requested time has
//   been reached, and an ambiguous local time fires at its first occurrence. That is how croner
//   runs a job at one fixed time (see zonedLocalToInstant).
import { Cron, CronDate, CronPattern } from 'croner';

export const MONTH_NAMES = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'] as const;
export const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] as const;

type Result<T> = { ok: true; value: T } | { ok: false; error: string };
const fail = (error: string) => ({ ok: false as const, error });

// ---------------------------------------------------------------------------------------------
// Time zones and wall times
// ---------------------------------------------------------------------------------------------

interface WallTime {
  year: number;
  month: number; // 1-12
  day: number;
  hour: number;
  minute: number;
  second: number;
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

function formatWall(w: WallTime): string {
  return `${pad(w.year, 4)}-${pad(w.month)}-${pad(w.day)}T${pad(w.hour)}:${pad(w.minute)}:${pad(w.second)}`;
}

/** Throws RangeError for a zone Intl does not know. */
const zoneFormat = (timeZone: string) => new Intl.DateTimeFormat('en-US', { timeZone });

/**
 * Why a time zone name is not usable, or null when it is. IANA names as Intl knows them (so also
 * `UTC` and links like `US/Eastern`); numeric offsets such as `+05:30` are refused even where a
 * newer Intl accepts them, because EventBridge Scheduler wants a zone name.
 */
export function timeZoneProblem(timeZone: string): string | null {
  if (/^\s*[+\-\u2212]?\d/.test(timeZone) || /^(UTC|GMT)\s*[+-]/i.test(timeZone)) {
    return 'is a UTC offset, not a time zone: use an IANA name such as "Asia/Kolkata" or "America/New_York"';
  }
  try {
    zoneFormat(timeZone);
    return null;
  } catch {
    return 'is not a known IANA time zone (such as "America/New_York", "Europe/London" or "UTC")';
  }
}

let supportedZones: string[] | undefined;

/**
 * The spelling of a valid zone to store and send to EventBridge: Intl matches zone names without
 * regard to case, EventBridge may not, so `america/new_york` becomes `America/New_York`. Nothing
 * else is rewritten (Intl versions disagree about links such as `Asia/Calcutta`, and the user's
 * spelling works everywhere Intl accepted it).
 */
export function canonicalTimeZone(timeZone: string): string {
  const resolved = zoneFormat(timeZone).resolvedOptions().timeZone;
  if (resolved === timeZone) return timeZone;
  const lower = timeZone.toLowerCase();
  if (resolved.toLowerCase() === lower) return resolved;
  supportedZones ??= typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  return supportedZones.find((z) => z.toLowerCase() === lower) ?? timeZone;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/**
 * The instant at which the wall clock in `timeZone` reads `local` (`YYYY-MM-DDTHH:MM[:SS]`).
 * - A local time that exists once: that instant.
 * - Ambiguous (it occurs twice when clocks fall back): the first occurrence.
 * - Nonexistent (skipped when clocks spring forward): the first valid instant after it, i.e. the
 *   moment of the transition: 02:30 on a day that jumps 02:00 → 03:00 gives 03:00 (new offset).
 *   This differs from Temporal's "compatible" rule (which would give 03:30) on purpose: nothing
 *   fires later than the first moment the requested time has been reached.
 * These are croner's rules for a job at one fixed time of day, so the answer is the first run of
 * a 7-field cron (seconds … year) naming exactly that second. croner moves a job out of a gap only
 * within the day, so a gap that crosses midnight (Nuuk's, 23:00 → 00:00) is asked again as the next
 * day's 00:00:00, where that gap ends. Throws on a malformed local time or an unknown zone.
 */
export function zonedLocalToInstant(local: string, timeZone: string): Date {
  const parsed = parseLocalDateTime(local);
  if (!parsed.ok) throw new Error(`Not a local date-time (YYYY-MM-DDTHH:MM[:SS]): ${JSON.stringify(local)}: ${parsed.error}`);
  const nextMidnight = `${new Date(Date.parse(`${parsed.local.slice(0, 10)}T00:00:00Z`) + DAY_MS).toISOString().slice(0, 10)}T00:00:00`;
  const instant = firstInstantReading(parsed.local, timeZone) ?? firstInstantReading(nextMidnight, timeZone);
  if (!instant) throw new Error(`${parsed.local} does not occur in ${timeZone}`);
  return instant;
}

/** croner's run of a job at exactly `local` (`YYYY-MM-DDTHH:MM:SS`) in the zone, or null. */
function firstInstantReading(local: string, timeZone: string): Date | null {
  const [year, month, day, hour, minute, second] = local.split(/[-T:]/);
  const once = new Cron(`${second} ${minute} ${hour} ${day} ${month} * ${year}`, { timezone: timeZone, mode: '7-part', paused: true });
  // UTC offsets lie between -12:00 and +14:00.
  return once.nextRun(new Date(Date.parse(`${local}Z`) - 15 * HOUR_MS));
}

/** The local wall time (`YYYY-MM-DDTHH:MM:SS`) in `timeZone` at `instant` (seconds truncated). */
export function instantToZonedLocal(instant: Date, timeZone: string): string {
  const d = new CronDate(instant, timeZone);
  return formatWall({ year: d.year, month: d.month + 1, day: d.day, hour: d.hour, minute: d.minute, second: d.second });
}

// ---------------------------------------------------------------------------------------------
// One-shot times
// ---------------------------------------------------------------------------------------------

export type OneShotTime =
  | { kind: 'local'; local: string } // `YYYY-MM-DDTHH:MM:SS`, read in the event's time zone
  | { kind: 'instant'; instant: Date }; // had `Z` or an offset; whole seconds

const ONE_SHOT_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/;
const LOCAL_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/;

/** Days in a month of a year (years 0-99 included, which Date.UTC would move to the 1900s). */
const daysInMonth = (year: number, month: number) => new Date(new Date(0).setUTCFullYear(year, month, 0)).getUTCDate();
const monthName = new Intl.DateTimeFormat('en-US', { month: 'long', timeZone: 'UTC' });

function checkWall(w: WallTime): string | null {
  if (w.month < 1 || w.month > 12) return `month ${pad(w.month)} does not exist`;
  const days = daysInMonth(w.year, w.month);
  if (w.day < 1 || w.day > days) return `${monthName.format(Date.UTC(2000, w.month - 1))} ${w.year} has ${days} days, not ${w.day}`;
  if (w.hour > 23) return `hour ${w.hour} is out of range (00-23)`;
  if (w.minute > 59) return `minute ${w.minute} is out of range (00-59)`;
  if (w.second > 59) return `second ${w.second} is out of range (00-59)`;
  return null;
}

/** The date-time fields of a LOCAL_RE / ONE_SHOT_RE match (groups 1-6). */
function wallFromMatch(m: RegExpExecArray): WallTime {
  const [year, month, day, hour, minute] = m.slice(1, 6).map(Number) as [number, number, number, number, number];
  return { year, month, day, hour, minute, second: Number(m[6] ?? 0) };
}

/** Strict `YYYY-MM-DDTHH:MM[:SS]` (no offset), a real calendar date. */
export function parseLocalDateTime(text: string): { ok: true; local: string } | { ok: false; error: string } {
  const m = LOCAL_RE.exec(text);
  if (!m) return fail('expected YYYY-MM-DDTHH:MM[:SS]');
  const wall = wallFromMatch(m);
  const problem = checkWall(wall);
  return problem ? fail(problem) : { ok: true, local: formatWall(wall) };
}

/**
 * A one-shot `schedule`: `YYYY-MM-DDTHH:MM[:SS]` is a local wall time (read in the event's time
 * zone); with a trailing `Z` or `±HH:MM` it is an absolute instant. Fractional seconds are
 * accepted (so `new Date().toISOString()` works) and dropped: `at()` has whole seconds, and
 * EventBridge fires within the minute anyway.
 */
export function parseOneShotTime(text: string): { ok: true; time: OneShotTime } | { ok: false; error: string } {
  const m = ONE_SHOT_RE.exec(text);
  if (!m) return fail('format');
  const wall = wallFromMatch(m);
  const problem = checkWall(wall);
  if (problem) return fail(problem);
  const zone = m[7];
  if (zone === undefined) return { ok: true, time: { kind: 'local', local: formatWall(wall) } };
  if (zone !== 'Z' && (Number(zone.slice(1, 3)) > 23 || Number(zone.slice(-2)) > 59)) return fail(`offset ${zone} is out of range`);
  const offset = zone === 'Z' ? zone : `${zone.slice(0, 3)}:${zone.slice(-2)}`;
  return { ok: true, time: { kind: 'instant', instant: new Date(`${formatWall(wall)}${offset}`) } };
}

// ---------------------------------------------------------------------------------------------
// 5-field cron (what users write)
// ---------------------------------------------------------------------------------------------

type FieldName = 'minute' | 'hour' | 'day-of-month' | 'month' | 'day-of-week';

interface FieldSpec {
  name: FieldName;
  min: number;
  max: number;
  /** Upper bound of `*` (day-of-week: 6, as 7 is Sunday again). */
  starMax: number;
  /** names[i] is the value min + i. */
  names?: readonly string[];
  /** The values, as error messages show them. */
  range: string;
}

const CRON_FIELDS: readonly FieldSpec[] = [
  { name: 'minute', min: 0, max: 59, starMax: 59, range: '0-59' },
  { name: 'hour', min: 0, max: 23, starMax: 23, range: '0-23' },
  { name: 'day-of-month', min: 1, max: 31, starMax: 31, range: '1-31' },
  { name: 'month', min: 1, max: 12, starMax: 12, names: MONTH_NAMES, range: '1-12 or JAN-DEC' },
  { name: 'day-of-week', min: 0, max: 7, starMax: 6, names: DAY_NAMES, range: '0-7 or SUN-SAT; 0 and 7 are Sunday' },
];

/** One list item of a field (a star, a value or a range, each with an optional step), as written. */
interface CronItem {
  star: boolean;
  start: number;
  end: number;
  step: number | null;
  /** Both ends were written as names (MON, JAN). */
  named: boolean;
}

export interface CronField {
  name: FieldName;
  text: string;
  /** Exactly `*`: unrestricted. */
  star: boolean;
  items: CronItem[];
}

export interface ParsedCron {
  minute: CronField;
  hour: CronField;
  dayOfMonth: CronField;
  month: CronField;
  dayOfWeek: CronField;
  /** croner's reading: the values each field selects, and what finds runs. */
  pattern: CronPattern;
}

function parseCronValue(token: string, spec: FieldSpec, position: 'start' | 'end'): Result<{ n: number; named: boolean }> {
  if (/^\d+$/.test(token)) {
    const n = Number(token);
    if (n < spec.min || n > spec.max) return fail(`${n} is out of range (${spec.range})`);
    return { ok: true, value: { n, named: false } };
  }
  const i = spec.names?.indexOf(token.toUpperCase()) ?? -1;
  // A range ending in SUN means "through Sunday" (7), as croner reads it.
  if (i >= 0)
    return { ok: true, value: { n: spec.name === 'day-of-week' && i === 0 && position === 'end' ? 7 : i + spec.min, named: true } };
  if (/^(L|LW|\d*[LW]|[a-z]{3}L)$/i.test(token)) return fail('L and W (last day, weekday) are not supported');
  if (token === '') return fail('a value is missing');
  const what = spec.names ? `a number or a name (${spec.names[0]}-${spec.names.at(-1)})` : 'a number';
  return fail(`"${token}" is not ${what}`);
}

function parseCronItem(text: string, spec: FieldSpec): Result<CronItem> {
  if (text === '') return fail('an empty list item (stray comma?)');
  if (text.includes('?')) return fail('"?" is EventBridge syntax; in a 5-field cron use "*"');
  if (text.includes('#')) return fail('"#" (nth weekday of the month) is not supported');
  const [base, stepText, extra] = text.split('/') as [string, string | undefined, string | undefined];
  if (extra !== undefined) return fail('more than one "/"');
  let step: number | null = null;
  if (stepText !== undefined) {
    if (!/^\d+$/.test(stepText)) return fail(`step "${stepText}" is not a whole number`);
    step = Number(stepText);
    const span = spec.starMax - spec.min;
    if (step < 1 || step > span) return fail(`step ${step} must be between 1 and ${span}`);
  }
  if (base === '*') return { ok: true, value: { star: true, start: spec.min, end: spec.starMax, step, named: false } };
  const [first, last, more] = base.split('-') as [string, string | undefined, string | undefined];
  if (more !== undefined) return fail(`"${base}" is not a range (a-b)`);
  const a = parseCronValue(first, spec, 'start');
  if (!a.ok) return a;
  if (last === undefined) {
    if (step !== null) return fail(`a step needs "*" or a range before it: write "${base}-${spec.starMax}/${step}" or "*/${step}"`);
    return { ok: true, value: { star: false, start: a.value.n, end: a.value.n, step, named: a.value.named } };
  }
  const b = parseCronValue(last, spec, 'end');
  if (!b.ok) return b;
  if (a.value.n > b.value.n) return fail(`range ${base} runs backwards`);
  return { ok: true, value: { star: false, start: a.value.n, end: b.value.n, step, named: a.value.named && b.value.named } };
}

function parseCronField(text: string, spec: FieldSpec): Result<CronField> {
  const items: CronItem[] = [];
  for (const part of text.split(',')) {
    const item = parseCronItem(part, spec);
    if (!item.ok) return fail(`the ${spec.name} field "${text}": ${item.error}`);
    items.push(item.value);
  }
  return { ok: true, value: { name: spec.name, text, star: text === '*', items } };
}

/** The values a croner field selects (its flags, index 0 being `first`). */
const selected = (flags: number[], first: number) => flags.flatMap((on, i) => (on ? [i + first] : []));

/**
 * Parse a 5-field cron. The form's rules are checked here, so errors name the field and why, e.g.
 * `the hour field "25": 25 is out of range (0-23)`; croner then reads what passed.
 */
export function parseCron(expression: string): { ok: true; cron: ParsedCron } | { ok: false; error: string } {
  const text = expression.trim();
  if (text === '') return fail('it is empty');
  if (text.startsWith('@')) {
    return fail(`nicknames like "${text.split(/\s/)[0]}" are not supported; write the 5 fields (e.g. "0 0 * * *" for daily)`);
  }
  if (/^(cron|rate|at)\(/i.test(text)) {
    return fail('write the plain 5-field cron (minute hour day-of-month month day-of-week), not an EventBridge expression');
  }
  const parts = text.split(/\s+/);
  if (parts.length !== 5) {
    const hint = parts.length === 6 ? ' (seconds and years are not supported)' : '';
    return fail(
      `it has ${parts.length} field${parts.length === 1 ? '' : 's'}; expected 5: minute hour day-of-month month day-of-week${hint}`,
    );
  }
  const fields: CronField[] = [];
  for (const [i, part] of parts.entries()) {
    const field = parseCronField(part, CRON_FIELDS[i]!);
    if (!field.ok) return field;
    fields.push(field.value);
  }
  let pattern: CronPattern;
  try {
    pattern = new CronPattern(parts.join(' '), undefined, { mode: '5-part' });
  } catch (error) {
    return fail(`croner cannot read it: ${error instanceof Error ? error.message : String(error)}`);
  }
  const [minute, hour, dayOfMonth, month, dayOfWeek] = fields as [CronField, CronField, CronField, CronField, CronField];
  return { ok: true, cron: { minute, hour, dayOfMonth, month, dayOfWeek, pattern } };
}

/**
 * Why a 5-field cron cannot be an event's `periodic` schedule, or null. Beyond `parseCron`:
 * day-of-month and day-of-week may not both be restricted (EventBridge cannot express classic
 * cron's "either matches"), and it must fire at all (croner finds a run: the day-of-month exists
 * in some selected month).
 * The message continues a sentence about the field, e.g. `"schedule" ${message}`.
 */
export function periodicCronProblem(expression: string): string | null {
  const parsed = parseCron(expression);
  if (!parsed.ok) return `is not a valid 5-field cron (minute hour day-of-month month day-of-week): ${parsed.error}`;
  const { minute, hour, dayOfMonth, month, dayOfWeek, pattern } = parsed.cron;
  if (!dayOfMonth.star && !dayOfWeek.star) {
    const head = `${minute.text} ${hour.text}`;
    return (
      `sets both day-of-month ("${dayOfMonth.text}") and day-of-week ("${dayOfWeek.text}"), which EventBridge Scheduler cannot express ` +
      `(classic cron fires when either matches): split it into two event files, one with "${head} ${dayOfMonth.text} ${month.text} *" ` +
      `and one with "${head} * ${month.text} ${dayOfWeek.text}"`
    );
  }
  // Whether it ever fires does not depend on when one looks (5 fields have no year): a fixed start keeps this pure.
  if (new Cron(pattern.pattern, { mode: '5-part', paused: true }).nextRun(new Date(0)) === null) {
    return `never fires: no selected month has day ${selected(pattern.day, 1).join(', ')}`;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Intervals: "every 30m" → rate(30 minutes)
// ---------------------------------------------------------------------------------------------

const INTERVAL_UNITS = [
  { names: /^(m|mins?|minutes?)$/i, minutes: 1, rate: 'minute' },
  { names: /^(h|hrs?|hours?)$/i, minutes: 60, rate: 'hour' },
  { names: /^(d|days?)$/i, minutes: 1440, rate: 'day' },
] as const;

export interface Interval {
  minutes: number;
  /** The EventBridge Scheduler form, e.g. `rate(30 minutes)`, `rate(1 hour)`. */
  rate: string;
}

/** Whether a periodic schedule is written as an interval (`every …`) rather than a cron. */
export const isIntervalSchedule = (text: string) => /^\s*every\b/i.test(text);

/**
 * `every 30m`, `every 2 hours`, `every 1d` → the interval. Whole numbers of minutes, hours or days
 * only, as EventBridge Scheduler's rate() takes; at most a year.
 */
export function parseInterval(text: string): { ok: true; interval: Interval } | { ok: false; error: string } {
  const match = /^\s*every\s+(\d+)\s*([a-z]+)\s*$/i.exec(text);
  const unit = match && INTERVAL_UNITS.find((u) => u.names.test(match[2]!));
  if (!match || !unit) {
    return { ok: false, error: 'is not an interval: write "every N" and a unit, m (minutes), h (hours) or d (days), like "every 30m"' };
  }
  const value = Number(match[1]);
  if (value < 1) return { ok: false, error: 'needs an interval of at least 1' };
  if (value * unit.minutes > 366 * 1440) return { ok: false, error: 'is longer than a year: use a cron for rare events' };
  return { ok: true, interval: { minutes: value * unit.minutes, rate: `rate(${value} ${unit.rate}${value === 1 ? '' : 's'})` } };
}

/** The shortest time between two firings of a valid periodic schedule (cron or interval), in minutes. */
export function periodicShortestIntervalMinutes(schedule: string): number {
  if (!isIntervalSchedule(schedule)) return cronShortestIntervalMinutes(schedule);
  const parsed = parseInterval(schedule);
  if (!parsed.ok) throw new Error(`not a valid interval: ${parsed.error}`);
  return parsed.interval.minutes;
}

/**
 * The shortest time between two firings of a valid 5-field cron, in minutes, capped at 60 (an hour
 * or more apart is reported as 60): minutes in one hour, and the last minute of an hour to the first
 * of the next when two consecutive hours (or 23 and 0) are both selected. Computed from the
 * minutes and hours croner reads rather than by sampling runs, so a short gap that happens rarely
 * (23:58 on 28 February to 00:00 on 1 March) is never missed.
 */
export function cronShortestIntervalMinutes(expression: string): number {
  const parsed = parseCron(expression);
  if (!parsed.ok) throw new Error(`not a valid cron: ${parsed.error}`);
  const minutes = selected(parsed.cron.pattern.minute, 0);
  const hours = parsed.cron.pattern.hour;
  let shortest = 60;
  for (let i = 1; i < minutes.length; i++) shortest = Math.min(shortest, minutes[i]! - minutes[i - 1]!);
  if (hours.some((on, h) => on && hours[(h + 1) % 24])) shortest = Math.min(shortest, 60 - minutes.at(-1)! + minutes[0]!);
  return shortest;
}

// ---------------------------------------------------------------------------------------------
// 5-field cron → EventBridge cron
// ---------------------------------------------------------------------------------------------

/** Sorted numbers as a list, with runs of three or more as ranges: [2,3,4,5,6] → "2-6". */
export function compressRuns(values: number[]): string {
  const out: string[] = [];
  for (let i = 0; i < values.length;) {
    let j = i;
    while (j + 1 < values.length && values[j + 1] === values[j]! + 1) j++;
    if (j - i >= 2) out.push(`${values[i]}-${values[j]}`);
    else for (let k = i; k <= j; k++) out.push(String(values[k]));
    i = j + 1;
  }
  return out.join(',');
}

/** Day-of-week 7 is SUN again. */
const nameOf = (spec: FieldSpec, n: number) => spec.names![(n - spec.min) % spec.names!.length]!;

/** One non-day-of-week field, item by item. */
function toEventBridgeField(field: CronField, spec: FieldSpec): string {
  if (field.star) return '*';
  return field.items
    .map((item) => {
      const show = (n: number) => (item.named ? nameOf(spec, n) : String(n));
      if (item.star) return item.step === null ? '*' : `${spec.min}/${item.step}`;
      if (item.step === null) return item.start === item.end ? show(item.start) : `${show(item.start)}-${show(item.end)}`;
      // Quartz "a/n" runs from a to the end of the field: exact when the range did too.
      if (item.end === spec.max) return `${item.start}/${item.step}`;
      return Array.from({ length: Math.floor((item.end - item.start) / item.step) + 1 }, (_, k) => item.start + k * item.step!).join(',');
    })
    .join(',');
}

function toEventBridgeDayOfWeek(field: CronField, pattern: CronPattern): string {
  const spec = CRON_FIELDS[4]!;
  // Names only, no steps, no range ending in SUN-as-7: same meaning in both dialects.
  if (field.items.every((item) => !item.star && item.named && item.step === null && item.end <= 6)) {
    return toEventBridgeField(field, spec);
  }
  return compressRuns(selected(pattern.dayOfWeek, 1)); // 0 (Sunday) → 1 … 6 (Saturday) → 7
}

/** A 5-field cron as an EventBridge `cron(min hour dom month dow year)`. */
export function cronToEventBridge(expression: string): { ok: true; expression: string } | { ok: false; error: string } {
  const parsed = parseCron(expression);
  if (!parsed.ok) return parsed;
  const { minute, hour, dayOfMonth, month, dayOfWeek, pattern } = parsed.cron;
  if (!dayOfMonth.star && !dayOfWeek.star) return fail('day-of-month and day-of-week are both set; EventBridge allows only one');
  const fields = [
    toEventBridgeField(minute, CRON_FIELDS[0]!),
    toEventBridgeField(hour, CRON_FIELDS[1]!),
    dayOfWeek.star ? toEventBridgeField(dayOfMonth, CRON_FIELDS[2]!) : '?',
    toEventBridgeField(month, CRON_FIELDS[3]!),
    dayOfWeek.star ? '?' : toEventBridgeDayOfWeek(dayOfWeek, pattern),
    '*',
  ];
  return { ok: true, expression: `cron(${fields.join(' ')})` };
}

// ---------------------------------------------------------------------------------------------
// Event → EventBridge Scheduler (ScheduleExpression + ScheduleExpressionTimezone)
// ---------------------------------------------------------------------------------------------

/**
 * What of an event file its schedule depends on: an EventFile (schema.ts) fits. Declared here so
 * that schema.ts can use these functions without a circular import.
 */
export type EventSchedule =
  | { type: 'immediate' }
  | { type: 'one-shot'; schedule: string; timezone: string }
  | { type: 'periodic'; schedule: string; timezone: string };

export interface SchedulerExpression {
  /** ScheduleExpression: `at(...)`, `cron(...)` or `rate(...)`. */
  expression: string;
  /** ScheduleExpressionTimezone. */
  timezone: string;
}

/**
 * The EventBridge Scheduler expression and time zone for a scheduled event.
 * - one-shot, local time → `at(local)` in the event's zone.
 * - one-shot, absolute instant → `at(wall time of that instant in the event's zone)` in that zone;
 *   if that wall time is ambiguous and the instant is its second occurrence (so the local form
 *   would be read back as the first), the UTC wall time and `UTC` are used instead: exact always.
 * - periodic → `cron(...)` (see `cronToEventBridge`), in the event's zone; an interval (`every 30m`) →
 *   `rate(30 minutes)`.
 * Throws for an immediate event (it has no schedule) and for a schedule `parseEventFile` would
 * have refused; every schedule it accepts converts exactly. `cronToEventBridge` is the
 * non-throwing form for cron.
 */
export function toSchedulerExpression(event: EventSchedule): SchedulerExpression {
  if (event.type === 'immediate') throw new Error('An immediate event has no schedule expression');
  const timezone = event.timezone;
  if (event.type === 'periodic') {
    if (isIntervalSchedule(event.schedule)) {
      const parsed = parseInterval(event.schedule);
      if (!parsed.ok) throw new Error(`"schedule" ${JSON.stringify(event.schedule)} ${parsed.error}`);
      return { expression: parsed.interval.rate, timezone };
    }
    const cron = cronToEventBridge(event.schedule);
    if (!cron.ok) throw new Error(`Cannot convert "schedule" ${JSON.stringify(event.schedule)} to EventBridge: ${cron.error}`);
    return { expression: cron.expression, timezone };
  }
  const parsed = parseOneShotTime(event.schedule);
  if (!parsed.ok) throw new Error(`Not a one-shot time: ${JSON.stringify(event.schedule)}`);
  if (parsed.time.kind === 'local') return { expression: `at(${parsed.time.local})`, timezone };
  const instant = parsed.time.instant;
  const local = instantToZonedLocal(instant, timezone);
  if (zonedLocalToInstant(local, timezone).getTime() === instant.getTime()) return { expression: `at(${local})`, timezone };
  return { expression: `at(${instantToZonedLocal(instant, 'UTC')})`, timezone: 'UTC' };
}

/** The instant a one-shot event fires: its local time read in its zone, or its absolute instant. */
export function oneShotInstant(event: { schedule: string; timezone: string }): Date {
  const parsed = parseOneShotTime(event.schedule);
  if (!parsed.ok) throw new Error(`Not a one-shot time: ${JSON.stringify(event.schedule)}`);
  return parsed.time.kind === 'instant' ? parsed.time.instant : zonedLocalToInstant(parsed.time.local, event.timezone);
}

/**
 * Whether a one-shot event's time is before `now` (equal is not past: it is due). Immediate and
 * periodic events are never past.
 */
export function isPast(event: EventSchedule, now: Date): boolean {
  if (event.type !== 'one-shot') return false;
  return oneShotInstant(event).getTime() < now.getTime();
}
