// Schedule expressions for event files: the 5-field cron users write, the one-shot
// times they write, and the EventBridge Scheduler expressions (`at(...)`, `cron(...)`, `rate(...)`)
// they become. Pure functions: no I/O, no clock (callers pass `now`/`after`).
//
// Decisions, in one place:
// - User cron is classic 5-field cron (minute hour day-of-month month day-of-week), its common
//   subset: `*`, lists `,`, ranges `-`, steps `/` after `*` or a range, month names JAN-DEC and
//   day names SUN-SAT (case-insensitive). Day-of-week 0-7 with 0 and 7 = Sunday; a name range may
//   end in SUN (`FRI-SUN` = Friday to Sunday), as in croner and Vixie cron. Not accepted: `?`, `L`,
//   `W`, `#`, `@daily`-style nicknames, seconds or year fields, `5/15` (write `5-59/15`), steps
//   larger than the field's span, ranges that run backwards.
// - EventBridge cron is 6-field with a year, days of week 1-7 (1 = Sunday), and exactly one of
//   day-of-month/day-of-week set to `?`. Classic cron ORs a restricted day-of-month with a restricted
//   day-of-week; EventBridge cannot express that, so such a cron is rejected (see schema.ts).
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
//   been reached, and an ambiguous local time fires at its first occurrence.

// ---------------------------------------------------------------------------------------------
// Calendar helpers
// ---------------------------------------------------------------------------------------------

export const MONTH_NAMES = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'] as const;
export const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] as const;
const MONTH_LONG = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** Most days a month can have in any year (February: 29), for "can this cron ever fire". */
const MAX_DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

export interface WallTime {
  year: number;
  month: number; // 1-12
  day: number;
  hour: number;
  minute: number;
  second: number;
}

/** Milliseconds of a wall time read as if it were UTC (years 0-99 included, unlike Date.UTC). */
function wallToUtcMs(w: WallTime): number {
  const d = new Date(0);
  d.setUTCFullYear(w.year, w.month - 1, w.day);
  d.setUTCHours(w.hour, w.minute, w.second, 0);
  return d.getTime();
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

function formatWall(w: WallTime): string {
  return `${pad(w.year, 4)}-${pad(w.month)}-${pad(w.day)}T${pad(w.hour)}:${pad(w.minute)}:${pad(w.second)}`;
}

// ---------------------------------------------------------------------------------------------
// Time zones (Intl only; no tz database of our own)
// ---------------------------------------------------------------------------------------------

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    // Throws RangeError for a zone Intl does not know.
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      era: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** The wall clock in `timeZone` at instant `ms` (whole seconds; Intl drops milliseconds). */
export function wallAt(ms: number, timeZone: string): WallTime {
  const parts: Record<string, string> = {};
  for (const p of formatterFor(timeZone).formatToParts(new Date(ms))) parts[p.type] = p.value;
  const yearOfEra = Number(parts.year);
  return {
    year: parts.era === 'BC' || parts.era === 'B' ? 1 - yearOfEra : yearOfEra,
    month: Number(parts.month),
    day: Number(parts.day),
    hour: Number(parts.hour) % 24, // defensive: some engines print 24 for midnight
    minute: Number(parts.minute),
    second: Number(parts.second),
  };
}

/** Wall time of instant `ms`, as "UTC milliseconds". */
function wallMsAt(ms: number, timeZone: string): number {
  return wallToUtcMs(wallAt(ms, timeZone));
}

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
    formatterFor(timeZone);
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
  const resolved = formatterFor(timeZone).resolvedOptions().timeZone;
  if (resolved === timeZone) return timeZone;
  const lower = timeZone.toLowerCase();
  if (resolved.toLowerCase() === lower) return resolved;
  supportedZones ??= typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  return supportedZones.find((z) => z.toLowerCase() === lower) ?? timeZone;
}

/**
 * The instant at which the wall clock in `timeZone` reads `local` (`YYYY-MM-DDTHH:MM[:SS]`).
 * - A local time that exists once: that instant.
 * - Ambiguous (it occurs twice when clocks fall back): the first occurrence.
 * - Nonexistent (skipped when clocks spring forward): the first valid instant after it, i.e. the
 *   moment of the transition: 02:30 on a day that jumps 02:00 → 03:00 gives 03:00 (new offset).
 *   This differs from Temporal's "compatible" rule (which would give 03:30) on purpose: nothing
 *   fires later than the first moment the requested time has been reached.
 * Throws on a malformed local time or an unknown zone.
 */
export function zonedLocalToInstant(local: string, timeZone: string): Date {
  const wall = parseLocalDateTime(local);
  if (!wall.ok) throw new Error(`Not a local date-time (YYYY-MM-DDTHH:MM[:SS]): ${JSON.stringify(local)}: ${wall.error}`);
  return new Date(wallToInstantMs(wall.wall, timeZone));
}

const DAY_MS = 86_400_000;

/** The instant the zone's clock reads `wall`: as zonedLocalToInstant, for a parsed wall time. */
export function wallToInstantMs(wall: WallTime, timeZone: string): number {
  const target = wallToUtcMs(wall);
  // Offsets in force around the target: a day either side covers any single transition.
  const offsets = new Set<number>();
  for (const probe of [target - DAY_MS, target, target + DAY_MS]) offsets.add(wallMsAt(probe, timeZone) - probe);
  const candidates = [...offsets].map((offset) => target - offset).sort((a, b) => a - b);
  const exact = candidates.find((t) => wallMsAt(t, timeZone) === target);
  if (exact !== undefined) return exact; // the earliest one that reads `target`: first occurrence
  // In a gap: wall time jumps over `target` between the candidates; find the first second at or
  // past it. Binary search on whole seconds (transitions fall on whole seconds).
  let lo = candidates[0]!;
  let hi = candidates[candidates.length - 1]!;
  if (!(wallMsAt(lo, timeZone) < target && wallMsAt(hi, timeZone) > target)) return hi; // not expected
  // Invariant: wall(lo) < target <= wall(hi).
  while (hi - lo > 1000) {
    const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
    if (wallMsAt(mid, timeZone) < target) lo = mid;
    else hi = mid;
  }
  return hi;
}

/** The local wall time (`YYYY-MM-DDTHH:MM:SS`) in `timeZone` at `instant` (seconds truncated). */
export function instantToZonedLocal(instant: Date, timeZone: string): string {
  return formatWall(wallAt(instant.getTime(), timeZone));
}

// ---------------------------------------------------------------------------------------------
// One-shot times
// ---------------------------------------------------------------------------------------------

export type OneShotTime =
  | { kind: 'local'; local: string } // `YYYY-MM-DDTHH:MM:SS`, read in the event's time zone
  | { kind: 'instant'; instant: Date }; // had `Z` or an offset; whole seconds

const ONE_SHOT_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/;
const LOCAL_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/;

function checkWall(w: WallTime): string | null {
  if (w.month < 1 || w.month > 12) return `month ${pad(w.month)} does not exist`;
  if (w.day < 1 || w.day > daysInMonth(w.year, w.month)) {
    return `${MONTH_LONG[w.month - 1]} ${w.year} has ${daysInMonth(w.year, w.month)} days, not ${w.day}`;
  }
  if (w.hour > 23) return `hour ${w.hour} is out of range (00-23)`;
  if (w.minute > 59) return `minute ${w.minute} is out of range (00-59)`;
  if (w.second > 59) return `second ${w.second} is out of range (00-59)`;
  return null;
}

/** The date-time fields of a LOCAL_RE / ONE_SHOT_RE match (groups 1-6). */
function wallFromMatch(m: RegExpExecArray): WallTime {
  return {
    year: Number(m[1]),
    month: Number(m[2]),
    day: Number(m[3]),
    hour: Number(m[4]),
    minute: Number(m[5]),
    second: Number(m[6] ?? 0),
  };
}

/** Strict `YYYY-MM-DDTHH:MM[:SS]` (no offset), a real calendar date. */
export function parseLocalDateTime(text: string): { ok: true; wall: WallTime; local: string } | { ok: false; error: string } {
  const m = LOCAL_RE.exec(text);
  if (!m) return { ok: false, error: 'expected YYYY-MM-DDTHH:MM[:SS]' };
  const wall = wallFromMatch(m);
  const problem = checkWall(wall);
  return problem ? { ok: false, error: problem } : { ok: true, wall, local: formatWall(wall) };
}

/**
 * A one-shot `schedule`: `YYYY-MM-DDTHH:MM[:SS]` is a local wall time (read in the event's time
 * zone); with a trailing `Z` or `±HH:MM` it is an absolute instant. Fractional seconds are
 * accepted (so `new Date().toISOString()` works) and dropped: `at()` has whole seconds, and
 * EventBridge fires within the minute anyway.
 */
export function parseOneShotTime(text: string): { ok: true; time: OneShotTime } | { ok: false; error: string } {
  const m = ONE_SHOT_RE.exec(text);
  if (!m) return { ok: false, error: 'format' };
  const wall = wallFromMatch(m);
  const problem = checkWall(wall);
  if (problem) return { ok: false, error: problem };
  const zone = m[7];
  if (zone === undefined) return { ok: true, time: { kind: 'local', local: formatWall(wall) } };
  let offsetMinutes = 0;
  if (zone !== 'Z') {
    const digits = zone.slice(1).replace(':', '');
    const oh = Number(digits.slice(0, 2));
    const om = Number(digits.slice(2));
    if (oh > 23 || om > 59) return { ok: false, error: `offset ${zone} is out of range` };
    offsetMinutes = (zone.startsWith('-') ? -1 : 1) * (oh * 60 + om);
  }
  return { ok: true, time: { kind: 'instant', instant: new Date(wallToUtcMs(wall) - offsetMinutes * 60_000) } };
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
  names?: readonly string[];
  /** Value of names[0]. */
  nameBase?: number;
}

const CRON_FIELDS: readonly FieldSpec[] = [
  { name: 'minute', min: 0, max: 59, starMax: 59 },
  { name: 'hour', min: 0, max: 23, starMax: 23 },
  { name: 'day-of-month', min: 1, max: 31, starMax: 31 },
  { name: 'month', min: 1, max: 12, starMax: 12, names: MONTH_NAMES, nameBase: 1 },
  { name: 'day-of-week', min: 0, max: 7, starMax: 6, names: DAY_NAMES, nameBase: 0 },
];

const RANGE_TEXT: Record<FieldName, string> = {
  minute: '0-59',
  hour: '0-23',
  'day-of-month': '1-31',
  month: '1-12 or JAN-DEC',
  'day-of-week': '0-7 or SUN-SAT; 0 and 7 are Sunday',
};

interface CronItem {
  kind: 'star' | 'value' | 'range';
  start: number;
  end: number;
  step: number | null;
  /** Both ends were written as names (MON, JAN). */
  named: boolean;
  text: string;
}

export interface CronField {
  name: FieldName;
  text: string;
  /** Exactly `*`: unrestricted. */
  star: boolean;
  items: CronItem[];
  /** Values it matches, sorted; day-of-week 7 is folded into 0. */
  values: number[];
}

export interface ParsedCron {
  minute: CronField;
  hour: CronField;
  dayOfMonth: CronField;
  month: CronField;
  dayOfWeek: CronField;
}

type Result<T> = { ok: true; value: T } | { ok: false; error: string };

function parseCronValue(token: string, spec: FieldSpec, position: 'start' | 'end'): Result<{ n: number; named: boolean }> {
  if (/^\d+$/.test(token)) {
    const n = Number(token);
    if (n < spec.min || n > spec.max) return { ok: false, error: `${n} is out of range (${RANGE_TEXT[spec.name]})` };
    return { ok: true, value: { n, named: false } };
  }
  if (spec.names && /^[a-z]{3}$/i.test(token)) {
    const i = spec.names.indexOf(token.toUpperCase());
    if (i >= 0) {
      // A range ending in SUN means "through Sunday" (7), as croner reads it.
      const n = spec.name === 'day-of-week' && i === 0 && position === 'end' ? 7 : i + spec.nameBase!;
      return { ok: true, value: { n, named: true } };
    }
  }
  if (/^(L|LW|\d+[LW]|[a-z]{3}L|\d+L)$/i.test(token)) {
    return { ok: false, error: 'L and W (last day, weekday) are not supported' };
  }
  if (token === '') return { ok: false, error: 'a value is missing' };
  const what = spec.names ? `a number or a name (${spec.names[0]}-${spec.names[spec.names.length - 1]})` : 'a number';
  return { ok: false, error: `"${token}" is not ${what}` };
}

function parseCronItem(text: string, spec: FieldSpec): Result<CronItem> {
  if (text === '') return { ok: false, error: 'an empty list item (stray comma?)' };
  if (text.includes('?')) return { ok: false, error: '"?" is EventBridge syntax; in a 5-field cron use "*"' };
  if (text.includes('#')) return { ok: false, error: '"#" (nth weekday of the month) is not supported' };
  const slash = text.split('/');
  if (slash.length > 2) return { ok: false, error: 'more than one "/"' };
  const [base, stepText] = slash as [string, string | undefined];
  let step: number | null = null;
  if (stepText !== undefined) {
    if (!/^\d+$/.test(stepText)) return { ok: false, error: `step "${stepText}" is not a whole number` };
    step = Number(stepText);
    const span = spec.starMax - spec.min;
    if (step < 1 || step > span) return { ok: false, error: `step ${step} must be between 1 and ${span}` };
  }
  if (base === '*') {
    return { ok: true, value: { kind: 'star', start: spec.min, end: spec.starMax, step, named: false, text } };
  }
  const dash = base.split('-');
  if (dash.length > 2) return { ok: false, error: `"${base}" is not a range (a-b)` };
  if (dash.length === 2) {
    const a = parseCronValue(dash[0]!, spec, 'start');
    if (!a.ok) return a;
    const b = parseCronValue(dash[1]!, spec, 'end');
    if (!b.ok) return b;
    if (a.value.n > b.value.n) return { ok: false, error: `range ${base} runs backwards` };
    const named = a.value.named && b.value.named;
    return { ok: true, value: { kind: 'range', start: a.value.n, end: b.value.n, step, named, text } };
  }
  const v = parseCronValue(base, spec, 'start');
  if (!v.ok) return v;
  if (step !== null) {
    return {
      ok: false,
      error: `a step needs "*" or a range before it: write "${base}-${spec.starMax}/${step}" or "*/${step}"`,
    };
  }
  return { ok: true, value: { kind: 'value', start: v.value.n, end: v.value.n, step: null, named: v.value.named, text } };
}

function itemValues(item: CronItem): number[] {
  const out: number[] = [];
  for (let v = item.start; v <= item.end; v += item.step ?? 1) out.push(v);
  return out;
}

function parseCronField(text: string, spec: FieldSpec): Result<CronField> {
  const items: CronItem[] = [];
  for (const part of text.split(',')) {
    const item = parseCronItem(part, spec);
    if (!item.ok) return { ok: false, error: `the ${spec.name} field "${text}": ${item.error}` };
    items.push(item.value);
  }
  const set = new Set<number>();
  for (const item of items) for (const v of itemValues(item)) set.add(spec.name === 'day-of-week' && v === 7 ? 0 : v);
  return {
    ok: true,
    value: { name: spec.name, text, star: text === '*', items, values: [...set].sort((a, b) => a - b) },
  };
}

/**
 * Parse a 5-field cron. Errors name the field and why, e.g.
 * `the hour field "25": 25 is out of range (0-23)`.
 */
export function parseCron(expression: string): { ok: true; cron: ParsedCron } | { ok: false; error: string } {
  const text = expression.trim();
  if (text === '') return { ok: false, error: 'it is empty' };
  if (text.startsWith('@')) {
    return {
      ok: false,
      error: `nicknames like "${text.split(/\s/)[0]}" are not supported; write the 5 fields (e.g. "0 0 * * *" for daily)`,
    };
  }
  if (/^(cron|rate|at)\(/i.test(text)) {
    return { ok: false, error: 'write the plain 5-field cron (minute hour day-of-month month day-of-week), not an EventBridge expression' };
  }
  const parts = text.split(/\s+/);
  if (parts.length !== 5) {
    const hint = parts.length === 6 ? ' (seconds and years are not supported)' : '';
    return {
      ok: false,
      error: `it has ${parts.length} field${parts.length === 1 ? '' : 's'}; expected 5: minute hour day-of-month month day-of-week${hint}`,
    };
  }
  const fields: CronField[] = [];
  for (let i = 0; i < 5; i++) {
    const field = parseCronField(parts[i]!, CRON_FIELDS[i]!);
    if (!field.ok) return field;
    fields.push(field.value);
  }
  const [minute, hour, dayOfMonth, month, dayOfWeek] = fields as [CronField, CronField, CronField, CronField, CronField];
  return { ok: true, cron: { minute, hour, dayOfMonth, month, dayOfWeek } };
}

/**
 * Why a 5-field cron cannot be an event's `periodic` schedule, or null. Beyond `parseCron`:
 * day-of-month and day-of-week may not both be restricted (EventBridge cannot express classic
 * cron's "either matches"), and the day-of-month must exist in some selected month.
 * The message continues a sentence about the field, e.g. `"schedule" ${message}`.
 */
export function periodicCronProblem(expression: string): string | null {
  const parsed = parseCron(expression);
  if (!parsed.ok) return `is not a valid 5-field cron (minute hour day-of-month month day-of-week): ${parsed.error}`;
  const { minute, hour, dayOfMonth, month, dayOfWeek } = parsed.cron;
  if (!dayOfMonth.star && !dayOfWeek.star) {
    const head = `${minute.text} ${hour.text}`;
    return (
      `sets both day-of-month ("${dayOfMonth.text}") and day-of-week ("${dayOfWeek.text}"), which EventBridge Scheduler cannot express ` +
      `(classic cron fires when either matches): split it into two event files, one with "${head} ${dayOfMonth.text} ${month.text} *" ` +
      `and one with "${head} * ${month.text} ${dayOfWeek.text}"`
    );
  }
  if (!dayOfMonth.star) {
    const fits = month.values.some((m) => dayOfMonth.values.some((d) => d <= MAX_DAYS_IN_MONTH[m - 1]!));
    if (!fits) return `never fires: no selected month has day ${dayOfMonth.values.join(', ')}`;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Intervals: "every 30m" → rate(30 minutes)
// ---------------------------------------------------------------------------------------------

const INTERVAL_UNITS: Record<string, { minutes: number; rate: 'minute' | 'hour' | 'day' }> = {
  m: { minutes: 1, rate: 'minute' },
  min: { minutes: 1, rate: 'minute' },
  mins: { minutes: 1, rate: 'minute' },
  minute: { minutes: 1, rate: 'minute' },
  minutes: { minutes: 1, rate: 'minute' },
  h: { minutes: 60, rate: 'hour' },
  hr: { minutes: 60, rate: 'hour' },
  hrs: { minutes: 60, rate: 'hour' },
  hour: { minutes: 60, rate: 'hour' },
  hours: { minutes: 60, rate: 'hour' },
  d: { minutes: 1440, rate: 'day' },
  day: { minutes: 1440, rate: 'day' },
  days: { minutes: 1440, rate: 'day' },
};

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
  const unit = match ? INTERVAL_UNITS[match[2]!.toLowerCase()] : undefined;
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
 * of the next when two consecutive hours (or 23 and 0) are both selected.
 */
export function cronShortestIntervalMinutes(expression: string): number {
  const parsed = parseCron(expression);
  if (!parsed.ok) throw new Error(`not a valid cron: ${parsed.error}`);
  const minutes = parsed.cron.minute.values;
  const hours = new Set(parsed.cron.hour.values);
  let shortest = 60;
  for (let i = 1; i < minutes.length; i++) shortest = Math.min(shortest, minutes[i]! - minutes[i - 1]!);
  const consecutiveHours = [...hours].some((h) => hours.has((h + 1) % 24));
  if (consecutiveHours) shortest = Math.min(shortest, 60 - minutes.at(-1)! + minutes[0]!);
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

function nameOf(spec: FieldSpec, n: number): string {
  return spec.names![spec.name === 'day-of-week' ? n % 7 : n - spec.nameBase!]!;
}

/** One non-day-of-week field, item by item. */
function toEventBridgeField(field: CronField, spec: FieldSpec): string {
  if (field.star) return '*';
  return field.items
    .map((item) => {
      const show = (n: number) => (item.named ? nameOf(spec, n) : String(n));
      if (item.kind === 'star') return item.step === null ? '*' : `${spec.min}/${item.step}`;
      if (item.kind === 'value') return show(item.start);
      if (item.step === null) return `${show(item.start)}-${show(item.end)}`;
      // Quartz "a/n" runs from a to the end of the field: exact when the range did too.
      if (item.end === spec.max) return `${item.start}/${item.step}`;
      return itemValues(item).join(',');
    })
    .join(',');
}

function toEventBridgeDayOfWeek(field: CronField): string {
  const spec = CRON_FIELDS[4]!;
  // Names only, no steps, no range ending in SUN-as-7: same meaning in both dialects.
  const passThrough = field.items.every((item) => item.kind !== 'star' && item.named && item.step === null && item.end <= 6);
  if (passThrough) {
    return field.items
      .map((item) => (item.kind === 'value' ? nameOf(spec, item.start) : `${nameOf(spec, item.start)}-${nameOf(spec, item.end)}`))
      .join(',');
  }
  return compressRuns(field.values.map((d) => d + 1)); // 0 (Sunday) → 1 … 6 (Saturday) → 7
}

/** A 5-field cron as an EventBridge `cron(min hour dom month dow year)`. */
export function cronToEventBridge(expression: string): { ok: true; expression: string } | { ok: false; error: string } {
  const parsed = parseCron(expression);
  if (!parsed.ok) return parsed;
  const { minute, hour, dayOfMonth, month, dayOfWeek } = parsed.cron;
  if (!dayOfMonth.star && !dayOfWeek.star) {
    return { ok: false, error: 'day-of-month and day-of-week are both set; EventBridge allows only one' };
  }
  let dom: string;
  let dow: string;
  if (dayOfWeek.star) {
    dom = toEventBridgeField(dayOfMonth, CRON_FIELDS[2]!);
    dow = '?';
  } else {
    dom = '?';
    dow = toEventBridgeDayOfWeek(dayOfWeek);
  }
  const fields = [
    toEventBridgeField(minute, CRON_FIELDS[0]!),
    toEventBridgeField(hour, CRON_FIELDS[1]!),
    dom,
    toEventBridgeField(month, CRON_FIELDS[3]!),
    dow,
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
