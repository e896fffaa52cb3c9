// The local Scheduler's schedules and schedule groups, in memory.
import { ApiError } from '../aws-protocol.ts';
import type { ParsedSchedulerExpression } from './expressions.ts';

export interface ScheduleRetryPolicy {
  MaximumEventAgeInSeconds: number;
  MaximumRetryAttempts: number;
}

export interface ScheduleTarget {
  Arn: string;
  RoleArn: string;
  Input?: string;
  RetryPolicy: ScheduleRetryPolicy;
  DeadLetterConfig?: { Arn?: string };
  /** EcsParameters, SqsParameters, ...: kept and returned as given. */
  [parameters: string]: unknown;
}

export type ScheduleState = 'ENABLED' | 'DISABLED';
export type ActionAfterCompletion = 'NONE' | 'DELETE';

/** A live view of one schedule (updated in place). */
export interface LocalSchedule {
  readonly arn: string;
  readonly name: string;
  readonly group: string;
  readonly expression: string;
  /** The time zone the expression is evaluated in ('UTC' when none was given). */
  readonly timezone: string;
  readonly state: ScheduleState;
  readonly description: string | undefined;
  readonly startDate: Date | undefined;
  readonly endDate: Date | undefined;
  readonly target: ScheduleTarget;
  readonly flexibleTimeWindow: { Mode: 'OFF' | 'FLEXIBLE'; MaximumWindowInMinutes?: number };
  readonly actionAfterCompletion: ActionAfterCompletion;
  /** When it fires next; undefined if disabled or completed. */
  readonly nextFire: Date | undefined;
  readonly creationDate: Date;
  readonly lastModificationDate: Date;
}

export type MutableSchedule = { -readonly [K in keyof LocalSchedule]: LocalSchedule[K] };
export type ParsedExpression = Exclude<ParsedSchedulerExpression, { kind: 'invalid' }>;

export interface ScheduleRecord {
  view: MutableSchedule;
  parsed: ParsedExpression;
  /** The expression timezone as given (GetSchedule returns it only then). */
  givenTimezone: string | undefined;
  clientToken: string | undefined;
  /** Creation order, to break ties between schedules due at the same instant. */
  sequence: number;
}

export interface GroupRecord {
  arn: string;
  name: string;
  creationDate: Date;
  lastModificationDate: Date;
}

export const DEFAULT_GROUP = 'default';

export function createScheduleStore(arnPrefix: string, now: () => number) {
  const records = new Map<string, ScheduleRecord>();
  const views = new Map<string, LocalSchedule>();
  const groups = new Map<string, GroupRecord>();
  let sequence = 0;

  function addGroup(name: string): GroupRecord {
    const created = new Date(now());
    const group = { arn: `${arnPrefix}:schedule-group/${name}`, name, creationDate: created, lastModificationDate: created };
    groups.set(name, group);
    return group;
  }

  function requireGroup(name: string): GroupRecord {
    const group = groups.get(name);
    if (!group) throw new ApiError('ResourceNotFoundException', `Schedule group ${name} does not exist.`, 404);
    return group;
  }

  function find(group: string, name: string): ScheduleRecord {
    requireGroup(group);
    const record = records.get(`${group}/${name}`);
    if (!record) throw new ApiError('ResourceNotFoundException', `Schedule ${name} does not exist.`, 404);
    return record;
  }

  function add(record: Omit<ScheduleRecord, 'sequence'>): ScheduleRecord {
    const added = { ...record, sequence: sequence++ };
    const key = `${record.view.group}/${record.view.name}`;
    records.set(key, added);
    views.set(key, added.view);
    return added;
  }

  /** Removes the schedule, if it is still this record (its target may have replaced it). */
  function remove(record: ScheduleRecord): void {
    const key = `${record.view.group}/${record.view.name}`;
    if (records.get(key) !== record) return;
    records.delete(key);
    views.delete(key);
  }

  const scheduleArn = (group: string, name: string) => `${arnPrefix}:schedule/${group}/${name}`;

  addGroup(DEFAULT_GROUP);
  return { records: records as ReadonlyMap<string, ScheduleRecord>, views, groups, scheduleArn, addGroup, requireGroup, find, add, remove };
}

export type ScheduleStore = ReturnType<typeof createScheduleStore>;
