// EventBridge Scheduler expressions read back, for the local Scheduler: `at(...)` becomes a local
// time, `rate(...)` a duration and `cron(...)` a 5-field cron that croner evaluates the same way.
// Its scope is what the stack emits: cron() without L, W, # or a year other than '*'; anything
// beyond that is refused (the stand-in answers a ValidationException) rather than guessed at.
import { compressRuns, DAY_NAMES, MONTH_NAMES, parseCron, parseLocalDateTime } from '../../../../shared/events/schedule-expressions.ts';

export type ParsedSchedulerExpression =
  { kind: 'at'; local: string } | { kind: 'cron'; fiveField: string } | { kind: 'rate'; ms: number } | { kind: 'invalid'; error: string };

type Result<T> = { ok: true; value: T } | { ok: false; error: string };

interface EbFieldSpec {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
  nameBase?: number;
  question?: boolean;
  slash: boolean;
}

const EB_FIELDS: readonly EbFieldSpec[] = [
  { name: 'minute', min: 0, max: 59, slash: true },
  { name: 'hour', min: 0, max: 23, slash: true },
  { name: 'day-of-month', min: 1, max: 31, question: true, slash: true },
  { name: 'month', min: 1, max: 12, names: MONTH_NAMES, nameBase: 1, slash: true },
  { name: 'day-of-week', min: 1, max: 7, names: DAY_NAMES, nameBase: 1, question: true, slash: false },
  { name: 'year', min: 1970, max: 2199, slash: true },
];

interface EbItem {
  start: number;
  end: number;
  step: number | null;
  star: boolean;
  named: boolean;
  /** Written as `a/n` (Quartz: from a to the end of the field). */
  openStep: boolean;
}

const UNSUPPORTED = 'L, W and # are not supported by the local stand-in';

function parseEbValue(token: string, spec: EbFieldSpec): Result<{ n: number; named: boolean }> {
  if (/^\d+$/.test(token)) {
    const n = Number(token);
    if (n < spec.min || n > spec.max) return { ok: false, error: `${n} is out of range (${spec.min}-${spec.max})` };
    return { ok: true, value: { n, named: false } };
  }
  if (spec.names) {
    const i = spec.names.indexOf(token.toUpperCase());
    if (i >= 0) return { ok: true, value: { n: i + spec.nameBase!, named: true } };
  }
  if (/[LW#]/i.test(token)) return { ok: false, error: `"${token}": ${UNSUPPORTED}` };
  return { ok: false, error: `"${token}" is not a valid value` };
}

function parseEbStep(stepText: string | undefined, spec: EbFieldSpec): Result<number | null> {
  if (stepText === undefined) return { ok: true, value: null };
  if (!spec.slash) return { ok: false, error: `"/" is not allowed in the ${spec.name} field` };
  if (!/^\d+$/.test(stepText) || Number(stepText) < 1) return { ok: false, error: `step "${stepText}" is not a positive whole number` };
  return { ok: true, value: Number(stepText) };
}

function parseEbRange(base: string, step: number | null, spec: EbFieldSpec): Result<EbItem> {
  const [first, last] = base.split('-') as [string, string];
  const a = parseEbValue(first, spec);
  if (!a.ok) return a;
  const b = parseEbValue(last, spec);
  if (!b.ok) return b;
  if (a.value.n > b.value.n) return { ok: false, error: `range ${base} runs backwards (wrapping ranges are not supported)` };
  const named = a.value.named && b.value.named;
  return { ok: true, value: { start: a.value.n, end: b.value.n, step, star: false, named, openStep: false } };
}

function parseEbItem(text: string, spec: EbFieldSpec): Result<EbItem> {
  if (text.includes('#')) return { ok: false, error: `"${text}": ${UNSUPPORTED}` };
  const [base, stepText, extra] = text.split('/');
  if (extra !== undefined || base === undefined || base === '') return { ok: false, error: `"${text}" is not a valid item` };
  const step = parseEbStep(stepText, spec);
  if (!step.ok) return step;
  if (base === '*')
    return { ok: true, value: { start: spec.min, end: spec.max, step: step.value, star: true, named: false, openStep: false } };
  const dashes = base.split('-').length - 1;
  if (dashes === 1) return parseEbRange(base, step.value, spec);
  if (dashes > 1) return { ok: false, error: `"${base}" is not a range` };
  const v = parseEbValue(base, spec);
  if (!v.ok) return v;
  if (step.value !== null) {
    return { ok: true, value: { start: v.value.n, end: spec.max, step: step.value, star: false, named: false, openStep: true } };
  }
  return { ok: true, value: { start: v.value.n, end: v.value.n, step: null, star: false, named: v.value.named, openStep: false } };
}

function parseEbField(text: string, spec: EbFieldSpec): Result<EbItem[] | '?'> {
  if (text === '?')
    return spec.question ? { ok: true, value: '?' } : { ok: false, error: `"?" is only allowed in day-of-month and day-of-week` };
  const items: EbItem[] = [];
  for (const part of text.split(',')) {
    const item = parseEbItem(part, spec);
    if (!item.ok) return { ok: false, error: `the ${spec.name} field "${text}": ${item.error}` };
    items.push(item.value);
  }
  return { ok: true, value: items };
}

function fiveFieldItem(item: EbItem, spec: EbFieldSpec): string {
  const show = (n: number) => (item.named ? spec.names![n - spec.nameBase!]! : String(n));
  if (item.star) return item.step === null ? '*' : `*/${item.step}`;
  if (item.openStep) return item.start === spec.min ? `*/${item.step}` : `${item.start}-${spec.max}/${item.step}`;
  const base = item.start === item.end ? show(item.start) : `${show(item.start)}-${show(item.end)}`;
  return item.step === null ? base : `${base}/${item.step}`;
}

const fiveFieldList = (items: EbItem[], spec: EbFieldSpec) => items.map((item) => fiveFieldItem(item, spec)).join(',');

/** Same Sunday-first order in both dialects, so names pass through; numbers shift down by one. */
function fiveFieldDayOfWeek(dow: EbItem[] | '?'): string {
  if (dow === '?' || (dow.length === 1 && dow[0]!.star)) return '*';
  if (dow.every((item) => item.named && item.step === null)) return fiveFieldList(dow, EB_FIELDS[4]!);
  const days = new Set<number>();
  for (const item of dow) for (let d = item.start; d <= item.end; d += item.step ?? 1) days.add(d - 1);
  return compressRuns([...days].sort((a, b) => a - b));
}

function readAt(argument: string): ParsedSchedulerExpression {
  const local = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/.test(argument) ? parseLocalDateTime(argument) : null;
  if (!local?.ok) return { kind: 'invalid', error: `at() needs yyyy-mm-ddThh:mm:ss, a real date and time: ${JSON.stringify(argument)}` };
  return { kind: 'at', local: local.local };
}

const RATE_UNITS: Record<string, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

function readRate(value: number, unit: string): ParsedSchedulerExpression {
  const singular = unit.replace(/s$/, '');
  const perUnit = RATE_UNITS[singular];
  if (perUnit === undefined) return { kind: 'invalid', error: `rate() unit "${unit}" is not minute(s), hour(s) or day(s)` };
  if (value < 1) return { kind: 'invalid', error: 'rate() needs a positive value' };
  if ((value === 1) !== (unit === singular)) {
    return { kind: 'invalid', error: `rate(${value} ${unit}): use "${value === 1 ? singular : `${singular}s`}"` };
  }
  return { kind: 'rate', ms: value * perUnit };
}

function readCron(argument: string): ParsedSchedulerExpression {
  const parts = argument.trim().split(/\s+/);
  if (parts.length !== 6) {
    return { kind: 'invalid', error: `cron() needs 6 fields (minute hour day-of-month month day-of-week year), got ${parts.length}` };
  }
  const fields: (EbItem[] | '?')[] = [];
  for (let i = 0; i < 6; i++) {
    const field = parseEbField(parts[i]!, EB_FIELDS[i]!);
    if (!field.ok) return { kind: 'invalid', error: field.error };
    fields.push(field.value);
  }
  const [minute, hour, dom, month, dow, year] = fields as [EbItem[], EbItem[], EbItem[] | '?', EbItem[], EbItem[] | '?', EbItem[]];
  if ((dom === '?') === (dow === '?')) return { kind: 'invalid', error: 'exactly one of day-of-month and day-of-week must be "?"' };
  if (!(year.length === 1 && year[0]!.star && year[0]!.step === null)) {
    return { kind: 'invalid', error: 'a year other than "*" is not supported by the local stand-in' };
  }
  const domText = dom === '?' ? '*' : fiveFieldList(dom, EB_FIELDS[2]!);
  const fiveField = [
    fiveFieldList(minute, EB_FIELDS[0]!),
    fiveFieldList(hour, EB_FIELDS[1]!),
    domText,
    fiveFieldList(month, EB_FIELDS[3]!),
    fiveFieldDayOfWeek(dow),
  ].join(' ');
  const check = parseCron(fiveField);
  if (!check.ok) return { kind: 'invalid', error: `cron() does not convert to a 5-field cron: ${check.error}` };
  return { kind: 'cron', fiveField };
}

/**
 * Read an EventBridge Scheduler expression back:
 * - `at(yyyy-mm-ddThh:mm:ss)` → `{ kind: 'at', local }`
 * - `cron(min hour dom month dow year)` → `{ kind: 'cron', fiveField }`, a 5-field cron croner
 *   reads the same way: `?` → `*`, days of week 1-7 → 0-6, `a/n` → `a-max/n` (or a `*` step
 *   when a is the field's minimum; croner, like Vixie cron, refuses `a/n`). Exactly one of
 *   day-of-month/day-of-week must be `?`, as in EventBridge. Not supported (an `invalid` answer):
 *   `L`, `W`, `#`, and a year other than `*`.
 * - `rate(n unit)` → `{ kind: 'rate', ms }`; units minute(s)/hour(s)/day(s), singular only for 1
 *   as EventBridge requires.
 */
export function fromSchedulerExpression(expression: string): ParsedSchedulerExpression {
  const text = expression.trim();
  const at = /^at\((.*)\)$/.exec(text);
  if (at) return readAt(at[1]!);
  const rate = /^rate\((\d+)\s+([a-z]+)\)$/.exec(text);
  if (rate) return readRate(Number(rate[1]), rate[2]!);
  const cron = /^cron\((.*)\)$/.exec(text);
  if (cron) return readCron(cron[1]!);
  return { kind: 'invalid', error: `not an at(), cron() or rate() expression: ${JSON.stringify(expression)}` };
}
