// The event bus through the whole local cloud: event files in the data bucket -> S3 notifications ->
// the scheduler function -> EventBridge Scheduler (a controllable clock) -> firings -> prompts in
// threads (or new threads in channels); events on the custom bus; bad files explain themselves.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { createManualClock } from '../../packages/local-cloud/src/scheduler/index.ts';
import { startTestStack, type TestStack } from '../support/local-stack.ts';
import { eventually } from '../support/eventually.ts';
import { scheduleNameFor } from '../../shared/events/schema.ts';
import { resolveCloudFormation } from '../../packages/local-cloud/src/resources.ts';

// The scheduler's clock is manual; the functions' clock is real time, so dates lie in the future.
// DST in New York starts on 2027-03-14.
const clock = createManualClock('2027-03-12T15:00:00Z');
let stack: TestStack;
before(async () => {
  stack = await startTestStack({ clock });
  // Plain conversations: no sandbox per thread.
  await put('settings.json', { sandbox: { startEarly: false } });
  stack.bedrock.setDefault((req) => ({
    text: `ack: ${/"text":"[^"]*?: ((?:[^"\\]|\\.)*)"/.exec(JSON.stringify(req.body.messages?.at(-1)))?.[1]}`,
  }));
});
after(async () => {
  await stack?.stop();
});

async function put(key: string, body: unknown) {
  await stack.cloud.clients.s3.send(
    new PutObjectCommand({ Bucket: stack.cloud.names.bucket, Key: key, Body: typeof body === 'string' ? body : JSON.stringify(body) }),
  );
}
async function read(key: string): Promise<string | undefined> {
  try {
    return await (
      await stack.cloud.clients.s3.send(new GetObjectCommand({ Bucket: stack.cloud.names.bucket, Key: key }))
    ).Body!.transformToString();
  } catch {
    return undefined;
  }
}
/** Drop an event file and let S3 notify (the local S3 is polled for changes). */
async function drop(name: string, body: unknown) {
  await put(`events/${name}`, body);
  await stack.cloud.s3Notifications.poll();
}
const schedule = (name: string) =>
  stack.cloud.scheduler.schedules.get(`${stack.cloud.names.scheduleGroup}/${scheduleNameFor(`events/${name}`)}`);
const bot = (channel: string, ts: string) => stack.slack.messages.thread(channel, ts).filter((m) => m.bot_id && m.text !== '...');

async function thread(): Promise<{ channel: string; threadTs: string; threadId: string }> {
  const posted = await stack.slack.postUserMessage({ text: `<@U0LOCALBOT> hello ${Math.random()}` });
  const threadId = `slack:${posted.channel}:${posted.threadTs}`;
  await eventually(() => bot(posted.channel, posted.threadTs).length === 1, 15_000, 'first answer');
  return { channel: posted.channel, threadTs: posted.threadTs, threadId };
}

test('an immediate event runs in its thread now', async () => {
  const t = await thread();
  await drop('deploy-done.json', { type: 'immediate', threadId: t.threadId, text: 'the deploy finished' });
  await eventually(() => bot(t.channel, t.threadTs).some((m) => m.text === 'ack: the deploy finished'), 15_000, 'event answered');
});

test('a one-shot event fires at its local time in its time zone, once, and its schedule goes away', async () => {
  const t = await thread();
  // 15:30 in New York (EST, UTC-5) on the clock's day = 20:30Z.
  const day = new Date(stack.cloud.scheduler.now()).toISOString().slice(0, 10);
  await drop('reminder.json', {
    type: 'one-shot',
    threadId: t.threadId,
    text: 'stand-up reminder',
    schedule: `${day}T15:30:00`,
    timezone: 'America/New_York',
  });
  const created = schedule('reminder.json');
  assert.equal(created?.expression, `at(${day}T15:30:00)`);
  assert.equal(created?.timezone, 'America/New_York');
  await stack.cloud.scheduler.advance(Date.parse(`${day}T20:29:00Z`) - stack.cloud.scheduler.now());
  assert.equal(bot(t.channel, t.threadTs).length, 1, 'not yet');
  await stack.cloud.scheduler.advance(2 * 60_000);
  await eventually(() => bot(t.channel, t.threadTs).some((m) => m.text === 'ack: stand-up reminder'), 15_000, 'reminder answered');
  assert.equal(stack.cloud.scheduler.firings.at(-1)?.scheduledTime, `${day}T20:30:00Z`);
  assert.equal(schedule('reminder.json'), undefined, 'deleted after completion');
});

test('a periodic event fires on each occurrence, across a DST change, and every firing runs', async () => {
  const t = await thread();
  const before = stack.cloud.scheduler.now();
  await drop('daily.json', {
    type: 'periodic',
    threadId: t.threadId,
    text: 'daily check',
    schedule: '0 9 * * *',
    timezone: 'America/New_York',
  });
  assert.equal(schedule('daily.json')?.expression, 'cron(0 9 * * ? *)');
  const firedBefore = stack.cloud.scheduler.firings.length;
  await stack.cloud.scheduler.advance(Date.parse('2027-03-15T15:00:00Z') - stack.cloud.scheduler.now()); // Mar 13, 14 (DST starts), 15
  const fired = stack.cloud.scheduler.firings.slice(firedBefore).filter((f) => f.name === scheduleNameFor('events/daily.json'));
  assert.deepEqual(
    fired.map((f) => f.scheduledTime),
    ['2027-03-13T14:00:00Z', '2027-03-14T13:00:00Z', '2027-03-15T13:00:00Z'],
  );
  assert.ok(stack.cloud.scheduler.now() > before);
  await eventually(
    () => bot(t.channel, t.threadTs).filter((m) => m.text === 'ack: daily check').length === 3,
    30_000,
    'three runs, none deduplicated away',
  );
});

test('an interval event ("every 30m") fires one interval after it is saved, then every interval', async () => {
  const t = await thread();
  const saved = stack.cloud.scheduler.now();
  await drop('half-hourly.json', { type: 'periodic', threadId: t.threadId, text: 'half-hourly check', schedule: 'every 30m' });
  assert.equal(schedule('half-hourly.json')?.expression, 'rate(30 minutes)');
  const firedBefore = stack.cloud.scheduler.firings.length;
  await stack.cloud.scheduler.advance(95 * 60_000);
  const fired = stack.cloud.scheduler.firings.slice(firedBefore).filter((f) => f.name === scheduleNameFor('events/half-hourly.json'));
  // The schedule starts one interval after the file is saved (by the function's clock, which this
  // manual clock may be ahead of): the first firing comes within one interval, then every 30 minutes.
  const times = fired.map((f) => Date.parse(f.scheduledTime));
  assert.ok(times.length >= 3, `fired ${times.length} times in 95 minutes`);
  assert.ok(times[0]! > saved && times[0]! <= saved + 30 * 60_000, 'first firing within one interval, not at once');
  assert.deepEqual(
    times.slice(1).map((time, i) => time - times[i]!),
    times.slice(1).map(() => 30 * 60_000),
  );
  await eventually(
    () => bot(t.channel, t.threadTs).filter((m) => m.text === 'ack: half-hourly check').length === times.length,
    30_000,
    'one run per firing',
  );
  await stack.cloud.clients.s3.send(new DeleteObjectCommand({ Bucket: stack.cloud.names.bucket, Key: 'events/half-hourly.json' }));
  await stack.cloud.s3Notifications.poll();
});

test('deleting the file deletes its schedule; changing it updates the one schedule', async () => {
  const t = await thread();
  const file = { type: 'periodic', threadId: t.threadId, text: 'weekly', schedule: '0 10 * * 1', timezone: 'UTC' };
  await drop('weekly.json', file);
  assert.equal(schedule('weekly.json')?.expression, 'cron(0 10 ? * 2 *)');
  await drop('weekly.json', { ...file, schedule: '0 11 * * 1' });
  assert.equal(schedule('weekly.json')?.expression, 'cron(0 11 ? * 2 *)');
  assert.equal([...stack.cloud.scheduler.schedules.values()].filter((s) => s.name === scheduleNameFor('events/weekly.json')).length, 1);
  await stack.cloud.clients.s3.send(new DeleteObjectCommand({ Bucket: stack.cloud.names.bucket, Key: 'events/weekly.json' }));
  await stack.cloud.s3Notifications.poll();
  assert.equal(schedule('weekly.json'), undefined);
});

test('a channel event posts to the channel, starts a new thread, and the agent answers there', async () => {
  await drop('report.json', { type: 'immediate', adapterId: 'slack', channelId: 'C0REPORTS', text: 'Time for the weekly report' });
  const root = await eventually(
    () => stack.slack.messages.channels.get('C0REPORTS')?.find((m) => m.text === 'Time for the weekly report' && m.bot_id),
    15_000,
    'posted to the channel',
  );
  await eventually(
    () => bot('C0REPORTS', root.ts).some((m) => m.text === 'ack: Time for the weekly report' && m.ts !== root.ts),
    15_000,
    'answered in the new thread',
  );
  // A follow-up in that thread reaches the agent (it subscribed to the thread it started).
  await stack.slack.postUserMessage({ channel: 'C0REPORTS', text: 'and the numbers?', threadTs: root.ts });
  await eventually(() => bot('C0REPORTS', root.ts).some((m) => m.text === 'ack: and the numbers?'), 15_000, 'follow-up answered');
});

test('a one-shot time already past fires at once, with a note', async () => {
  const t = await thread();
  await drop('late.json', {
    type: 'one-shot',
    threadId: t.threadId,
    text: 'late reminder',
    schedule: '2026-01-01T09:00:00',
    timezone: 'Europe/Berlin',
  });
  assert.equal(schedule('late.json'), undefined);
  await eventually(() => bot(t.channel, t.threadTs).some((m) => m.text.startsWith('ack: late reminder')), 15_000, 'fired now');
  const sent = JSON.stringify(stack.bedrock.requests.at(-1)!.body.messages);
  assert.match(sent, /already passed/);
});

test('each invalid file gets an error file beside it, nothing is scheduled, other events are unaffected', async () => {
  const t = await thread();
  await drop('good.json', { type: 'periodic', threadId: t.threadId, text: 'fine', schedule: '0 8 * * *', timezone: 'UTC' });
  const cases: [string, string, RegExp][] = [
    ['bad-json.json', '{"type": "immediate", ', /JSON/i],
    ['bad-type.json', JSON.stringify({ type: 'sometimes', threadId: t.threadId, text: 'x' }), /type/],
    [
      'bad-cron.json',
      JSON.stringify({ type: 'periodic', threadId: t.threadId, text: 'x', schedule: '61 * * * *', timezone: 'UTC' }),
      /minute/i,
    ],
    [
      'bad-zone.json',
      JSON.stringify({ type: 'periodic', threadId: t.threadId, text: 'x', schedule: '0 9 * * *', timezone: 'Mars/Olympus_Mons' }),
      /time ?zone/i,
    ],
    ['no-target.json', JSON.stringify({ type: 'immediate', text: 'x' }), /threadId|target/],
    // Within the text limit (128 KB), but control characters take 6 bytes each in the schedule's JSON
    // input, and EventBridge Scheduler (so the local one too) refuses an input over 256 KB.
    [
      'too-long.json',
      JSON.stringify({ type: 'periodic', threadId: t.threadId, text: '\u0001'.repeat(50 * 1024), schedule: '0 9 * * *', timezone: 'UTC' }),
      /too long to schedule.*\d+ bytes.*256 KB/,
    ],
  ];
  for (const [name, body] of cases) await put(`events/${name}`, body);
  await stack.cloud.s3Notifications.poll();
  for (const [name, , reason] of cases) {
    const error = await read(`events/${name.replace(/\.json$/, '.error.json')}`);
    assert.ok(error, `${name} has an error file`);
    assert.match(JSON.parse(error).error, reason, name);
    assert.equal(schedule(name), undefined, `${name} scheduled nothing`);
  }
  assert.ok(schedule('good.json'), 'the valid file is still scheduled');
  // Fixing a file removes its error file.
  await drop('bad-zone.json', { type: 'periodic', threadId: t.threadId, text: 'x', schedule: '0 9 * * *', timezone: 'Europe/Paris' });
  assert.equal(await read('events/bad-zone.error.json'), undefined);
  assert.ok(schedule('bad-zone.json'));
});

test('keys S3 URL-encodes in its notifications are handled under their own names: a Teams channel folder with "%" is scheduled and unscheduled; a name with a space and "+" is refused beside itself', async () => {
  // A Teams channel's folder is its id encoded as in the data tree: "%" in the key, "%25" in the notification.
  const teamsFile = 'teams/19%3Aabc%40thread.tacv2/standup.json';
  await drop(teamsFile, { type: 'periodic', text: 'standup', schedule: '0 9 * * 1', timezone: 'UTC' });
  assert.equal(schedule(teamsFile)?.description, `From events/${teamsFile}`);
  // Event file names may use only letters, digits, ".", "_" and "-": the error file lands beside the real key.
  await drop('team standup+retro.json', { type: 'periodic', text: 'standup', schedule: '0 9 * * 1', timezone: 'UTC' });
  assert.match(JSON.parse((await read('events/team standup+retro.error.json')) ?? '{}').error ?? '', /may use only letters, digits/);
  assert.equal(schedule('team standup+retro.json'), undefined);
  // Deleting it deletes the schedule: the removal's notification names the same key.
  await stack.cloud.clients.s3.send(new DeleteObjectCommand({ Bucket: stack.cloud.names.bucket, Key: `events/${teamsFile}` }));
  await stack.cloud.s3Notifications.poll();
  assert.equal(schedule(teamsFile), undefined);
});

test('an event on the custom bus reaches its thread', async () => {
  const t = await thread();
  const rule = Object.values(stack.cloud.template.Resources).find((r) => r.Type === 'AWS::Events::Rule' && r.Properties?.EventBusName);
  assert.ok(rule, 'a rule on the custom bus');
  const busName = String(resolveCloudFormation(stack.cloud.template, rule.Properties.EventBusName));
  const putEvents = (entries: unknown[]) =>
    fetch(stack.cloud.eventBridge.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': 'AWSEvents.PutEvents' },
      body: JSON.stringify({ Entries: entries }),
    }).then((r) => r.json() as Promise<{ FailedEntryCount: number }>);
  const out = await putEvents([
    {
      EventBusName: busName,
      Source: 'my.ci',
      DetailType: 'Deploy finished',
      Detail: JSON.stringify({ threadId: t.threadId, text: 'build 42 is green' }),
    },
  ]);
  assert.equal(out.FailedEntryCount, 0);
  await stack.cloud.eventBridge.drain();
  await eventually(() => bot(t.channel, t.threadTs).some((m) => m.text === 'ack: build 42 is green'), 15_000, 'bus event answered');
});

test('the agent schedules a reminder for itself by writing an event file with its tools', async () => {
  const t = await thread();
  const file = {
    type: 'one-shot',
    threadId: t.threadId,
    text: 'check the oven',
    schedule: '2027-12-24T18:00:00',
    timezone: 'Europe/London',
  };
  stack.bedrock.script(
    {
      toolUses: [
        {
          toolUseId: 'tu-evt',
          name: 'write',
          input: { path: `/workspace/data/events/slack/${t.channel}/oven.json`, content: JSON.stringify(file) },
        },
      ],
    },
    { text: 'Reminder set.' },
  );
  await stack.slack.postUserMessage({ text: 'remind me to check the oven on Christmas Eve at 6pm', threadTs: t.threadTs });
  await eventually(() => bot(t.channel, t.threadTs).some((m) => m.text === 'Reminder set.'), 60_000, 'agent replied');
  // A sandbox writes into its own channel's events folder.
  assert.deepEqual(JSON.parse((await read(`events/slack/${t.channel}/oven.json`))!), file);
  await stack.cloud.s3Notifications.poll();
  assert.equal(schedule(`slack/${t.channel}/oven.json`)?.expression, 'at(2027-12-24T18:00:00)');
  assert.equal(schedule(`slack/${t.channel}/oven.json`)?.timezone, 'Europe/London');
});

test('a heartbeat reads HEARTBEAT.md and posts only when there is something to do', async () => {
  const t = await thread();
  await put('HEARTBEAT.md', '# Goals\n- keep the changelog current\n');
  await drop('heartbeat.json', {
    type: 'periodic',
    heartbeat: true,
    threadId: t.threadId,
    text: 'every 30 minutes',
    schedule: '*/30 * * * *',
    timezone: 'UTC',
  });
  assert.equal(schedule('heartbeat.json')?.expression, 'cron(0/30 * * * ? *)');
  const repliesBefore = bot(t.channel, t.threadTs).length;
  stack.bedrock.script(
    { toolUses: [{ toolUseId: 'tu-hb', name: 'read', input: { path: '/workspace/data/HEARTBEAT.md' } }] },
    { text: 'HEARTBEAT_OK' },
    { text: 'The changelog is behind: I updated it.' },
  );
  await stack.cloud.scheduler.advance(30 * 60_000);
  await eventually(
    () => stack.bedrock.requests.some((r) => JSON.stringify(r.body.messages).includes('keep the changelog current')),
    30_000,
    'the agent read HEARTBEAT.md',
  );
  await eventually(
    async () =>
      stack.cloud.stepFunctions.executions.size > 0 &&
      [...stack.cloud.stepFunctions.executions.values()].every((e) => e.status !== 'RUNNING'),
    30_000,
    'first heartbeat done',
  );
  assert.equal(bot(t.channel, t.threadTs).filter((m) => !m.blocks?.length).length, repliesBefore, 'nothing to do: nothing posted');
  await stack.cloud.scheduler.advance(30 * 60_000);
  await eventually(
    () => bot(t.channel, t.threadTs).some((m) => m.text === 'The changelog is behind: I updated it.'),
    30_000,
    'second heartbeat spoke',
  );
  await stack.cloud.clients.s3.send(new DeleteObjectCommand({ Bucket: stack.cloud.names.bucket, Key: 'events/heartbeat.json' }));
  await stack.cloud.s3Notifications.poll();
});
