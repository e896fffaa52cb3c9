// Declared triggers and uploads through the whole local cloud: triggers from the CDK context become
// rules on the default bus (input transformer and all), S3's EventBridge notifications of a second
// bucket, uploads/ in the data bucket; the scheduler function turns each firing into a run in the
// trigger's channel, once per firing, within the trigger's rate limit.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { createManualClock } from '../../packages/local-cloud/src/scheduler/index.ts';
import { startTestStack, type TestStack } from '../support/local-stack.ts';
import { eventually } from '../support/eventually.ts';
import { putData, readData } from '../support/data-bucket.ts';
import type { RecordedRequest } from '../../packages/local-cloud/src/bedrock.ts';
import { functionLogicalIdFromArn } from '../../packages/local-cloud/src/template.ts';
import { dataKeys } from '../../shared/ids.ts';

const TRIGGERS = [
  {
    name: 'prod-alarms',
    source: { eventPattern: { source: ['aws.cloudwatch'], 'detail-type': ['CloudWatch Alarm State Change'] } },
    target: { adapterId: 'slack', channelId: 'C0OPS' },
    text: 'Alarm {detail.alarmName} is {detail.state.value}: {detail.state.reason}',
    dedupeKey: '{detail.alarmName}-{detail.state.timestamp}',
  },
  {
    name: 'incoming-csv',
    source: { s3: { bucket: 'team-incoming', prefix: 'incoming/', suffix: '.csv' } },
    target: { adapterId: 'slack', channelId: 'C0DATA' },
    text: 'Summarise {detail.object.key}',
  },
  {
    // A prefix with a space: S3's events carry keys URL-encoded, so the rule must match the encoded form.
    name: 'monthly-reports',
    source: { s3: { bucket: 'team-incoming', prefix: 'monthly reports/' } },
    target: { adapterId: 'slack', channelId: 'C0REPORTS' },
    text: 'New report {detail.object.key}',
  },
  {
    name: 'noisy',
    source: { eventPattern: { source: ['test.noisy'] } },
    target: { adapterId: 'slack', channelId: 'C0NOISY' },
    text: 'Noise {detail.n}',
    rateLimit: { firings: 5, perMinutes: 60 },
  },
];

const clock = createManualClock(Date.now());
let stack: TestStack;
before(async () => {
  stack = await startTestStack({ clock, triggers: TRIGGERS });
  await putData(stack, 'settings.json', { sandbox: { startEarly: false } });
  stack.bedrock.setDefault(answer);
});
after(async () => {
  await stack?.stop();
});

const lastUserText = (req: RecordedRequest) =>
  (req.body.messages?.at(-1)?.content ?? [])
    .map((b) => b.text ?? b.toolResult?.content?.map((c) => c.text ?? '').join('') ?? '')
    .join('\n');

/** The model: reads an attached file (the sandbox's read tool) when it is told of one, then says what it read; else acknowledges. */
function answer(req: RecordedRequest) {
  const last = req.body.messages?.at(-1)?.content ?? [];
  const result = last.find((b) => b.toolResult)?.toolResult;
  if (result)
    return {
      text: `read: ${(result.content ?? [])
        .map((c) => c.text ?? '')
        .join('')
        .trim()}`,
    };
  const text = lastUserText(req);
  const path = /: (\/workspace\/data\/\S+\/attachments\/\S+) \(/.exec(text)?.[1];
  if (path) return { toolUses: [{ toolUseId: `tu-read-${Math.random().toString(36).slice(2)}`, name: 'read', input: { path } }] };
  return { text: `ack: ${text.replace(/^\[[^\]]*\]\s*/, '').split('\n')[0]}` };
}

/** The channel's top-level messages (each opens a thread). */
const channelPosts = (channel: string) =>
  (stack.slack.messages.channels.get(channel) ?? []).filter((m) => !m.thread_ts || m.thread_ts === m.ts);
const bot = (channel: string, ts: string) => stack.slack.messages.thread(channel, ts).filter((m) => m.bot_id && m.text !== '...');

function alarm(name: string, state: Record<string, unknown>) {
  return stack.cloud.eventBridge.sendServiceEvent({
    source: 'aws.cloudwatch',
    'detail-type': 'CloudWatch Alarm State Change',
    resources: [`arn:aws:cloudwatch:us-east-1:000000000000:alarm:${name}`],
    detail: { alarmName: name, state },
  });
}

test('an alarm event fills its template, opens a thread in its channel, and the agent runs there', async () => {
  alarm('HighErrors', { value: 'ALARM', reason: 'Threshold Crossed: 12 errors', timestamp: '2026-11-24T10:00:00Z' });
  await stack.cloud.eventBridge.drain();
  const root = await eventually(
    () => channelPosts('C0OPS').find((m) => m.bot_id && m.text === 'Alarm HighErrors is ALARM: Threshold Crossed: 12 errors'),
    15_000,
    'posted to the ops channel',
  );
  await eventually(
    () => bot('C0OPS', root.ts).some((m) => m.text?.includes('Alarm HighErrors is ALARM') && m.ts !== root.ts),
    60_000,
    'answered in the new thread',
  );
  // The run's prompt says where it came from.
  const prompt = stack.bedrock.requests.map(lastUserText).find((t) => t.includes('Alarm HighErrors is ALARM'));
  assert.match(prompt ?? '', /event trigger prod-alarms/);
});

test('a malformed event renders its missing fields visibly instead of failing', async () => {
  alarm('NoState', {});
  await stack.cloud.eventBridge.drain();
  await eventually(
    () =>
      channelPosts('C0OPS').find(
        (m) => m.bot_id && m.text === 'Alarm NoState is {detail.state.value: missing}: {detail.state.reason: missing}',
      ),
    15_000,
    'posted with the missing fields shown',
  );
});

test('a redelivered event, and a second event with the same dedupe key, run once', async () => {
  const before = channelPosts('C0OPS').length;
  const state = { value: 'ALARM', reason: 'disk full', timestamp: '2026-11-24T11:00:00Z' };
  alarm('DiskFull', state);
  await stack.cloud.eventBridge.drain();
  const delivery = await eventually(
    () => stack.cloud.eventBridge.delivered.find((d) => JSON.stringify(d.payload).includes('DiskFull')),
    5_000,
    'delivered',
  );
  // EventBridge delivers at least once: the same input again, and the same alarm state again.
  await stack.cloud.lambda.invoke(functionLogicalIdFromArn(delivery.targetArn)!, delivery.payload, { kind: 'async' });
  alarm('DiskFull', state);
  await stack.cloud.eventBridge.drain();
  await eventually(() => channelPosts('C0OPS').some((m) => m.text?.startsWith('Alarm DiskFull')), 15_000, 'posted');
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  assert.equal(channelPosts('C0OPS').filter((m) => m.text?.startsWith('Alarm DiskFull')).length, 1, 'one thread for one alarm state');
  assert.equal(channelPosts('C0OPS').length, before + 1);
});

test('a file landing in a watched bucket is copied into a new thread, and the agent reads it in its sandbox', async () => {
  await stack.cloud.clients.s3.send(new PutObjectCommand({ Bucket: 'team-incoming', Key: 'incoming/notes.txt', Body: 'not a csv' }));
  await stack.cloud.clients.s3.send(
    new PutObjectCommand({ Bucket: 'team-incoming', Key: 'incoming/sales.csv', Body: 'region,total\nnorth,42\n', ContentType: 'text/csv' }),
  );
  await stack.cloud.objectCreatedEvents.poll();
  await stack.cloud.eventBridge.drain();
  const root = await eventually(
    () => channelPosts('C0DATA').find((m) => m.bot_id && m.text === 'Summarise incoming/sales.csv'),
    15_000,
    'posted to the data channel',
  );
  await eventually(
    () => bot('C0DATA', root.ts).some((m) => m.text?.startsWith('read:') && m.text.includes('north,42')),
    60_000,
    'the agent read the file',
  );
  assert.equal(channelPosts('C0DATA').length, 1, 'the .txt file matched no trigger');
  // The thread's log names the copied file.
  const logKey = dataKeys(`slack:C0DATA:${root.ts}`).log;
  await eventually(async () => /attachments\/\d+_sales\.csv/.test((await readData(stack, logKey)) ?? ''), 15_000, 'the log names the file');
});

test('keys holding a space and a "+" arrive URL-encoded from S3; the trigger matches, names and copies the real object', async () => {
  const put = (Key: string, Body: string) => stack.cloud.clients.s3.send(new PutObjectCommand({ Bucket: 'team-incoming', Key, Body }));
  await put('incoming/Q1 sales+tax.csv', 'region,total\nsouth,7\n');
  await put('monthly reports/march+april.txt', 'two months in one');
  await stack.cloud.objectCreatedEvents.poll();
  // What EventBridge carried: the keys as S3 encodes them in events.
  const carried = stack.cloud.eventBridge.delivered
    .map((d) => (d.payload as { event?: { detail?: { object?: { key?: string } } } }).event?.detail?.object?.key)
    .filter(Boolean);
  assert.ok(carried.includes('incoming/Q1+sales%2Btax.csv'), JSON.stringify(carried));
  assert.ok(carried.includes('monthly+reports/march%2Bapril.txt'), JSON.stringify(carried));
  const csv = await eventually(
    () => channelPosts('C0DATA').find((m) => m.bot_id && m.text === 'Summarise incoming/Q1 sales+tax.csv'),
    15_000,
    'the csv trigger names the real key',
  );
  await eventually(() => bot('C0DATA', csv.ts).some((m) => m.text?.includes('south,7')), 60_000, 'the agent read the copied object');
  const report = await eventually(
    () => channelPosts('C0REPORTS').find((m) => m.bot_id && m.text === 'New report monthly reports/march+april.txt'),
    15_000,
    'the prefix with a space matched',
  );
  await eventually(() => bot('C0REPORTS', report.ts).some((m) => m.text?.includes('two months in one')), 60_000, 'read the report');
});

test('an upload under uploads/ starts a thread in its channel with the file, following its .prompt.txt', async () => {
  await putData(stack, 'uploads/slack/C0UP/todo.md.prompt.txt', 'Read this list and say what it holds.');
  await putData(stack, 'uploads/slack/C0UP/todo.md', '- ship triggers\n');
  await stack.cloud.s3Notifications.poll();
  const root = await eventually(
    () => channelPosts('C0UP').find((m) => m.bot_id && /^📎 todo\.md \(1 KB\) was uploaded\.$/.test(m.text ?? '')),
    15_000,
    'the note names the file',
  );
  await eventually(
    () => bot('C0UP', root.ts).some((m) => m.text?.startsWith('read:') && m.text.includes('- ship triggers')),
    60_000,
    'the agent read the upload',
  );
  const prompt = stack.bedrock.requests.map(lastUserText).find((t) => t.includes('Read this list and say what it holds.'));
  assert.ok(prompt, 'the sidecar is the instruction');
  assert.equal(channelPosts('C0UP').length, 1, 'the sidecar itself starts nothing');
});

test('a burst of 50 firings runs 5 (the rate limit) and one summary at the end of the window', async () => {
  for (let n = 1; n <= 50; n++)
    stack.cloud.eventBridge.sendServiceEvent({ source: 'test.noisy', 'detail-type': 'noise', detail: { n }, resources: [] });
  await stack.cloud.eventBridge.drain();
  await eventually(() => channelPosts('C0NOISY').filter((m) => m.bot_id && m.text?.startsWith('Noise ')).length === 5, 30_000, 'five runs');
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  assert.equal(channelPosts('C0NOISY').filter((m) => m.bot_id && m.text?.startsWith('Noise ')).length, 5, 'no more than the limit');
  // The summary fires when the window ends.
  await stack.cloud.scheduler.advance(61 * 60_000);
  const summary = await eventually(
    () => channelPosts('C0NOISY').find((m) => m.bot_id && m.text?.startsWith('Trigger "noisy" fired 45 more times')),
    20_000,
    'the summary',
  );
  assert.match(summary.text ?? '', /over its limit of 5 per 60 minutes; those firings did not run/);
});
