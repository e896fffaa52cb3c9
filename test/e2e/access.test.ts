// Who may use the agent and who may stop or steer it (settings.json `access`), and replayed slash
// commands and button presses, through the whole local cloud: the real webhook and dispatch, the
// Slack stand-in delivering signed payloads in the recorded shapes, the scripted model.
import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { gate } from '../../packages/local-cloud/src/bedrock.ts';
import { putData, readData } from '../support/data-bucket.ts';
import { eventually } from '../support/eventually.ts';
import { threadOf, threadProbes } from '../support/threads.ts';
import { startTestStack, type TestStack } from '../support/local-stack.ts';
import { buttonPress, postForm, recordedSlashCommand } from '../support/slack-forms.ts';
import { toolTurn } from '../support/scripted-run.ts';

let stack: TestStack;
before(async () => {
  stack = await startTestStack();
  stack.bedrock.setDefault(() => ({ text: 'ok' }));
});
after(async () => {
  await stack?.stop();
});

const ADMIN = 'U0ADMIN';
const settings = (access: Record<string, unknown>) => putData(stack, 'settings.json', { sandbox: { startEarly: false }, access });
beforeEach(() => settings({}));

const { runsOf, actor, idle, modelSaw } = threadProbes(() => stack);
const ephemeralTo = (user: string, threadTs: string) =>
  stack.slack.ephemeral.filter((m) => m.visibleTo === user && m.thread_ts === threadTs);
const botSaid = (channel: string, threadTs: string, text: RegExp) =>
  stack.slack.messages.thread(channel, threadTs).filter((m) => m.bot_id && text.test(m.text));
const mention = (text: string, user: string, more: { channel?: string; threadTs?: string } = {}) =>
  stack.slack.postUserMessage({ text: `<@U0LOCALBOT> ${text}`, user, ...more });

/** The thread's prompts before this one were all handled: dispatch takes a thread's prompts in order. */
async function answeredAfter(posted: { channel: string; threadTs: string }, user: string, label: string) {
  await mention(label, user, { channel: posted.channel, threadTs: posted.threadTs });
  await eventually(() => modelSaw(label) > 0, 30_000, `${label} at the model`);
  await idle(threadOf(posted));
}

test('a person outside the users allow-list is told once per thread; nothing of theirs is queued or reaches the model; admins and listed people are answered', async () => {
  await settings({ users: ['slack:U0LISTED'], admins: [`slack:${ADMIN}`] });
  const first = await mention('stranger-one', 'U0STRANGER');
  await eventually(() => ephemeralTo('U0STRANGER', first.threadTs).length > 0, 15_000, 'refusal');
  assert.match(ephemeralTo('U0STRANGER', first.threadTs)[0]!.text, /allow-list/);
  // Again, with a mention and without: no second notice in this thread.
  await mention('stranger-two', 'U0STRANGER', { threadTs: first.threadTs });
  await stack.slack.postUserMessage({ text: 'stranger-three', user: 'U0STRANGER', threadTs: first.threadTs });
  await answeredAfter(first, ADMIN, 'admin-here');
  await answeredAfter(first, 'U0LISTED', 'listed-here');
  assert.equal(ephemeralTo('U0STRANGER', first.threadTs).length, 1, 'told once in this thread');
  for (const text of ['stranger-one', 'stranger-two', 'stranger-three']) assert.equal(modelSaw(text), 0, `${text} never reached the model`);
  assert.equal(runsOf(threadOf(first)).length, 2, 'only the admin and the listed person started runs');
  // Another thread: told again, once.
  const other = await mention('stranger-elsewhere', 'U0STRANGER');
  await eventually(() => ephemeralTo('U0STRANGER', other.threadTs).length === 1, 15_000, 'refusal in the other thread');
  assert.equal(await actor(threadOf(other)), undefined, 'nothing admitted to that thread');
});

test('a channel outside the channels allow-list: told once, nothing runs, the bot stops following the thread; an admin is still answered there', async () => {
  await settings({ channels: ['slack:C0OPEN'], admins: [`slack:${ADMIN}`] });
  const posted = await mention('closed-one', 'U0SOMEONE', { channel: 'C0CLOSED' });
  await eventually(() => ephemeralTo('U0SOMEONE', posted.threadTs).length > 0, 15_000, 'refusal');
  assert.match(ephemeralTo('U0SOMEONE', posted.threadTs)[0]!.text, /not enabled in this channel/);
  await mention('closed-two', 'U0SOMEONE', { channel: 'C0CLOSED', threadTs: posted.threadTs });
  await answeredAfter(posted, ADMIN, 'admin-in-closed');
  assert.equal(ephemeralTo('U0SOMEONE', posted.threadTs).length, 1);
  assert.equal(modelSaw('closed-one') + modelSaw('closed-two'), 0);
  assert.equal(runsOf(threadOf(posted)).length, 1, "only the admin's run");
  // The open channel works for everyone.
  const open = await mention('open-one', 'U0SOMEONE', { channel: 'C0OPEN' });
  await eventually(() => modelSaw('open-one') > 0, 30_000, 'open channel answered');
  await idle(threadOf(open));
});

/** A run held at the model; with `card`, after a tool call, so its Stop card is in the thread. */
async function heldRun(label: string, user: string, options: { card?: boolean } = {}) {
  const hold = gate();
  stack.bedrock.script(...(options.card ? [toolTurn('search_channel', { query: label })] : []), {
    text: `${label} held`,
    hold: hold.promise,
  });
  const posted = await mention(label, user);
  // Held at the model: after the tool call's result, with a card (so no scripted turn is left for another run).
  await eventually(() => modelSaw(label) >= (options.card ? 2 : 1), 30_000, `${label} at the model`);
  const card = options.card
    ? await eventually(
        () => stack.slack.messages.thread(posted.channel, posted.threadTs).find((m) => JSON.stringify(m.blocks ?? []).includes('stop-run')),
        30_000,
        'stop card',
      )
    : undefined;
  return { posted, threadId: threadOf(posted), hold, cardTs: card?.ts ?? '' };
}

test('control "requester": another person cannot stop or steer the run, by message or button; the requester and an admin can', async () => {
  await settings({ control: 'requester', admins: [`slack:${ADMIN}`] });
  const { posted, threadId, hold, cardTs } = await heldRun('requester-run', 'U0REQUESTER', { card: true });
  await stack.slack.postUserMessage({ text: 'stop', user: 'U0OTHER', threadTs: posted.threadTs });
  await stack.slack.postUserMessage({ text: 'steer do something else', user: 'U0OTHER', threadTs: posted.threadTs });
  await eventually(() => ephemeralTo('U0OTHER', posted.threadTs).length === 2, 15_000, 'two refusals');
  for (const m of ephemeralTo('U0OTHER', posted.threadTs)) assert.match(m.text, /only the person who asked for this, or an admin/);
  const press = (user: string) =>
    postForm(stack, {
      payload: JSON.stringify(buttonPress({ ...posted, cardTs, user, actionId: 'stop-run', value: runsOf(threadId)[0]!.name })),
    });
  assert.equal((await press('U0OTHER')).status, 200);
  assert.equal(ephemeralTo('U0OTHER', posted.threadTs).length, 3, 'the button press refused too');
  const state = await actor(threadId);
  assert.equal(state?.abortRunId, undefined, 'the run is untouched');
  assert.equal(state?.steer, undefined, 'no steer queued');
  assert.equal(runsOf(threadId)[0]!.status, 'RUNNING');
  // The requester's stop works.
  await stack.slack.postUserMessage({ text: 'stop', user: 'U0REQUESTER', threadTs: posted.threadTs });
  await eventually(() => runsOf(threadId)[0]?.status === 'ABORTED', 15_000, 'stopped by its requester');
  hold.release();
  await idle(threadId);
  // An admin stops anyone's run, with the button.
  const second = await heldRun('admin-stops', 'U0REQUESTER', { card: true });
  const adminPress = buttonPress({
    ...second.posted,
    cardTs: second.cardTs,
    user: ADMIN,
    actionId: 'stop-run',
    value: runsOf(second.threadId)[0]!.name,
  });
  assert.equal((await postForm(stack, { payload: JSON.stringify(adminPress) })).status, 200);
  await eventually(() => runsOf(second.threadId)[0]?.status === 'ABORTED', 15_000, 'stopped by an admin');
  second.hold.release();
  await idle(second.threadId);
  assert.equal(botSaid(second.posted.channel, second.posted.threadTs, /^Stopped\. \(by /).length, 1);
});

test('a slash command delivered twice acts once', async () => {
  const { posted, threadId, hold } = await heldRun('slash-twice', 'U0SLASHER');
  const fields = {
    ...recordedSlashCommand(),
    team_id: 'T0LOCAL',
    channel_id: posted.channel,
    user_id: 'U0SLASHER',
    command: '/steer',
    text: 'consider the replay',
  };
  const [one, two] = [await postForm(stack, fields), await postForm(stack, fields)];
  assert.deepEqual([one.status, two.status], [200, 200]);
  assert.equal((await actor(threadId))?.steer?.length, 1, 'one steer queued');
  assert.equal(stack.slack.ephemeral.filter((m) => m.visibleTo === 'U0SLASHER' && /Got it/.test(m.text)).length, 1);
  // A new invocation (a new trigger id) acts again.
  await postForm(stack, { ...fields, trigger_id: `${fields.trigger_id}-again` });
  assert.equal((await actor(threadId))?.steer?.length, 2);
  hold.release();
  await idle(threadId);
});

test('a button press delivered twice acts once', async () => {
  const { posted, threadId, hold, cardTs } = await heldRun('press-twice', 'U0PRESSER', { card: true });
  const payload = JSON.stringify(
    buttonPress({ ...posted, cardTs, user: 'U0PRESSER', actionId: 'stop-run', value: runsOf(threadId)[0]!.name }),
  );
  const [one, two] = [await postForm(stack, { payload }), await postForm(stack, { payload })];
  assert.deepEqual([one.status, two.status], [200, 200]);
  await eventually(() => runsOf(threadId)[0]?.status === 'ABORTED', 15_000, 'stopped');
  hold.release();
  await idle(threadId);
  assert.equal(botSaid(posted.channel, posted.threadTs, /^Stopped\./).length, 1, 'one "Stopped." post');
  assert.equal(ephemeralTo('U0PRESSER', posted.threadTs).length, 0, 'and no "nothing is running" for a second press');
});

test('admins see and change a channel setting from the chat; anyone else is refused and nothing changes', async () => {
  await settings({ admins: [`slack:${ADMIN}`], channels: [] });
  const before = await readData(stack, 'settings.json');
  const stranger = await mention('settings set queueMode "interrupt"', 'U0NOTADMIN', { channel: 'C0SETTINGS' });
  await eventually(() => ephemeralTo('U0NOTADMIN', stranger.threadTs).length > 0, 15_000, 'refusal');
  assert.match(ephemeralTo('U0NOTADMIN', stranger.threadTs)[0]!.text, /only admins/);
  assert.equal(await readData(stack, 'settings.json'), before, 'settings.json untouched');
  const posted = await mention('settings set queueMode "interrupt"', ADMIN, { channel: 'C0SETTINGS' });
  await eventually(() => ephemeralTo(ADMIN, posted.threadTs).some((m) => /^Set `queueMode`/.test(m.text)), 15_000, 'set');
  const written = JSON.parse((await readData(stack, 'settings.json'))!);
  assert.deepEqual(written.channels, { 'slack:C0SETTINGS': { queueMode: 'interrupt' } });
  assert.deepEqual(written.access, { admins: [`slack:${ADMIN}`], channels: [] }, 'the rest of the file kept as it was');
  // A key outside the few, and a value the schema refuses, change nothing.
  await mention('settings set access.admins ["slack:U0NOTADMIN"]', ADMIN, { channel: 'C0SETTINGS', threadTs: posted.threadTs });
  await mention('settings set model.temperature 7', ADMIN, { channel: 'C0SETTINGS', threadTs: posted.threadTs });
  await mention('settings', ADMIN, { channel: 'C0SETTINGS', threadTs: posted.threadTs });
  await eventually(() => ephemeralTo(ADMIN, posted.threadTs).length === 4, 15_000, 'three more answers');
  const [, key, invalid, shown] = ephemeralTo(ADMIN, posted.threadTs).map((m) => m.text);
  assert.match(key!, /I can change only/);
  assert.match(invalid!, /Not changed: settings.json would be invalid \(channels\.slack:C0SETTINGS\.model\.temperature/);
  assert.match(shown!, /"queueMode": "interrupt"/);
  assert.deepEqual(JSON.parse((await readData(stack, 'settings.json'))!).channels, written.channels);
  assert.equal(modelSaw('settings set') + modelSaw('"settings"'), 0, 'settings commands never reach the model');
});
