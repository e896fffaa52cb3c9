import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import {
  ConflictException,
  CreateScheduleCommand,
  CreateScheduleGroupCommand,
  DeleteScheduleCommand,
  GetScheduleCommand,
  GetScheduleGroupCommand,
  ListSchedulesCommand,
  ResourceNotFoundException,
  SchedulerClient,
  UpdateScheduleCommand,
  ValidationException,
  type CreateScheduleCommandInput,
} from '@aws-sdk/client-scheduler';
import {
  createManualClock,
  startLocalScheduler,
  type LocalScheduler,
  type LocalSchedulerOptions,
  type ManualClock,
} from '../src/scheduler/index.ts';

const TARGET_ARN = 'arn:aws:lambda:local:000000000000:function:Scheduled';
const ROLE_ARN = 'arn:aws:iam::000000000000:role/scheduler';
const DLQ_ARN = 'arn:aws:sqs:local:000000000000:scheduler-dlq';
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

interface Invocation {
  arn: string;
  input: string;
  /** The scheduler's clock when the target ran. */
  at: string;
}

interface Setup {
  scheduler: LocalScheduler;
  client: SchedulerClient;
  clock: ManualClock;
  invocations: Invocation[];
}

async function setup(t: TestContext, start: string, options: Partial<LocalSchedulerOptions> = {}): Promise<Setup> {
  const clock = createManualClock(start);
  const invocations: Invocation[] = [];
  const scheduler = await startLocalScheduler({
    clock,
    invokeTarget: async (arn, input) => {
      invocations.push({ arn, input, at: new Date(clock.now()).toISOString() });
    },
    ...options,
  });
  const client = new SchedulerClient({
    endpoint: scheduler.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
  t.after(async () => {
    client.destroy();
    await scheduler.close();
  });
  return { scheduler, client, clock, invocations };
}

function schedule(name: string, expression: string, extra: Partial<CreateScheduleCommandInput> = {}): CreateScheduleCommandInput {
  return {
    Name: name,
    ScheduleExpression: expression,
    FlexibleTimeWindow: { Mode: 'OFF' },
    Target: { Arn: TARGET_ARN, RoleArn: ROLE_ARN, Input: JSON.stringify({ name, at: '<aws.scheduler.scheduled-time>' }) },
    ...extra,
  };
}

const scheduledTimes = (invocations: Invocation[]) => invocations.map((call) => (JSON.parse(call.input) as { at: string }).at);

test('create, get, update, list and delete through the SDK, with its error types', async (t) => {
  const { client } = await setup(t, '2026-03-01T00:00:00Z');

  const created = await client.send(
    new CreateScheduleCommand(
      schedule('nightly', 'cron(0 2 * * ? *)', { ScheduleExpressionTimezone: 'Europe/Berlin', Description: 'every night' }),
    ),
  );
  assert.equal(created.ScheduleArn, 'arn:aws:scheduler:local:000000000000:schedule/default/nightly');

  const got = await client.send(new GetScheduleCommand({ Name: 'nightly' }));
  assert.equal(got.Arn, created.ScheduleArn);
  assert.equal(got.GroupName, 'default');
  assert.equal(got.ScheduleExpression, 'cron(0 2 * * ? *)');
  assert.equal(got.ScheduleExpressionTimezone, 'Europe/Berlin');
  assert.equal(got.State, 'ENABLED');
  assert.equal(got.Description, 'every night');
  assert.equal(got.ActionAfterCompletion, 'NONE');
  assert.deepEqual(got.FlexibleTimeWindow, { Mode: 'OFF' });
  assert.deepEqual(got.Target?.RetryPolicy, { MaximumEventAgeInSeconds: 86400, MaximumRetryAttempts: 185 });
  assert.ok(got.CreationDate instanceof Date);
  assert.equal(got.CreationDate.toISOString(), '2026-03-01T00:00:00.000Z');

  await assert.rejects(
    client.send(new CreateScheduleCommand(schedule('nightly', 'rate(5 minutes)'))),
    (error: unknown) => error instanceof ConflictException && error.$metadata.httpStatusCode === 409,
  );

  await client.send(
    new UpdateScheduleCommand({
      ...schedule('nightly', 'rate(5 minutes)', { State: 'DISABLED', StartDate: new Date('2026-03-02T00:00:00Z') }),
    }),
  );
  const updated = await client.send(new GetScheduleCommand({ Name: 'nightly', GroupName: 'default' }));
  assert.equal(updated.ScheduleExpression, 'rate(5 minutes)');
  assert.equal(updated.State, 'DISABLED');
  assert.equal(updated.ScheduleExpressionTimezone, undefined, 'an update replaces the whole schedule');
  assert.equal(updated.StartDate?.toISOString(), '2026-03-02T00:00:00.000Z');

  await client.send(new CreateScheduleGroupCommand({ Name: 'events' }));
  const group = await client.send(new GetScheduleGroupCommand({ Name: 'events' }));
  assert.equal(group.Arn, 'arn:aws:scheduler:local:000000000000:schedule-group/events');
  assert.equal(group.State, 'ACTIVE');
  await client.send(new CreateScheduleCommand(schedule('file-a', 'at(2026-04-01T10:00:00)', { GroupName: 'events' })));
  await client.send(new CreateScheduleCommand(schedule('file-b', 'at(2026-04-01T11:00:00)', { GroupName: 'events' })));
  await client.send(new CreateScheduleCommand(schedule('other', 'at(2026-04-01T11:00:00)', { GroupName: 'events' })));
  await assert.rejects(
    client.send(new CreateScheduleCommand(schedule('x', 'rate(1 hour)', { GroupName: 'missing' }))),
    (error: unknown) => error instanceof ResourceNotFoundException && /missing/.test(error.message),
  );

  const listed = await client.send(new ListSchedulesCommand({ GroupName: 'events', NamePrefix: 'file-' }));
  assert.deepEqual(
    listed.Schedules?.map((item) => [item.Name, item.GroupName, item.State, item.Target?.Arn]),
    [
      ['file-a', 'events', 'ENABLED', TARGET_ARN],
      ['file-b', 'events', 'ENABLED', TARGET_ARN],
    ],
  );
  const firstPage = await client.send(new ListSchedulesCommand({ MaxResults: 2 }));
  assert.equal(firstPage.Schedules?.length, 2);
  assert.ok(firstPage.NextToken);
  const secondPage = await client.send(new ListSchedulesCommand({ MaxResults: 2, NextToken: firstPage.NextToken }));
  assert.deepEqual(
    [...(firstPage.Schedules ?? []), ...(secondPage.Schedules ?? [])].map((item) => `${item.GroupName}/${item.Name}`),
    ['default/nightly', 'events/file-a', 'events/file-b', 'events/other'],
  );
  const disabled = await client.send(new ListSchedulesCommand({ State: 'DISABLED' }));
  assert.deepEqual(
    disabled.Schedules?.map((item) => item.Name),
    ['nightly'],
  );

  await client.send(new DeleteScheduleCommand({ Name: 'file-a', GroupName: 'events' }));
  await assert.rejects(
    client.send(new GetScheduleCommand({ Name: 'file-a', GroupName: 'events' })),
    (error: unknown) => error instanceof ResourceNotFoundException && error.$metadata.httpStatusCode === 404,
  );
  await assert.rejects(client.send(new DeleteScheduleCommand({ Name: 'file-a', GroupName: 'events' })), ResourceNotFoundException);
  await assert.rejects(client.send(new UpdateScheduleCommand(schedule('never-created', 'rate(1 hour)'))), ResourceNotFoundException);
  await assert.rejects(client.send(new GetScheduleCommand({ Name: 'nightly', GroupName: 'events' })), ResourceNotFoundException);
});

test('invalid expressions, time zones and retry policies are ValidationExceptions', async (t) => {
  const { client } = await setup(t, '2026-03-01T00:00:00Z');
  const invalid: [string, Partial<CreateScheduleCommandInput>][] = [
    ['cron(0 12 * * *)', {}], // five fields
    ['cron(0 12 * * * *)', {}], // neither day field is '?'
    ['cron(0 12 ? * ? *)', {}], // both are
    ['cron(0 25 * * ? *)', {}],
    ['rate(0 minutes)', {}],
    ['rate(5 weeks)', {}],
    ['at(2026-02-30T10:00:00)', {}],
    ['at(2026-03-10 10:00:00)', {}],
    ['every day', {}],
    ['rate(5 minutes)', { ScheduleExpressionTimezone: 'Mars/Olympus_Mons' }],
    ['rate(5 minutes)', { ScheduleExpressionTimezone: '+01:00' }],
    ['rate(5 minutes)', { ActionAfterCompletion: 'ARCHIVE' as 'DELETE' }],
    ['rate(5 minutes)', { Target: { Arn: TARGET_ARN, RoleArn: ROLE_ARN, RetryPolicy: { MaximumRetryAttempts: 186 } } }],
    ['rate(5 minutes)', { StartDate: new Date('2026-03-05T00:00:00Z'), EndDate: new Date('2026-03-04T00:00:00Z') }],
  ];
  for (const [expression, extra] of invalid) {
    await assert.rejects(
      client.send(new CreateScheduleCommand(schedule('bad', expression, extra))),
      (error: unknown) => error instanceof ValidationException && error.$metadata.httpStatusCode === 400 && error.message.length > 0,
      `${expression} ${JSON.stringify(extra)}`,
    );
  }
  await assert.rejects(client.send(new GetScheduleCommand({ Name: 'bad' })), ResourceNotFoundException);
  // The documented forms the local Scheduler reads (no L, W, # or year).
  for (const [index, expression] of [
    'cron(0/15 8-17 ? * MON-FRI *)',
    'cron(0 9 ? * 2-6 *)',
    'cron(0 12 1 JAN,JUL ? *)',
    'rate(1 minute)',
    'rate(2 days)',
    'at(2026-12-31T23:59:59)',
  ].entries()) {
    await client.send(new CreateScheduleCommand(schedule(`ok-${index}`, expression, { ScheduleExpressionTimezone: 'Asia/Kolkata' })));
  }
});

test('a target input over 256 KB (UTF-8 bytes) is refused on create and update; one at the limit is taken', async (t) => {
  const { client } = await setup(t, '2026-03-01T00:00:00Z');
  const LIMIT = 256 * 1024;
  const target = (input: string) => ({ Target: { Arn: TARGET_ARN, RoleArn: ROLE_ARN, Input: input } });
  // 'é' is two bytes in UTF-8: under the limit in characters, over it in bytes.
  const overInBytes = JSON.stringify({ text: 'é'.repeat(LIMIT / 2) });
  assert.ok(overInBytes.length < LIMIT && Buffer.byteLength(overInBytes) > LIMIT);
  const isTooLarge = (error: unknown) =>
    error instanceof ValidationException && error.$metadata.httpStatusCode === 400 && /Input.*262144 bytes/.test(error.message);
  await assert.rejects(client.send(new CreateScheduleCommand(schedule('big', 'rate(5 minutes)', target(overInBytes)))), isTooLarge);
  await assert.rejects(client.send(new GetScheduleCommand({ Name: 'big' })), ResourceNotFoundException);
  const atLimit = JSON.stringify({ text: 'x'.repeat(LIMIT - '{"text":""}'.length) });
  assert.equal(Buffer.byteLength(atLimit), LIMIT);
  await client.send(new CreateScheduleCommand(schedule('big', 'rate(5 minutes)', target(atLimit))));
  await assert.rejects(client.send(new UpdateScheduleCommand(schedule('big', 'rate(5 minutes)', target(`${atLimit} `)))), isTooLarge);
  // The refused update changed nothing.
  assert.equal((await client.send(new GetScheduleCommand({ Name: 'big' }))).Target?.Input, atLimit);
});

test('an at() schedule fires once, at its wall-clock time in its time zone, and is then deleted', async (t) => {
  const { client, scheduler, invocations } = await setup(t, '2026-03-10T00:00:00Z');
  // 09:30 in Los Angeles, which is on daylight time (UTC-7) since 2026-03-08: 16:30Z.
  await client.send(
    new CreateScheduleCommand(
      schedule('reminder', 'at(2026-03-10T09:30:00)', {
        ScheduleExpressionTimezone: 'America/Los_Angeles',
        ActionAfterCompletion: 'DELETE',
      }),
    ),
  );
  await client.send(new CreateScheduleCommand(schedule('kept', 'at(2026-03-10T18:00:00)', { ActionAfterCompletion: 'NONE' })));
  assert.equal(scheduler.schedules.get('default/reminder')?.nextFire?.toISOString(), '2026-03-10T16:30:00.000Z');

  await scheduler.advance(16 * HOUR + 29 * 60_000 + 59_000);
  assert.equal(invocations.length, 0, 'not a second early');
  await scheduler.advance(1000);
  assert.deepEqual(invocations, [
    { arn: TARGET_ARN, input: JSON.stringify({ name: 'reminder', at: '2026-03-10T16:30:00Z' }), at: '2026-03-10T16:30:00.000Z' },
  ]);
  assert.equal(scheduler.schedules.has('default/reminder'), false);
  await assert.rejects(client.send(new GetScheduleCommand({ Name: 'reminder' })), ResourceNotFoundException);

  await scheduler.advance(3 * DAY);
  assert.deepEqual(
    invocations.map((call) => call.at),
    ['2026-03-10T16:30:00.000Z', '2026-03-10T18:00:00.000Z'],
    'each fires once',
  );
  assert.equal(scheduler.now(), Date.parse('2026-03-13T16:30:00Z'));
  // Without ActionAfterCompletion DELETE the completed schedule stays.
  const kept = await client.send(new GetScheduleCommand({ Name: 'kept' }));
  assert.equal(kept.State, 'ENABLED');
  assert.equal(scheduler.schedules.get('default/kept')?.nextFire, undefined);
});

test('a daily cron in America/New_York follows the clock change, in time order with other schedules', async (t) => {
  const { client, scheduler, invocations } = await setup(t, '2026-03-05T12:00:00Z');
  await client.send(new CreateScheduleCommand(schedule('daily', 'cron(0 9 * * ? *)', { ScheduleExpressionTimezone: 'America/New_York' })));
  // 24-hour periods from 13:30Z: between the cron's 14:00Z and, after the change, 13:00Z.
  await client.send(new CreateScheduleCommand(schedule('rate', 'rate(1 day)', { StartDate: new Date('2026-03-05T13:30:00Z') })));

  await scheduler.advance(5 * DAY);
  assert.deepEqual(
    invocations.map((call) => `${(JSON.parse(call.input) as { name: string }).name} ${call.at}`),
    [
      'rate 2026-03-05T13:30:00.000Z',
      'daily 2026-03-05T14:00:00.000Z',
      'rate 2026-03-06T13:30:00.000Z',
      'daily 2026-03-06T14:00:00.000Z',
      'rate 2026-03-07T13:30:00.000Z',
      'daily 2026-03-07T14:00:00.000Z',
      'daily 2026-03-08T13:00:00.000Z',
      'rate 2026-03-08T13:30:00.000Z',
      'daily 2026-03-09T13:00:00.000Z',
      'rate 2026-03-09T13:30:00.000Z',
    ],
  );
  const daily = invocations.filter((call) => call.input.includes('"daily"'));
  assert.deepEqual(scheduledTimes(daily), [
    '2026-03-05T14:00:00Z',
    '2026-03-06T14:00:00Z',
    '2026-03-07T14:00:00Z',
    '2026-03-08T13:00:00Z',
    '2026-03-09T13:00:00Z',
  ]);
  assert.equal(scheduler.schedules.get('default/daily')?.nextFire?.toISOString(), '2026-03-10T13:00:00.000Z');
});

test('a cron time in the spring-forward gap is skipped; a repeated hour in the fall fires once', async (t) => {
  const { client, scheduler, invocations } = await setup(t, '2026-03-06T12:00:00Z');
  await client.send(new CreateScheduleCommand(schedule('gap', 'cron(30 2 * * ? *)', { ScheduleExpressionTimezone: 'America/New_York' })));
  await scheduler.advance(4 * DAY);
  // 02:30 does not exist on 2026-03-08 in New York.
  assert.deepEqual(scheduledTimes(invocations), ['2026-03-07T07:30:00Z', '2026-03-09T06:30:00Z', '2026-03-10T06:30:00Z']);

  const fall = await setup(t, '2026-10-31T12:00:00Z');
  await fall.client.send(
    new CreateScheduleCommand(schedule('repeat', 'cron(0/30 1 * * ? *)', { ScheduleExpressionTimezone: 'America/New_York' })),
  );
  await fall.scheduler.advance(2 * DAY);
  // 01:00 and 01:30 happen twice on 2026-11-01 (EDT, then EST): each fires once.
  assert.deepEqual(scheduledTimes(fall.invocations), [
    '2026-11-01T05:00:00Z',
    '2026-11-01T05:30:00Z',
    '2026-11-02T06:00:00Z',
    '2026-11-02T06:30:00Z',
  ]);
});

test('a failing target is retried per RetryPolicy, then dead-lettered; context attributes are substituted', async (t) => {
  const errors: unknown[] = [];
  let failuresLeft = Infinity;
  const inputs: string[] = [];
  const { client, scheduler } = await setup(t, '2026-03-01T00:00:00Z', {
    invokeTarget: async (_arn, input) => {
      inputs.push(input);
      if (failuresLeft-- > 0) throw Object.assign(new Error('target is down'), { name: 'ServiceUnavailable' });
    },
    onError: (error) => errors.push(error),
  });
  const contextInput = JSON.stringify({
    arn: '<aws.scheduler.schedule-arn>',
    time: '<aws.scheduler.scheduled-time>',
    id: '<aws.scheduler.execution-id>',
    attempt: '<aws.scheduler.attempt-number>',
  });
  await client.send(
    new CreateScheduleCommand({
      ...schedule('flaky', 'at(2026-03-01T06:00:00)'),
      Target: {
        Arn: TARGET_ARN,
        RoleArn: ROLE_ARN,
        Input: contextInput,
        RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 3600 },
        DeadLetterConfig: { Arn: DLQ_ARN },
      },
    }),
  );
  await scheduler.advance(DAY);

  const attempts = inputs.map((input) => JSON.parse(input) as { arn: string; time: string; id: string; attempt: string });
  assert.deepEqual(
    attempts.map(({ arn, time, attempt }) => ({ arn, time, attempt })),
    [1, 2, 3].map((attempt) => ({
      arn: 'arn:aws:scheduler:local:000000000000:schedule/default/flaky',
      time: '2026-03-01T06:00:00Z',
      attempt: String(attempt),
    })),
  );
  assert.match(attempts[0]?.id ?? '', /^[0-9a-f]{16}$/);
  assert.deepEqual(
    attempts.map(({ id }) => id),
    [1, 2, 3].map(() => attempts[0]?.id),
    'one execution id per firing, kept by its retries',
  );
  assert.deepEqual(
    scheduler.firings.map((firing) => [firing.name, firing.attempt, firing.ok, firing.error]),
    [
      ['flaky', 1, false, 'target is down'],
      ['flaky', 2, false, 'target is down'],
      ['flaky', 3, false, 'target is down'],
    ],
  );
  assert.equal(scheduler.deadLetters.length, 1);
  const [deadLetter] = scheduler.deadLetters;
  assert.equal(deadLetter?.deadLetterArn, DLQ_ARN);
  assert.equal(deadLetter?.attempts, 3);
  assert.equal(deadLetter?.errorCode, 'ServiceUnavailable');
  assert.equal(deadLetter?.errorMessage, 'target is down');
  assert.equal(deadLetter?.scheduledTime, '2026-03-01T06:00:00Z');
  assert.equal(deadLetter?.executionId, attempts[0]?.id);
  assert.equal(errors.length, 1);

  // A target that recovers within the policy is not dead-lettered.
  failuresLeft = 1;
  inputs.length = 0;
  await client.send(
    new CreateScheduleCommand({
      ...schedule('recovers', 'at(2026-03-02T06:00:00)'),
      Target: {
        Arn: TARGET_ARN,
        RoleArn: ROLE_ARN,
        Input: contextInput,
        RetryPolicy: { MaximumRetryAttempts: 5 },
        DeadLetterConfig: { Arn: DLQ_ARN },
      },
    }),
  );
  await scheduler.advance(DAY);
  const retried = inputs.map((input) => JSON.parse(input) as { attempt: string; id: string });
  assert.deepEqual(
    retried.map(({ attempt }) => attempt),
    ['1', '2'],
  );
  assert.equal(retried[0]?.id, retried[1]?.id);
  assert.notEqual(retried[0]?.id, attempts[0]?.id, 'another firing, another execution id');
  assert.equal(scheduler.deadLetters.length, 1);
  assert.equal(errors.length, 1);
});

test('disabled schedules do not fire; re-enabling continues from now', async (t) => {
  const { client, scheduler, invocations } = await setup(t, '2026-03-01T00:00:00Z');
  await client.send(new CreateScheduleCommand(schedule('hourly', 'cron(0 * * * ? *)', { State: 'DISABLED' })));
  await scheduler.advance(5 * HOUR);
  assert.equal(invocations.length, 0);
  assert.equal(scheduler.schedules.get('default/hourly')?.nextFire, undefined);
  await client.send(new UpdateScheduleCommand(schedule('hourly', 'cron(0 * * * ? *)', { State: 'ENABLED' })));
  await scheduler.advance(2 * HOUR);
  assert.deepEqual(scheduledTimes(invocations), ['2026-03-01T06:00:00Z', '2026-03-01T07:00:00Z']);
});

test('an EndDate completes a recurring schedule; tick() fires what is due without moving the clock', async (t) => {
  const { client, scheduler, clock, invocations } = await setup(t, '2026-03-01T00:00:00Z');
  await client.send(
    new CreateScheduleCommand(
      schedule('bounded', 'rate(1 hour)', { EndDate: new Date('2026-03-01T02:30:00Z'), ActionAfterCompletion: 'DELETE' }),
    ),
  );
  // No StartDate: a rate schedule starts at once.
  await scheduler.tick();
  assert.deepEqual(scheduledTimes(invocations), ['2026-03-01T00:00:00Z']);
  clock.set(Date.parse('2026-03-01T05:00:00Z'));
  await scheduler.tick();
  assert.deepEqual(scheduledTimes(invocations), ['2026-03-01T00:00:00Z', '2026-03-01T01:00:00Z', '2026-03-01T02:00:00Z']);
  assert.equal(scheduler.now(), Date.parse('2026-03-01T05:00:00Z'));
  assert.equal(scheduler.schedules.has('default/bounded'), false, 'completed at its EndDate, then deleted');
});

test('without a clock, a timer fires what is due in real time', async (t) => {
  const fired: string[] = [];
  const scheduler = await startLocalScheduler({
    tickIntervalMs: 20,
    invokeTarget: async (_arn, input) => {
      fired.push(input);
    },
  });
  const client = new SchedulerClient({
    endpoint: scheduler.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  t.after(async () => {
    client.destroy();
    await scheduler.close();
  });
  // at() has whole seconds: the first one at least 300 ms away.
  const due = Math.ceil((Date.now() + 300) / 1000) * 1000;
  await client.send(new CreateScheduleCommand(schedule('soon', `at(${new Date(due).toISOString().slice(0, 19)})`)));
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(fired.length, 0, 'not before it is due');
  const deadline = Date.now() + 5000;
  while (fired.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.ok(Date.now() >= due);
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.deepEqual(scheduledTimes(fired.map((input) => ({ arn: TARGET_ARN, input, at: '' }))), [
    new Date(due).toISOString().replace('.000Z', 'Z'),
  ]);
});
