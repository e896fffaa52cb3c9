// When a schedule fires: at() once at its wall-clock time in its zone; cron() in its zone, around
// DST as EventBridge does (next-fire.ts); rate() in fixed durations from StartDate, or from when it
// was (re)configured without one. StartDate and EndDate bound cron() and rate().
import { zonedLocalToInstant } from '../../../../shared/events/schedule-expressions.ts';
import { nextFireTime } from './next-fire.ts';
import type { ScheduleRecord } from './schedules.ts';

function beforeEnd(record: ScheduleRecord, next: number | undefined): number | undefined {
  const end = record.view.endDate?.getTime();
  return next !== undefined && (end === undefined || next < end) ? next : undefined;
}

/** The first instant at or after `now` that the schedule fires (when it is (re)configured). */
export function firstFire(record: ScheduleRecord, now: number): number | undefined {
  const { view, parsed } = record;
  if (view.state !== 'ENABLED') return undefined;
  const start = view.startDate?.getTime();
  switch (parsed.kind) {
    case 'at':
      // StartDate and EndDate do not apply to one-time schedules.
      return zonedLocalToInstant(parsed.local, view.timezone).getTime();
    case 'rate':
      if (start === undefined) return beforeEnd(record, now);
      if (start >= now) return beforeEnd(record, start);
      return beforeEnd(record, start + Math.ceil((now - start) / parsed.ms) * parsed.ms);
    case 'cron': {
      // The next cron fire is strictly after the time given (to the second): a cron instant at
      // StartDate itself counts.
      const after = new Date(start === undefined ? now : Math.max(now, start - 1000));
      return beforeEnd(record, nextFireTime(view.expression, view.timezone, after)?.getTime());
    }
  }
}

/** The instant after `fired` that the schedule fires next. */
export function followingFire(record: ScheduleRecord, fired: number): number | undefined {
  const { view, parsed } = record;
  if (view.state !== 'ENABLED') return undefined;
  switch (parsed.kind) {
    case 'at':
      return undefined;
    case 'rate':
      return beforeEnd(record, fired + parsed.ms);
    case 'cron':
      return beforeEnd(record, nextFireTime(view.expression, view.timezone, new Date(fired))?.getTime());
  }
}
