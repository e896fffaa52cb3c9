// The local Scheduler's time source: real time, or a clock tests move themselves.

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
