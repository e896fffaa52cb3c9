// The Scheduler API operations: what the product calls (Create/Update/DeleteSchedule, and
// CreateScheduleGroup for the stack's group) and what tests read back (GetSchedule, ListSchedules,
// GetScheduleGroup). Timestamps travel as epoch seconds (restJson1's default for body members).
import { ApiError, epochSeconds, offsetPage, withoutUndefined, type RestJsonRoute } from '../aws-protocol.ts';
import { firstFire } from './fire-times.ts';
import { dateOrUndefined } from './firing.ts';
import { groupNameOf, scheduleFields, scheduleName, validation } from './schedule-input.ts';
import type { GroupRecord, ScheduleRecord, ScheduleStore } from './schedules.ts';

const optionalSeconds = (date: Date | undefined) => date && epochSeconds(date);

function wireSchedule(record: ScheduleRecord): Record<string, unknown> {
  const { view } = record;
  return withoutUndefined({
    Arn: view.arn,
    GroupName: view.group,
    Name: view.name,
    ScheduleExpression: view.expression,
    StartDate: optionalSeconds(view.startDate),
    EndDate: optionalSeconds(view.endDate),
    Description: view.description,
    ScheduleExpressionTimezone: record.givenTimezone,
    State: view.state,
    CreationDate: epochSeconds(view.creationDate),
    LastModificationDate: epochSeconds(view.lastModificationDate),
    Target: view.target,
    FlexibleTimeWindow: view.flexibleTimeWindow,
    ActionAfterCompletion: view.actionAfterCompletion,
  });
}

function wireGroup(group: GroupRecord): Record<string, unknown> {
  return {
    Arn: group.arn,
    Name: group.name,
    State: 'ACTIVE',
    CreationDate: epochSeconds(group.creationDate),
    LastModificationDate: epochSeconds(group.lastModificationDate),
  };
}

function maxResultsOf(query: URLSearchParams): number {
  const text = query.get('MaxResults');
  const max = text === null ? 100 : Number(text);
  if (!Number.isInteger(max) || max < 1 || max > 100) throw validation('MaxResults must be between 1 and 100.');
  return max;
}

export function schedulerRoutes(store: ScheduleStore, now: () => number): Record<string, RestJsonRoute> {
  function createSchedule(name: string, body: Record<string, unknown>): unknown {
    const group = groupNameOf(body.GroupName);
    store.requireGroup(group);
    const clientToken = typeof body.ClientToken === 'string' ? body.ClientToken : undefined;
    const existing = store.records.get(`${group}/${name}`);
    if (existing) {
      // A retried request (same idempotency token) gets the same answer.
      if (clientToken !== undefined && existing.clientToken === clientToken) return { ScheduleArn: existing.view.arn };
      throw new ApiError('ConflictException', `Schedule ${name} already exists.`, 409);
    }
    const { parsed, givenTimezone, ...fields } = scheduleFields(body);
    const created = new Date(now());
    const record = store.add({
      view: {
        ...fields,
        arn: store.scheduleArn(group, name),
        name,
        group,
        timezone: givenTimezone ?? 'UTC',
        nextFire: undefined,
        creationDate: created,
        lastModificationDate: created,
      },
      parsed,
      givenTimezone,
      clientToken,
    });
    record.view.nextFire = dateOrUndefined(firstFire(record, now()));
    return { ScheduleArn: record.view.arn };
  }

  function updateSchedule(name: string, body: Record<string, unknown>): unknown {
    const record = store.find(groupNameOf(body.GroupName), name);
    const { parsed, givenTimezone, ...fields } = scheduleFields(body);
    Object.assign(record.view, fields, { timezone: givenTimezone ?? 'UTC', lastModificationDate: new Date(now()) });
    record.parsed = parsed;
    record.givenTimezone = givenTimezone;
    record.view.nextFire = dateOrUndefined(firstFire(record, now()));
    return { ScheduleArn: record.view.arn };
  }

  function listSchedules(query: URLSearchParams): unknown {
    const group = query.get('ScheduleGroup') ?? undefined;
    const prefix = query.get('NamePrefix') ?? '';
    const state = query.get('State') ?? undefined;
    if (state !== undefined && state !== 'ENABLED' && state !== 'DISABLED') throw validation(`Invalid State ${state}.`);
    const matching = [...store.records.values()]
      .filter(({ view }) => (group === undefined || view.group === group) && view.name.startsWith(prefix))
      .filter(({ view }) => state === undefined || view.state === state)
      .sort((a, b) => a.view.group.localeCompare(b.view.group) || a.view.name.localeCompare(b.view.name));
    const { page, nextToken } = offsetPage(matching, maxResultsOf(query), query.get('NextToken'), () => validation('Invalid NextToken.'));
    const summary = ({ view }: ScheduleRecord) => ({
      Arn: view.arn,
      Name: view.name,
      GroupName: view.group,
      State: view.state,
      CreationDate: epochSeconds(view.creationDate),
      LastModificationDate: epochSeconds(view.lastModificationDate),
      Target: { Arn: view.target.Arn },
    });
    return withoutUndefined({ Schedules: page.map(summary), NextToken: nextToken });
  }

  return {
    'POST /schedules/{Name}': ({ name, body }) => createSchedule(scheduleName(name), body),
    'PUT /schedules/{Name}': ({ name, body }) => updateSchedule(scheduleName(name), body),
    'GET /schedules/{Name}': ({ name, query }) => wireSchedule(store.find(groupNameOf(query.get('groupName')), scheduleName(name))),
    'DELETE /schedules/{Name}': ({ name, query }) => {
      store.remove(store.find(groupNameOf(query.get('groupName')), scheduleName(name)));
      return {};
    },
    'GET /schedules': ({ query }) => listSchedules(query),
    'POST /schedule-groups/{Name}': ({ name }) => {
      const groupName = scheduleName(name);
      if (store.groups.has(groupName)) throw new ApiError('ConflictException', `Schedule group ${groupName} already exists.`, 409);
      return { ScheduleGroupArn: store.addGroup(groupName).arn };
    },
    'GET /schedule-groups/{Name}': ({ name }) => wireGroup(store.requireGroup(scheduleName(name))),
  };
}
