// Admission's gates, each decision on its own, over plain in-memory fakes of what they use: no
// emulator. (The dispatch handler around them, on DynamoDB Local and fauxqs, is test/unit/dispatch.test.ts;
// whole conversations are the e2e tests'.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { admit, ADMISSION_GATES } from '../../shared/admission/admit.ts';
import { admissionContext, type AdmissionContext, type Outcome } from '../../shared/admission/context.ts';
import { refuseWithoutAccess } from '../../shared/admission/gates/access.ts';
import { settingsProblemsText, tellAdminsOfSettingsProblems } from '../../shared/admission/gates/settings-problems.ts';
import { REFUSAL_TEXTS } from '../../shared/policy/access.ts';
import { renewPeriodicEvents } from '../../shared/admission/gates/periodic-events.ts';
import { answerCommands } from '../../shared/admission/gates/commands.ts';
import { refuseOverBudget } from '../../shared/admission/gates/budget.ts';
import { refuseTooLarge, storeLongText } from '../../shared/admission/gates/prompt-size.ts';
import { queueUnlessMayInterrupt, readThread, reclaimStaleLease, steerInSteerMode } from '../../shared/admission/gates/queue.ts';
import { admitToThread, busyText, fullText, PAUSED_TEXT } from '../../shared/admission/gates/thread.ts';
import { MAX_QUEUED_PROMPT_BYTES } from '../../shared/admission/prompt-body.ts';
import { defineCommand, type Command } from '../../shared/commands/command.ts';
import type { Admission, ActorItem } from '../../shared/run/actor.ts';
import { EVENT_AUTHOR_ID } from '../../shared/policy/access.ts';
import type { AppliedBudget } from '../../shared/policy/budgets.ts';
import { type Prompt } from '../../shared/contracts.ts';
import { settingsSchema, type Settings } from '../../shared/settings/schema.ts';
import { promptFor } from '../support/prompts.ts';
import { fakes, untouched, type Fakes } from '../support/admission-fakes.ts';

const THREAD = 'slack:C1:1.0001';

/** A prompt from `userId` in THREAD (the fixture's author is U1). */
const from = (userId: string, text = 'hello'): Prompt => ({
  ...promptFor(THREAD, `m-${userId}`),
  text,
  author: { userId, userName: userId },
});
const fromEvent = (text = 'heartbeat'): Prompt => ({
  ...from(EVENT_AUTHOR_ID, text),
  author: { userId: EVENT_AUTHOR_ID, userName: 'event heartbeat' },
});
const settingsOf = (json: Record<string, unknown> = {}): Settings => settingsSchema.parse(json);

const contextFor = (prompt: Prompt, f: Fakes, change: Partial<AdmissionContext> = {}) =>
  admissionContext(prompt, f.deps).then((ctx) => ({ ...ctx, ...change }));

const NEXT: Outcome = { next: {} };

test('settings.json problems: an admin is told (only them), once per version of the file; nobody else is, and the prompt goes on', async () => {
  const settings = settingsOf({ access: { admins: ['slack:UADMIN'] } });
  const problems = ['settings.json budgets: expected array, received string'];
  let f = fakes(settings, { settingsProblems: { problems, version: 'v1' } });
  assert.deepEqual(await tellAdminsOfSettingsProblems(await contextFor(from('U1'), f), f.deps), NEXT);
  assert.deepEqual(f.told, [], 'not an admin: not told');
  assert.deepEqual(await tellAdminsOfSettingsProblems(await contextFor(from('UADMIN'), f), f.deps), NEXT);
  assert.deepEqual(await tellAdminsOfSettingsProblems(await contextFor(from('UADMIN', 'again'), f), f.deps), NEXT);
  assert.deepEqual(f.told, [settingsProblemsText(problems)], 'told once, privately');
  assert.deepEqual(f.posted, [], 'never to the thread');
  assert.match(f.told[0]!, /budgets: expected array/);
  // A new version of the (still invalid) file is news again; a valid file is not.
  const state = f.state;
  f = fakes(settings, { settingsProblems: { problems, version: 'v2' } });
  for (const [key, value] of state) f.state.set(key, value);
  await tellAdminsOfSettingsProblems(await contextFor(from('UADMIN'), f), f.deps);
  assert.equal(f.told.length, 1);
  f = fakes(settings, { settingsProblems: { problems: [], version: 'v3' } });
  await tellAdminsOfSettingsProblems(await contextFor(from('UADMIN'), f), f.deps);
  assert.deepEqual(f.told, []);
});

test('settings.json problems: a failed tell is forgotten, so the next message tries again', async () => {
  const settings = settingsOf({ access: { admins: ['slack:UADMIN'] } });
  const f = fakes(settings, { settingsProblems: { problems: ['settings.json x: bad'], version: 'v1' }, failTell: true });
  assert.deepEqual(await tellAdminsOfSettingsProblems(await contextFor(from('UADMIN'), f), f.deps), NEXT);
  assert.equal(f.state.size, 0);
});

test('access: an allowed prompt goes on; a refused person is told once per thread, and the refusal logged', async () => {
  const settings = settingsOf({ access: { users: ['slack:U1'] } });
  const f = fakes(settings);
  assert.deepEqual(await refuseWithoutAccess(await contextFor(from('U1'), f), f.deps), NEXT);
  assert.deepEqual(await refuseWithoutAccess(await contextFor(from('U2'), f), f.deps), { end: 'refused' });
  assert.deepEqual(await refuseWithoutAccess(await contextFor(from('U2', 'again'), f), f.deps), { end: 'refused' });
  assert.deepEqual(f.told, [REFUSAL_TEXTS.user], 'told once');
  assert.deepEqual(
    f.logs.filter((l) => l.message === 'prompt refused: access').map((l) => (l as unknown as { told: boolean }).told),
    [true, false],
  );
  assert.deepEqual(f.unsubscribed, [], 'the bot still follows the thread: the channel is allowed');
});

test("access: in a channel the agent does not work in, the bot stops following the thread; an event's prompt tells nobody", async () => {
  const f = fakes(settingsOf({ access: { channels: ['slack:C9'] } }));
  assert.deepEqual(await refuseWithoutAccess(await contextFor(fromEvent(), f), f.deps), { end: 'refused' });
  assert.deepEqual(f.told, []);
  assert.deepEqual(f.unsubscribed, [THREAD]);
  assert.deepEqual(await refuseWithoutAccess(await contextFor(from('U1'), f), f.deps), { end: 'refused' });
  assert.deepEqual(f.told, [REFUSAL_TEXTS.channel]);
});

test('access: a refusal that could not be told is not marked told, so the redelivery tells it', async () => {
  const f = fakes(settingsOf({ access: { users: ['slack:U1'] } }), { failTell: true });
  await assert.rejects(refuseWithoutAccess(await contextFor(from('U2'), f), f.deps), /the chat is down/);
  assert.equal(f.state.size, 0);
});

test("periodic event files are renewed by a person, not by an event nor by a thread's first message, alongside the later gates", async () => {
  const f = fakes(settingsOf({ agentPeriodicEventDays: 9 }));
  assert.deepEqual(await renewPeriodicEvents(await contextFor(fromEvent(), f), f.deps), NEXT);
  assert.deepEqual(await renewPeriodicEvents(await contextFor({ ...from('U1'), messageId: '1.0001' }, f), f.deps), NEXT);
  assert.deepEqual(f.renewed, []);
  const outcome = await renewPeriodicEvents(await contextFor(from('U1'), f), f.deps);
  assert.ok('next' in outcome && outcome.alongside, 'the renewal goes on alongside the gates after it');
  await outcome.alongside;
  assert.deepEqual(f.renewed, [{ threadId: THREAD, days: 9 }]);
  assert.ok(f.logs.some((l) => l.message === 'periodic event files renewed'));
});

test("a gate's work alongside: the admission ends only once it has, and fails when it fails", async () => {
  const f = fakes(settingsOf());
  let finish!: () => void;
  const work = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const started: Outcome = { next: {}, alongside: work };
  const gates = [async () => started, async () => ({ end: 'answered' as const })];
  let ended = false;
  const admission = admit(from('U1'), f.deps, gates).then((ending) => {
    ended = true;
    return ending;
  });
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(ended, false, 'not ended while the work goes on');
  finish();
  assert.equal(await admission, 'answered');

  const failing = Promise.reject(new Error('the renewal failed'));
  failing.catch(() => undefined);
  await assert.rejects(
    admit(from('U1'), f.deps, [async () => ({ next: {}, alongside: failing }), async () => ({ end: 'answered' as const })]),
    /the renewal failed/,
  );
});

/** A command of each audience, answering with what it was given. */
const echo = (name: string, who: Command['who'], runsAt: Command['runsAt'] = 'dispatch', toThread = false) =>
  defineCommand({
    name,
    parse: (text) => (text.toLowerCase() === name ? { words: text } : undefined),
    runsAt,
    who,
    refused: `only admins may ${name}`,
    async answer({ who: person, channel, prompt }, deps) {
      const { maxQueueDepth } = await deps.settings();
      return { text: `${name} for ${person?.userId} in ${channel} about ${prompt?.messageId} (depth ${maxQueueDepth})`, toThread };
    },
  });

test('commands: a command answered at dispatch ends the admission with its answer; anything else goes on', async () => {
  const commands = [echo('hi', 'anyone'), echo('announce', 'anyone', 'dispatch', true), echo('halt', 'requester', 'webhook')];
  const f = fakes(settingsOf({ maxQueueDepth: 7 }), { commands });
  assert.deepEqual(await answerCommands(await contextFor(from('U1', 'hello'), f), f.deps), NEXT);
  // The webhook answers its own commands: one that reaches dispatch anyway is a prompt.
  assert.deepEqual(await answerCommands(await contextFor(from('U1', 'halt'), f), f.deps), NEXT);
  assert.deepEqual(await answerCommands(await contextFor(from('U1', '<@U0BOT> Hi'), f), f.deps), { end: 'answered' });
  assert.deepEqual(f.told, ['hi for U1 in slack:C1 about m-U1 (depth 7)']);
  assert.deepEqual(await answerCommands(await contextFor(from('U1', 'announce'), f), f.deps), { end: 'answered' });
  assert.deepEqual(f.posted, ['announce for U1 in slack:C1 about m-U1 (depth 7)'], 'said to the whole thread');
  assert.equal(f.settingsReads, 4, "the command used the admission's settings: one read per admission");
});

test("commands: an admins' command is a prompt where no admins are named, refused to others, answered for admins", async () => {
  const commands = [echo('purge', 'admin')];
  const open = fakes(settingsOf(), { commands });
  assert.deepEqual(await answerCommands(await contextFor(from('U1', 'purge'), open), open.deps), NEXT);
  const f = fakes(settingsOf({ access: { admins: ['slack:U9'] } }), { commands });
  assert.deepEqual(await answerCommands(await contextFor(from('U1', 'purge'), f), f.deps), { end: 'answered' });
  assert.deepEqual(await answerCommands(await contextFor(fromEvent('purge'), f), f.deps), { end: 'answered' });
  assert.deepEqual(await answerCommands(await contextFor(from('U9', 'purge'), f), f.deps), { end: 'answered' });
  assert.deepEqual(f.told, ['only admins may purge', 'only admins may purge', 'purge for U9 in slack:C1 about m-U9 (depth 5)']);
  assert.equal(f.logs.filter((l) => l.message === 'purge command refused: not an admin').length, 2);
});

const monthly = (usd: number): AppliedBudget => ({
  budget: { scope: 'channel', period: 'month', usd },
  key: { pk: 'spend#month', sk: 'channel#slack:C1' },
  label: `the monthly budget of $${usd} for each channel (here slack:C1)`,
  resetsAt: new Date(Date.UTC(2031, 0, 1)),
});

test('budget: a spent budget refuses the prompt without a run; a person is told each time, a scheduled thread once', async () => {
  const settings = settingsOf({ budgets: [{ scope: 'channel', period: 'month', usd: 1 }] });
  const unspent = fakes(settings);
  assert.deepEqual(await refuseOverBudget(await contextFor(from('U1'), unspent), unspent.deps), NEXT);
  const f = fakes(settings, { spent: { refused: monthly(1), spentUsd: 1.2 } });
  for (const prompt of [from('U1'), from('U1', 'again'), fromEvent(), fromEvent('later')]) {
    assert.deepEqual(await refuseOverBudget(await contextFor(prompt, f), f.deps), { end: 'refused' });
  }
  assert.equal(f.told.length, 3, 'the person twice, the event once');
  assert.match(f.told[0]!, /the monthly budget of \$1 for each channel/);
  assert.deepEqual(
    f.metrics.map((m) => m.name),
    ['BudgetRefusals', 'BudgetRefusals', 'BudgetRefusals', 'BudgetRefusals'],
  );
});

test('prompt size: a long text is stored and the stored prompt goes on; a prompt too heavy to queue is refused with the limit', async () => {
  const f = fakes(settingsOf());
  const ctx = await contextFor(from('U1'), f);
  assert.deepEqual(await storeLongText(ctx, f.deps), {
    next: { prompt: { ...ctx.prompt, text: 'stored', textKey: `prompts/${ctx.runId}.txt` } },
  });
  assert.deepEqual(await refuseTooLarge(ctx, f.deps), NEXT);
  const heavy = { ...from('U1'), thread: { ...from('U1').thread, padding: 'x'.repeat(MAX_QUEUED_PROMPT_BYTES) } };
  assert.deepEqual(await refuseTooLarge(await contextFor(heavy, f), f.deps), { end: 'refused' });
  assert.match(f.told[0]!, /^That message carries too much to queue \(13 KB of message data, over the 12 KB limit\)/);
  assert.ok(f.logs.some((l) => l.message === 'prompt refused: too large to queue' && l.level === 'ERROR'));
});

const runningFor = (userId: string): ActorItem => ({
  threadId: THREAD,
  status: 'running',
  version: 1,
  current: { runId: 'r1', threadId: THREAD, prompt: from(userId) },
});

test("the thread's actor and the pause flag: read together, once, for the gates after", async () => {
  const f = fakes(settingsOf(), { paused: true, actor: runningFor('U1') });
  assert.deepEqual(await readThread(await contextFor(from('U1'), f), f.deps), { next: { actor: runningFor('U1'), paused: true } });
  const g = fakes(settingsOf());
  assert.deepEqual(await readThread(await contextFor(from('U1'), g), g.deps), { next: { actor: undefined, paused: false } });
  assert.deepEqual([...f.calls, ...g.calls], [`read ${THREAD}`, `read ${THREAD}`]);
});

test('stale lease: checked on the actor as read, with the arriving message; a reclaim has the thread read again', async () => {
  const f = fakes(settingsOf());
  assert.deepEqual(await reclaimStaleLease(await contextFor(from('U1'), f, { actor: runningFor('U7') }), f.deps), NEXT);
  assert.deepEqual(f.calls, ['reclaimStaleLease r1 m-U1'], 'nothing reclaimed: the actor as read goes on');
  // The lease was released: the thread moved on (here to its next prompt, U2's), and the gates after see that.
  const next = { ...runningFor('U2'), current: { ...runningFor('U2').current!, runId: 'r2' } };
  const reclaimed = fakes(settingsOf(), { reclaims: true, actorAfterReclaim: next });
  assert.deepEqual(await reclaimStaleLease(await contextFor(from('U1'), reclaimed, { actor: runningFor('U7') }), reclaimed.deps), {
    next: { actor: next },
  });
  assert.deepEqual(reclaimed.calls, ['reclaimStaleLease r1 m-U1', `actor ${THREAD}`]);
});

test("interrupt mode: kept for whoever may stop the running run, turned to queue for anyone else's prompt", async () => {
  const requesterOnly = settingsOf({ queueMode: 'interrupt', access: { control: 'requester', admins: ['slack:U9'] } });
  const f = fakes(requesterOnly);
  const running = { actor: runningFor('U1') };
  assert.deepEqual(await queueUnlessMayInterrupt(await contextFor(from('U1'), f, running), f.deps), NEXT, 'its requester');
  assert.deepEqual(await queueUnlessMayInterrupt(await contextFor(from('U9'), f, running), f.deps), NEXT, 'an admin');
  assert.deepEqual(await queueUnlessMayInterrupt(await contextFor(from('U2'), f, running), f.deps), { next: { mode: 'queue' } });
  assert.deepEqual(await queueUnlessMayInterrupt(await contextFor(fromEvent(), f, running), f.deps), { next: { mode: 'queue' } });
  assert.deepEqual(f.calls, [], 'the actor as read with the pause flag: not read again');
  // Queue mode, or nobody limited: the actor is not even looked at.
  const unlooked = { actor: untouched<ActorItem>('actor') };
  const queueing = fakes(settingsOf({ access: { control: 'requester' } }));
  assert.deepEqual(await queueUnlessMayInterrupt(await contextFor(from('U2'), queueing, unlooked), queueing.deps), NEXT);
  const open = fakes(settingsOf({ queueMode: 'interrupt' }));
  assert.deepEqual(await queueUnlessMayInterrupt(await contextFor(from('U2'), open, unlooked), open.deps), NEXT);
  // The channel's own mode wins over the deployment's.
  const perChannel = fakes(settingsOf({ channels: { 'slack:C1': { queueMode: 'interrupt' } } }));
  assert.equal((await contextFor(from('U1'), perChannel)).mode, 'interrupt');
});

test('steer mode: a plain message from whoever may steer the running run steers it; anything else waits its turn', async () => {
  const settings = settingsOf({ queueMode: 'steer', access: { control: 'requester' } });
  const running = { actor: runningFor('U1') };
  const runId = running.actor.current!.runId;
  const steered = fakes(settings);
  assert.deepEqual(await steerInSteerMode(await contextFor(from('U1', 'go left'), steered, running), steered.deps), { end: 'steered' });
  assert.deepEqual(steered.calls, [`steer ${runId}: U1: go left`], 'under its author, at the running run');
  const asQueue = { next: { mode: 'queue' } };
  const refused = fakes(settings, { steered: 'full' });
  assert.deepEqual(
    await steerInSteerMode(await contextFor(from('U1'), refused, running), refused.deps),
    asQueue,
    'too many steers waiting',
  );
  const again = fakes(settings, { steered: 'duplicate' });
  assert.deepEqual(await steerInSteerMode(await contextFor(from('U1'), again, running), again.deps), { end: 'duplicate' }, 'redelivered');
  const others = fakes(settings);
  assert.deepEqual(await steerInSteerMode(await contextFor(from('U2'), others, running), others.deps), asQueue, 'may not steer it');
  assert.deepEqual(await steerInSteerMode(await contextFor(fromEvent(), others, running), others.deps), asQueue, "an event's prompt");
  const long = { ...from('U1'), textKey: 'prompts/r.txt' };
  assert.deepEqual(await steerInSteerMode(await contextFor(long, others, running), others.deps), asQueue, 'a long text');
  assert.deepEqual(
    await steerInSteerMode(await contextFor(from('U1'), others, { paused: true, ...running }), others.deps),
    asQueue,
    'paused',
  );
  assert.deepEqual(await steerInSteerMode(await contextFor(from('U1'), others, {}), others.deps), asQueue, 'nothing running: starts a run');
  assert.deepEqual(others.calls, [], 'none of them steered');
  const queueing = fakes(settingsOf({}));
  assert.deepEqual(await steerInSteerMode(await contextFor(from('U1'), queueing, running), queueing.deps), NEXT, 'other modes pass');
});

test("the thread's admission: the options it is given, and what each outcome tells", async () => {
  const settings = settingsOf({ maxQueueDepth: 3, limits: { maxConcurrentRuns: 4, maxConcurrentRunsPerChannel: 2 } });
  const outcome = async (admissions: Admission[], change: Partial<AdmissionContext> = {}, freedSlots = 0) => {
    const f = fakes(settings, { admissions, freedSlots });
    const ended = await admitToThread(await contextFor(from('U1'), f, change), f.deps);
    return { ended, f };
  };
  const started = await outcome(['started']);
  assert.deepEqual(started.ended, { end: 'started' });
  assert.deepEqual(started.f.admitted, [
    { maxQueueDepth: 3, mode: 'queue', control: undefined, hold: false, caps: { perChannel: 2, perDeployment: 4 } },
  ]);
  assert.deepEqual([...started.f.told, ...started.f.posted], []);

  const busy = await outcome(['busy']);
  assert.deepEqual(
    [busy.ended, busy.f.told, busy.f.metrics],
    [{ end: 'busy' }, [busyText(3)], [{ name: 'BusyReplies', dimensions: { adapter: 'slack' } }]],
  );

  // Slots all taken: those whose runs ended are freed, and the prompt tries once more.
  const freed = await outcome(['channel-full', 'started'], {}, 1);
  assert.deepEqual([freed.ended, freed.f.calls], [{ end: 'started' }, ['admit hello', 'reclaimStaleSlots slack:C1', 'admit hello']]);
  const full = await outcome(['deployment-full']);
  assert.deepEqual(
    [full.ended, full.f.calls, full.f.told],
    [{ end: 'deployment-full' }, ['admit hello', 'reclaimStaleSlots deployment'], [fullText('deployment-full', settings.limits)]],
  );
  assert.match(full.f.told[0]!, /^4 runs are already running across this deployment/);

  const paused = await outcome(['queued'], { paused: true });
  assert.deepEqual([paused.f.posted, paused.f.admitted[0]!.hold], [[PAUSED_TEXT], true]);
  const interrupting = await outcome(['queued'], { mode: 'interrupt' });
  assert.deepEqual(interrupting.f.calls, ['admit hello', `stop ${THREAD}: interrupted by a newer message`]);
  const queued = await outcome(['queued']);
  assert.deepEqual(queued.f.calls, ['admit hello', `startWaiting ${THREAD}`]);
  const duplicate = await outcome(['duplicate']);
  assert.deepEqual([duplicate.ended, duplicate.f.calls], [{ end: 'duplicate' }, ['admit hello']]);
});

test("a thread's first message: admitted without reading the thread, which its admission checks; a thread not new after all is read, and the gates after the read run again over the context as it was", async () => {
  const opener = (userId: string, text: string): Prompt => ({ ...from(userId, text), messageId: '1.0001' });
  // The fake stores every text (storeLongText), which steer mode would not take: kept as sent here.
  const gates = ADMISSION_GATES.filter((gate) => gate !== storeLongText);
  const f = fakes(settingsOf());
  assert.equal((await contextFor(opener('U1', 'hi'), f)).opensThread, true, "a Slack thread's id is its first message's");
  assert.equal((await contextFor(from('U1'), f)).opensThread, false);
  assert.equal(await admit(opener('U1', 'hi'), f.deps, gates), 'started');
  assert.deepEqual(f.calls, ['reclaimStaleLease no run 1.0001', 'admit hi'], 'no read of the thread');
  assert.equal(f.admitted[0]!.newThread, true);

  // Steer mode over a thread that has a running run after all (the actor item exists): the first
  // pass took the thread as idle, so steer mode turned to queue; the second pass steers.
  const steering = fakes(settingsOf({ queueMode: 'steer' }), { admissions: ['not-new'], actor: runningFor('U1') });
  assert.equal(await admit(opener('U1', 'go left'), steering.deps, gates), 'steered');
  assert.deepEqual(steering.calls, [
    'reclaimStaleLease no run 1.0001',
    'admit go left',
    `read ${THREAD}`,
    'reclaimStaleLease r1 1.0001',
    'steer r1: U1: go left',
  ]);
  assert.equal(steering.admitted[0]!.mode, 'queue');

  // Paused after all: read, and the prompt is held (no new-thread check the second time).
  const paused = fakes(settingsOf(), { admissions: ['not-new', 'queued'], paused: true });
  assert.equal(await admit(opener('U1', 'later'), paused.deps, gates), 'queued');
  assert.deepEqual(paused.calls, [
    'reclaimStaleLease no run 1.0001',
    'admit later',
    `read ${THREAD}`,
    'reclaimStaleLease no run 1.0001',
    'admit later',
  ]);
  assert.deepEqual(
    paused.admitted.map((o) => [o.newThread, o.hold]),
    [
      [true, false],
      [undefined, true],
    ],
  );
  assert.deepEqual(paused.posted, [PAUSED_TEXT]);
});

test('the gates in order, over one context: a refusal stops the rest; a prompt that passes them all joins its thread as stored', async () => {
  assert.deepEqual(
    ADMISSION_GATES.map((gate) => gate.name),
    [
      'tellAdminsOfSettingsProblems',
      'refuseWithoutAccess',
      'renewPeriodicEvents',
      'answerCommands',
      'refuseOverBudget',
      'storeLongText',
      'refuseTooLarge',
      'readThread',
      'reclaimStaleLease',
      'queueUnlessMayInterrupt',
      'steerInSteerMode',
      'chooseAgent',
      'admitToThread',
    ],
  );
  const refused = fakes(settingsOf({ access: { users: ['slack:U1'] } }));
  assert.equal(await admit(from('U2'), refused.deps), 'refused');
  assert.deepEqual(refused.calls, [], 'nothing reached the thread');

  const f = fakes(settingsOf({ access: { control: 'requester' }, queueMode: 'interrupt' }), {
    admissions: ['queued'],
    actor: runningFor('U7'),
  });
  assert.equal(await admit(from('U1'), f.deps), 'queued');
  assert.deepEqual(
    f.calls,
    [`read ${THREAD}`, 'reclaimStaleLease r1 m-U1', 'admit stored', `startWaiting ${THREAD}`],
    'the thread read once',
  );
  assert.equal(f.admitted[0]!.mode, 'queue', "another person's run is not interrupted");
  assert.equal(f.settingsReads, 1, 'settings.json read once for the whole admission');
});
