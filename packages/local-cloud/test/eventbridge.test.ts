import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { CreateBucketCommand, DeleteObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { S3Event, S3EventRecord } from 'aws-lambda';
import { startLocalEventBridge, type LocalBusEvent, type LocalEventBridgeOptions } from '../src/eventbridge.ts';
import { startS3Notifications, type S3NotificationConfiguration } from '../src/s3-notifications.ts';
import { decodeS3EventKey, encodeS3EventKey } from '../../../shared/aws/s3-event-keys.ts';
import { matchesEventPattern } from '../src/event-pattern.ts';
import { startSqsAndS3 } from '../src/emulators.ts';

// ---------------------------------------------------------------------------------------------
// EventBridge (raw AWS JSON 1.1 requests: @aws-sdk/client-eventbridge is not installed)
// ---------------------------------------------------------------------------------------------

const BUS = 'threadwork-events';
const BUS_ARN = `arn:aws:events:local:000000000000:event-bus/${BUS}`;
const PROMPT_TARGET = 'arn:aws:lambda:local:000000000000:function:Prompt';
const AUDIT_TARGET = 'arn:aws:lambda:local:000000000000:function:Audit';
const OTHER_TARGET = 'arn:aws:lambda:local:000000000000:function:Other';
const DEFAULT_BUS_TARGET = 'arn:aws:lambda:local:000000000000:function:DefaultBus';

interface Call {
  arn: string;
  payload: unknown;
  event: LocalBusEvent;
}

async function startBus(t: TestContext, overrides: Partial<LocalEventBridgeOptions> = {}) {
  const calls: Call[] = [];
  const pattern = { source: ['threadwork.test'], 'detail-type': ['Prompt'] };
  const bus = await startLocalEventBridge({
    rules: [
      {
        name: 'prompts',
        eventBusName: BUS,
        pattern,
        targets: [
          { arn: PROMPT_TARGET, inputPath: '$.detail' },
          { arn: AUDIT_TARGET, input: '{"audit":true}' },
        ],
      },
      { name: 'others', eventBusName: BUS_ARN, pattern: { source: ['somebody.else'] }, targets: [{ arn: OTHER_TARGET }] },
      { name: 'default-bus', eventBusName: 'default', pattern, targets: [{ arn: DEFAULT_BUS_TARGET }] },
    ],
    matches: matchesEventPattern,
    invokeTarget: async (arn, payload, event) => {
      calls.push({ arn, payload, event });
    },
    ...overrides,
  });
  t.after(() => bus.close());
  return { bus, calls };
}

async function putEvents(endpoint: string, body: unknown, target = 'AWSEvents.PutEvents') {
  const response = await fetch(endpoint, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-amz-json-1.1', 'X-Amz-Target': target },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

test('PutEvents on a custom bus reaches the matching rule’s targets only, with InputPath and Input', async (t) => {
  const { bus, calls } = await startBus(t);
  const detail = { text: 'summarize the week', threadId: 'slack:C1:1700000000.000100' };
  const { status, body } = await putEvents(bus.endpoint, {
    Entries: [
      { Source: 'threadwork.test', DetailType: 'Prompt', Detail: JSON.stringify(detail), EventBusName: BUS_ARN, Resources: ['res-1'] },
      { Source: 'threadwork.test', DetailType: 'Prompt', Detail: '{"text": "unterminated', EventBusName: BUS },
      { Source: 'threadwork.test', Detail: '{}', EventBusName: BUS },
      { Source: 'threadwork.test', DetailType: 'Prompt', Detail: '["not", "an", "object"]', EventBusName: BUS },
      { Source: 'threadwork.test', DetailType: 'Other', Detail: '{}', EventBusName: BUS },
      { Source: 'aws.s3', DetailType: 'Prompt', Detail: '{}', EventBusName: BUS },
    ],
  });
  assert.equal(status, 200);
  assert.equal(body.FailedEntryCount, 4);
  const entries = body.Entries as Record<string, string>[];
  assert.equal(entries.length, 6);
  assert.match(entries[0]?.EventId ?? '', /^[0-9a-f-]{36}$/);
  assert.deepEqual(entries[1], { ErrorCode: 'MalformedDetail', ErrorMessage: 'Detail is malformed.' });
  assert.equal(entries[2]?.ErrorCode, 'InvalidArgument');
  assert.match(entries[2]?.ErrorMessage ?? '', /DetailType/);
  assert.deepEqual(entries[3], { ErrorCode: 'MalformedDetail', ErrorMessage: 'Detail is malformed.' });
  assert.match(entries[4]?.EventId ?? '', /^[0-9a-f-]{36}$/, 'accepted, though no rule matches it');
  assert.equal(entries[5]?.ErrorCode, 'NotAuthorizedForSourceException');

  await bus.drain();
  assert.deepEqual(
    calls.map((call) => [call.arn, call.payload]),
    [
      [PROMPT_TARGET, detail],
      [AUDIT_TARGET, { audit: true }],
    ],
  );
  const event = calls[0]!.event;
  assert.equal(event.id, entries[0]?.EventId);
  assert.deepEqual(
    { ...event, id: '', time: '' },
    {
      version: '0',
      id: '',
      'detail-type': 'Prompt',
      source: 'threadwork.test',
      account: '000000000000',
      time: '',
      region: 'local',
      resources: ['res-1'],
      detail,
    },
  );
  assert.match(event.time, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
  assert.deepEqual(
    bus.delivered.map((delivery) => [delivery.rule, delivery.targetArn, delivery.ok]),
    [
      ['prompts', PROMPT_TARGET, true],
      ['prompts', AUDIT_TARGET, true],
    ],
  );
  assert.deepEqual(
    bus.events.map(({ eventBusName, event: accepted }) => [eventBusName, accepted['detail-type']]),
    [
      [BUS, 'Prompt'],
      [BUS, 'Other'],
    ],
  );
});

test('an entry without EventBusName goes to the default bus; Time is honoured', async (t) => {
  const { bus, calls } = await startBus(t);
  const { body } = await putEvents(bus.endpoint, {
    Entries: [
      { Source: 'threadwork.test', DetailType: 'Prompt', Detail: '{"n":1}', Time: Date.parse('2026-03-08T14:00:00Z') / 1000 },
      { Source: 'somebody.else', DetailType: 'Anything', Detail: '{"n":2}', EventBusName: BUS },
    ],
  });
  assert.equal(body.FailedEntryCount, 0);
  await bus.drain();
  assert.deepEqual(
    calls.map((call) => [call.arn, (call.event.detail as { n: number }).n]),
    [
      [DEFAULT_BUS_TARGET, 1],
      [OTHER_TARGET, 2],
    ],
  );
  assert.equal(calls[0]?.event.time, '2026-03-08T14:00:00Z');
  assert.deepEqual(calls[0]?.payload, calls[0]?.event, 'no Input or InputPath: the whole event');
});

test('request-level errors: too many entries, unknown operations; a failing target is logged', async (t) => {
  const errors: unknown[] = [];
  const { bus } = await startBus(t, {
    invokeTarget: async () => {
      throw new Error('function crashed');
    },
    onError: (error) => errors.push(error),
  });
  const entry = { Source: 'threadwork.test', DetailType: 'Prompt', Detail: '{}', EventBusName: BUS };
  const tooMany = await putEvents(bus.endpoint, { Entries: Array.from({ length: 11 }, () => entry) });
  assert.equal(tooMany.status, 400);
  assert.equal(tooMany.body.__type, 'ValidationException');
  const unknown = await putEvents(bus.endpoint, {}, 'AWSEvents.PutRule');
  assert.equal(unknown.status, 400);
  assert.equal(unknown.body.__type, 'UnknownOperationException');

  const { body } = await putEvents(bus.endpoint, { Entries: [entry] });
  assert.equal(body.FailedEntryCount, 0, 'delivery failures do not fail the entry');
  await bus.drain();
  assert.deepEqual(
    bus.delivered.map((delivery) => [delivery.targetArn, delivery.ok, delivery.error]),
    [
      [PROMPT_TARGET, false, 'function crashed'],
      [AUDIT_TARGET, false, 'function crashed'],
    ],
  );
  assert.equal(errors.length, 2);
});

// ---------------------------------------------------------------------------------------------
// S3 notifications against fauxqs
// ---------------------------------------------------------------------------------------------

const BUCKET = 'notifications-test';

async function startS3(t: TestContext) {
  const emulator = await startSqsAndS3();
  const s3 = new S3Client({
    endpoint: emulator.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    forcePathStyle: true,
  });
  t.after(async () => {
    s3.destroy();
    await emulator.stop();
  });
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
  const put = (key: string, body: string) => s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
  const remove = (key: string) => s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: key }));
  return { s3, put, remove };
}

const md5 = (text: string) => createHash('md5').update(text).digest('hex');
const summary = (record: S3EventRecord) => [record.eventName, record.s3.object.key];

test('S3 notifications: a put, an overwrite and a delete, filtered by prefix and suffix, in key order', async (t) => {
  const { s3, put, remove } = await startS3(t);
  await put('events/existing.json', '{"before":true}');

  const records: S3EventRecord[] = [];
  const createdOnly: S3EventRecord[] = [];
  const errors: unknown[] = [];
  let failNext = 0;
  const configurations: S3NotificationConfiguration[] = [
    {
      id: 'event-files',
      prefix: 'events/',
      suffix: '.json',
      events: ['s3:ObjectCreated:*', 's3:ObjectRemoved:*'],
      deliver: async (event: S3Event) => {
        assert.equal(event.Records.length, 1, 'one record per notification');
        if (failNext-- > 0) throw new Error('consumer down');
        records.push(...event.Records);
      },
    },
    {
      prefix: 'events/',
      events: ['s3:ObjectCreated:Put'],
      deliver: async (event: S3Event) => {
        createdOnly.push(...event.Records);
      },
    },
  ];
  const notifications = await startS3Notifications({
    s3,
    bucket: BUCKET,
    configurations,
    intervalMs: 60_000,
    onError: (error) => errors.push(error),
  });
  t.after(() => notifications.stop());

  await notifications.poll();
  assert.equal(records.length, 0, 'what the bucket held at start is not notified');

  await put('events/my file=1.json', '{"v":1}');
  await notifications.poll();
  assert.equal(records.length, 1);
  const [created] = records;
  assert.equal(created?.eventVersion, '2.1');
  assert.equal(created?.eventSource, 'aws:s3');
  assert.equal(created?.awsRegion, 'us-east-1');
  assert.equal(created?.eventName, 'ObjectCreated:Put');
  assert.match(created?.eventTime ?? '', /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  assert.equal(created?.s3.s3SchemaVersion, '1.0');
  assert.equal(created?.s3.configurationId, 'event-files');
  assert.deepEqual(created?.s3.bucket, { name: BUCKET, ownerIdentity: { principalId: 'local' }, arn: `arn:aws:s3:::${BUCKET}` });
  assert.equal(created?.s3.object.key, 'events/my+file%3D1.json');
  assert.equal(decodeURIComponent(created!.s3.object.key.replace(/\+/g, ' ')), 'events/my file=1.json');
  assert.equal(created?.s3.object.size, '{"v":1}'.length);
  assert.equal(created?.s3.object.eTag, md5('{"v":1}'));
  assert.match(created?.s3.object.sequencer ?? '', /^[0-9A-F]+$/);

  // Nothing changed: nothing delivered.
  await notifications.poll();
  assert.equal(records.length, 1);

  // Several changes in one poll arrive in key order; keys outside the filter produce nothing.
  await put('events/z.json', '{}');
  await put('events/c.json', '{}');
  await put('other/c.json', '{}');
  await put('events/c.txt', 'text');
  await put('events/my file=1.json', '{"v":2}');
  await notifications.poll();
  assert.deepEqual(records.slice(1).map(summary), [
    ['ObjectCreated:Put', 'events/c.json'],
    ['ObjectCreated:Put', 'events/my+file%3D1.json'],
    ['ObjectCreated:Put', 'events/z.json'],
  ]);
  assert.equal(records[2]?.s3.object.eTag, md5('{"v":2}'), 'the overwrite has the new ETag');
  assert.ok((records[2]?.s3.object.sequencer ?? '') > (records[0]?.s3.object.sequencer ?? ''), 'sequencers grow per key');

  await remove('events/my file=1.json');
  await remove('other/c.json');
  await notifications.poll();
  assert.deepEqual(records.slice(4).map(summary), [['ObjectRemoved:Delete', 'events/my+file%3D1.json']]);
  const removed = records[4]!;
  assert.deepEqual(Object.keys(removed.s3.object).sort(), ['key', 'sequencer'], 'a deletion carries no size or eTag');

  // A failed delivery is reported and delivered again on the next poll.
  failNext = 1;
  await put('events/retry.json', '{}');
  await notifications.poll();
  assert.equal(errors.length, 1);
  assert.equal(records.length, 5);
  await notifications.poll();
  assert.deepEqual(records.slice(5).map(summary), [['ObjectCreated:Put', 'events/retry.json']]);

  // The second configuration: created events only, any suffix under its prefix.
  assert.deepEqual(createdOnly.map(summary), [
    ['ObjectCreated:Put', 'events/my+file%3D1.json'],
    ['ObjectCreated:Put', 'events/c.json'],
    ['ObjectCreated:Put', 'events/c.txt'],
    ['ObjectCreated:Put', 'events/my+file%3D1.json'],
    ['ObjectCreated:Put', 'events/z.json'],
    ['ObjectCreated:Put', 'events/retry.json'],
  ]);
  assert.ok(createdOnly.every((record) => record.s3.configurationId === 'notification-1'));
});

test('S3 notifications poll by themselves every intervalMs', async (t) => {
  const { s3, put } = await startS3(t);
  const keys: string[] = [];
  const notifications = await startS3Notifications({
    s3,
    bucket: BUCKET,
    intervalMs: 20,
    configurations: [
      { events: ['s3:ObjectCreated:*'], deliver: async (event) => void keys.push(...event.Records.map((r) => r.s3.object.key)) },
    ],
  });
  t.after(() => notifications.stop());
  await put('anywhere/at all.txt', 'x');
  const deadline = Date.now() + 5000;
  while (keys.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.deepEqual(keys, ['anywhere/at+all.txt']);
});

test('S3 event keys are encoded as S3 does in its events, and decode back to the real key', () => {
  const cases: [string, string][] = [
    ['plain/key-1_2.3*.json', 'plain/key-1_2.3*.json'],
    ['a b+c', 'a+b%2Bc'],
    ['dt=2026-03-08/été.json', 'dt%3D2026-03-08/%C3%A9t%C3%A9.json'],
    ["x!'()~:,", 'x%21%27%28%29%7E%3A%2C'],
    ['100%+ done/ %2B', '100%25%2B+done/+%252B'],
  ];
  for (const [key, encoded] of cases) {
    assert.equal(encodeS3EventKey(key), encoded, key);
    assert.equal(decodeS3EventKey(encoded), key, encoded);
  }
});
