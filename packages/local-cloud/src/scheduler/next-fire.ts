// When a schedule fires, for the local Scheduler. croner computes cron times in a zone, but not as
// EventBridge Scheduler does around DST: EventBridge skips a cron time that does not exist (spring
// forward) and runs a time that occurs twice (fall back) once, while croner runs a "fixed-time"
// job (single minute and hour, e.g. `30 2 * * *`) at the first valid time after a gap and runs
// "interval" jobs (e.g. `*/30 * * * *`) on both occurrences of a repeated hour. So nextFireTime
// filters croner's answers by default (`dst: 'eventbridge'`); `dst: 'croner'` gives croner's raw
// answer, which shows what the filter changes.
import { Cron } from 'croner';
import { instantToZonedLocal, zonedLocalToInstant } from '../../../../shared/events/schedule-expressions.ts';
import { fromSchedulerExpression } from './expressions.ts';

export interface NextFireOptions {
  /**
   * DST behaviour for cron. `eventbridge` (default): a time that does not exist is skipped, a time
   * that occurs twice fires once (first occurrence). `croner`: croner's own answer.
   */
  dst?: 'eventbridge' | 'croner';
}

/** croner's next run after `after`, skipping the answers EventBridge would not fire. */
function nextEventBridgeRun(cron: Cron, timezone: string, after: Date): Date | null {
  let cursor = after;
  // Each rejected answer is inside one DST transition; a bound keeps a bug from spinning.
  for (let i = 0; i < 10_000; i++) {
    const next = cron.nextRun(cursor);
    if (!next) return null;
    // Skip croner's "first valid time after a gap" answers (the wall clock there does not match
    // the pattern) and second occurrences of a repeated wall time.
    const firstOccurrence = zonedLocalToInstant(instantToZonedLocal(next, timezone), timezone).getTime() === next.getTime();
    if (cron.match(next) && firstOccurrence) return next;
    cursor = next;
  }
  return null;
}

/**
 * When a scheduler expression next fires, as an instant.
 * - `at(local)`: the instant the zone's clock reads `local` (`zonedLocalToInstant`), whether or
 *   not it is before `after`: the caller decides what a past one-shot means.
 * - `cron(...)`: the first fire strictly after `after`, by croner with the zone (DST per
 *   `options.dst`). null if it never fires again.
 * - `rate(...)`: `after` + the rate. A rate has no anchor of its own; pass the previous fire (or
 *   the schedule's start) as `after`.
 * Throws on an invalid expression or time zone.
 */
export function nextFireTime(expression: string, timezone: string, after: Date, options: NextFireOptions = {}): Date | null {
  const parsed = fromSchedulerExpression(expression);
  switch (parsed.kind) {
    case 'invalid':
      throw new Error(`Invalid schedule expression: ${parsed.error}`);
    case 'at':
      return zonedLocalToInstant(parsed.local, timezone);
    case 'rate':
      return new Date(after.getTime() + parsed.ms);
    case 'cron': {
      const cron = new Cron(parsed.fiveField, { timezone, mode: '5-part', paused: true });
      if ((options.dst ?? 'eventbridge') === 'croner') return cron.nextRun(after);
      return nextEventBridgeRun(cron, timezone, after);
    }
  }
}
