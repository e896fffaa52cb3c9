// CreateSchedule / UpdateSchedule bodies and names, checked as the service checks what the product
// sends (expression, time zone, state, completion, time window, dates, target, its input's size and
// retry policy).
import { MAX_SCHEDULE_INPUT_BYTES } from '../../../../shared/events/one-shot.ts';
import { timeZoneProblem } from '../../../../shared/events/schedule-expressions.ts';
import { utf8Bytes } from '../../../../shared/contracts.ts';
import { ApiError, isPlainObject } from '../aws-protocol.ts';
import { fromSchedulerExpression } from './expressions.ts';
import { DEFAULT_GROUP, type ActionAfterCompletion, type LocalSchedule, type ScheduleState, type ScheduleTarget } from './schedules.ts';

export const validation = (message: string) => new ApiError('ValidationException', message, 400);

const NAME_PATTERN = /^[0-9a-zA-Z\-_.]{1,64}$/;
const DEFAULT_RETRY_POLICY = { MaximumEventAgeInSeconds: 86_400, MaximumRetryAttempts: 185 };

function patternError(value: unknown, member: string): ApiError {
  return validation(
    `1 validation error detected: Value '${String(value)}' at '${member}' failed to satisfy constraint: Member must satisfy regular expression pattern: [0-9a-zA-Z-_.]+`,
  );
}

export function scheduleName(name: string | undefined): string {
  if (name === undefined || !NAME_PATTERN.test(name)) throw patternError(name, 'name');
  return name;
}

export function groupNameOf(value: unknown): string {
  if (value === undefined || value === null || value === '') return DEFAULT_GROUP;
  if (typeof value !== 'string' || !NAME_PATTERN.test(value)) throw patternError(value, 'groupName');
  return value;
}

function oneOf<T extends string>(value: unknown, fallback: T, allowed: readonly T[], field: string): T {
  const given = value ?? fallback;
  if (!allowed.includes(given as T)) throw validation(`Invalid ${field} ${String(given)}: must be ${allowed.join(' or ')}.`);
  return given as T;
}

/** The schedule's fields from a Create/UpdateSchedule body (an update replaces them all). */
export function scheduleFields(body: Record<string, unknown>) {
  const expression = body.ScheduleExpression;
  if (typeof expression !== 'string' || expression.length === 0 || expression.length > 256) {
    throw validation('ScheduleExpression is required and must be 1 to 256 characters long.');
  }
  const parsed = fromSchedulerExpression(expression);
  if (parsed.kind === 'invalid') throw validation(`Invalid Schedule Expression ${expression}: ${parsed.error}.`);
  const givenTimezone = optionalString(body.ScheduleExpressionTimezone, 'ScheduleExpressionTimezone');
  const timezoneProblem = givenTimezone === undefined ? null : timeZoneProblem(givenTimezone);
  if (timezoneProblem !== null) throw validation(`Invalid ScheduleExpressionTimezone ${givenTimezone}: it ${timezoneProblem}.`);
  const window = asObject(body.FlexibleTimeWindow, 'FlexibleTimeWindow');
  if (window.Mode !== 'OFF' && window.Mode !== 'FLEXIBLE') throw validation('FlexibleTimeWindow.Mode must be OFF or FLEXIBLE.');
  const startDate = optionalDate(body.StartDate, 'StartDate');
  const endDate = optionalDate(body.EndDate, 'EndDate');
  if (startDate && endDate && endDate.getTime() <= startDate.getTime()) {
    throw validation('The EndDate you specify must come after the StartDate.');
  }
  return {
    expression,
    parsed,
    givenTimezone,
    state: oneOf<ScheduleState>(body.State, 'ENABLED', ['ENABLED', 'DISABLED'], 'State'),
    actionAfterCompletion: oneOf<ActionAfterCompletion>(body.ActionAfterCompletion, 'NONE', ['NONE', 'DELETE'], 'ActionAfterCompletion'),
    flexibleTimeWindow: window as LocalSchedule['flexibleTimeWindow'],
    startDate,
    endDate,
    description: optionalString(body.Description, 'Description'),
    target: validTarget(body.Target),
  };
}

function validTarget(value: unknown): ScheduleTarget {
  const target = asObject(value, 'Target');
  if (typeof target.Arn !== 'string' || target.Arn === '' || typeof target.RoleArn !== 'string' || target.RoleArn === '') {
    throw validation('Target.Arn and Target.RoleArn are required.');
  }
  const input = optionalString(target.Input, 'Target.Input');
  const inputBytes = input === undefined ? 0 : utf8Bytes(input);
  if (inputBytes > MAX_SCHEDULE_INPUT_BYTES) {
    throw validation(`Target.Input is ${inputBytes} bytes; it must be at most ${MAX_SCHEDULE_INPUT_BYTES} bytes (256 KB).`);
  }
  const retry = target.RetryPolicy === undefined ? {} : asObject(target.RetryPolicy, 'Target.RetryPolicy');
  const RetryPolicy = {
    MaximumEventAgeInSeconds: boundedInteger(retry, 'MaximumEventAgeInSeconds', 60, 86_400),
    MaximumRetryAttempts: boundedInteger(retry, 'MaximumRetryAttempts', 0, 185),
  };
  return { ...target, RetryPolicy } as ScheduleTarget;
}

function boundedInteger(retry: Record<string, unknown>, field: keyof typeof DEFAULT_RETRY_POLICY, min: number, max: number): number {
  const value = retry[field];
  if (value === undefined || value === null) return DEFAULT_RETRY_POLICY[field];
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw validation(`${field} must be an integer between ${min} and ${max}.`);
  }
  return value;
}

function optionalString(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw validation(`${field} must be a string.`);
  return value;
}

function optionalDate(value: unknown, field: string): Date | undefined {
  if (value === undefined || value === null) return undefined;
  // restJson1 sends epoch seconds.
  const date = typeof value === 'number' ? new Date(value * 1000) : new Date(NaN);
  if (Number.isNaN(date.getTime())) throw validation(`${field} must be a timestamp.`);
  return date;
}

function asObject(value: unknown, field: string): Record<string, unknown> {
  if (!isPlainObject(value)) throw validation(`${field} is required and must be an object.`);
  return value;
}
