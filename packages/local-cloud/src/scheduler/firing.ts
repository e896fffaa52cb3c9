// Firing what is due, in time order. Each invocation attempt gets the context attributes substituted
// into the target's Input (the execution id is one per firing, the attempt number counts its
// retries); a failing target is retried at once up to RetryPolicy.MaximumRetryAttempts (within
// MaximumEventAgeInSeconds) and then dead-lettered: recorded in deadLetters, not sent to SQS.
// Targets are invoked at the scheduled instant (no 60-second jitter; a FLEXIBLE window is not
// used); an at() time already past fires on the next tick.
import { randomBytes } from 'node:crypto';
import { followingFire } from './fire-times.ts';
import type { ScheduleRecord, ScheduleStore } from './schedules.ts';

/** One invocation attempt. */
export interface LocalFiring {
  name: string;
  /** <aws.scheduler.scheduled-time>: the instant the schedule was due, e.g. 2026-03-08T14:00:00Z. */
  scheduledTime: string;
  attempt: number;
  ok: boolean;
  error?: string;
}

/** A firing whose every attempt failed, for a schedule with a DeadLetterConfig. */
export interface LocalDeadLetter {
  name: string;
  deadLetterArn: string;
  scheduledTime: string;
  executionId: string;
  attempts: number;
  errorCode: string;
  errorMessage: string;
}

export interface FiringOptions {
  store: ScheduleStore;
  now(): number;
  /** Moves the scheduler's clock to `epochMs`. */
  setNow(epochMs: number): void;
  invokeTarget(targetArn: string, input: string): Promise<void>;
  onError?(error: unknown): void;
  isClosing(): boolean;
}

export function createFiring(options: FiringOptions) {
  const { store, now } = options;
  const firings: LocalFiring[] = [];
  const deadLetters: LocalDeadLetter[] = [];

  /** Invokes the target, retrying per its policy; the last error if every attempt failed. */
  async function attempt(record: ScheduleRecord, scheduledAt: number, executionId: string) {
    const { view } = record;
    const { target } = view;
    const scheduledTime = isoSeconds(scheduledAt);
    let failure: { error: unknown; attempts: number } | undefined;
    for (let attemptNumber = 1; attemptNumber <= 1 + target.RetryPolicy.MaximumRetryAttempts; attemptNumber++) {
      const expired = now() - scheduledAt > target.RetryPolicy.MaximumEventAgeInSeconds * 1000;
      if (attemptNumber > 1 && (expired || options.isClosing())) break;
      const input = substituteContext(target.Input ?? '{}', {
        '<aws.scheduler.schedule-arn>': view.arn,
        '<aws.scheduler.scheduled-time>': scheduledTime,
        '<aws.scheduler.execution-id>': executionId,
        '<aws.scheduler.attempt-number>': String(attemptNumber),
      });
      const firing: LocalFiring = { name: view.name, scheduledTime, attempt: attemptNumber, ok: false };
      firings.push(firing);
      try {
        await options.invokeTarget(target.Arn, input);
        firing.ok = true;
        return undefined;
      } catch (error) {
        firing.error = errorMessage(error);
        failure = { error, attempts: attemptNumber };
      }
    }
    return failure;
  }

  async function fire(record: ScheduleRecord, scheduledAt: number): Promise<void> {
    const { view } = record;
    // Move the schedule on first: its target may update or delete it.
    view.nextFire = dateOrUndefined(followingFire(record, scheduledAt));
    const target = view.target;
    // One id per firing, the same on each retry of it (attempt-number tells the attempts apart), so
    // a target can deduplicate retries by it; 16 hex digits like the service's.
    const executionId = randomBytes(8).toString('hex');
    const failure = await attempt(record, scheduledAt, executionId);
    if (failure) {
      const deadLetterArn = target.DeadLetterConfig?.Arn;
      if (deadLetterArn) {
        deadLetters.push({
          name: view.name,
          deadLetterArn,
          scheduledTime: isoSeconds(scheduledAt),
          executionId,
          attempts: failure.attempts,
          errorCode: errorCode(failure.error),
          errorMessage: errorMessage(failure.error),
        });
      }
      options.onError?.(failure.error);
    }
    // Completed (a one-time schedule, or past its EndDate): ActionAfterCompletion applies.
    if (view.nextFire === undefined && view.state === 'ENABLED' && view.actionAfterCompletion === 'DELETE') store.remove(record);
  }

  function dueBefore(until: number): ScheduleRecord | undefined {
    let earliest: ScheduleRecord | undefined;
    for (const record of store.records.values()) {
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
    for (let record = dueBefore(until); record && !options.isClosing(); record = dueBefore(until)) {
      const at = record.view.nextFire!.getTime();
      if (moveClock && at > now()) options.setNow(at);
      await fire(record, at);
    }
  }

  // One run at a time: a tick and an advance never interleave their firings.
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
      if (now() < until) options.setNow(until);
    });
  };

  return { firings, deadLetters, tick, advance, idle: () => chain };
}

function substituteContext(input: string, values: Record<string, string>): string {
  return input.replace(/<aws\.scheduler\.(schedule-arn|scheduled-time|execution-id|attempt-number)>/g, (whole) => values[whole] ?? whole);
}

/** ISO 8601 to the second, as the context attribute shows it: 2026-03-08T14:00:00Z. */
function isoSeconds(epochMs: number): string {
  return new Date(epochMs).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function dateOrUndefined(epochMs: number | undefined): Date | undefined {
  return epochMs === undefined ? undefined : new Date(epochMs);
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function errorCode(error: unknown): string {
  return error instanceof Error && error.name !== 'Error' ? error.name : 'TargetInvocationError';
}
