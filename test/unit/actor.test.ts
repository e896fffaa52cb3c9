import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  addSteer,
  admitPrompt,
  getActor,
  MAX_COLLECTED_BYTES,
  NOT_NEW,
  MAX_COLLECTED_PROMPTS,
  MAX_PENDING_STEERS,
  releaseLease,
  requestStop,
  takeNext,
  type ActorDeps,
} from '../../shared/run/actor.ts';
import { channelRunsKey, slotsTaken } from '../../shared/run/capacity.ts';
import { deploymentRunsKey, pauseKey } from '../../shared/table.ts';
import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { MAX_STEER_BYTES } from '../../shared/run/control.ts';
import { MAX_QUEUED_PROMPT_BYTES, queuedPromptBytes } from '../../shared/admission/prompt-body.ts';
import { type RunInput } from '../../shared/contracts.ts';
import { settingsSchema } from '../../shared/settings/schema.ts';
import { ACCESS_LIST_LIMITS, accessSchema, controlPolicy } from '../../shared/policy/access.ts';
import { promptFor as prompt } from '../support/prompts.ts';
import { startTestTable, type TestTable } from '../support/dynamo.ts';

let table: TestTable;
before(async () => {
  table = await startTestTable();
});
after(async () => {
  table.raw.destroy();
  await table.emulator.stop();
});

function deps(overrides: Partial<ActorDeps> = {}): ActorDeps & { started: RunInput[] } {
  const started: RunInput[] = [];
  return {
    db: table.db,
    tableName: table.tableName,
    startRun: async (run) => void started.push(run),
    started,
    ...overrides,
  };
}

test('an idle thread starts the prompt; a busy one queues it; release hands over in order, then idles', async () => {
  const d = deps();
  const thread = 'slack:C1:1.0001';
  assert.equal(await admitPrompt(d, prompt(thread, 'm1')), 'started');
  assert.equal(await admitPrompt(d, prompt(thread, 'm2')), 'queued');
  assert.equal(await admitPrompt(d, prompt(thread, 'm3')), 'queued');
  assert.deepEqual(
    d.started.map((r) => r.prompt.messageId),
    ['m1'],
  );

  const first = await releaseLease(d, thread, d.started[0]!.runId);
  assert.equal(first.outcome, 'next');
  const second = await releaseLease(d, thread, d.started[1]!.runId);
  assert.equal(second.outcome, 'next');
  assert.equal((await releaseLease(d, thread, d.started[2]!.runId)).outcome, 'idle');
  assert.deepEqual(
    d.started.map((r) => r.prompt.messageId),
    ['m1', 'm2', 'm3'],
  );
  assert.equal((await getActor(d, thread))?.status, 'idle');
  // A second release of a finished run changes nothing.
  assert.equal((await releaseLease(d, thread, d.started[2]!.runId)).outcome, 'not-holder');
});

test('collect mode: the prompts queued during a run go to the next run together, in order; a queue-mode prompt ends the batch', async () => {
  const d = deps();
  const thread = 'slack:C1:1.0002';
  assert.equal(await admitPrompt(d, prompt(thread, 'c1'), { mode: 'collect' }), 'started');
  for (const id of ['c2', 'c3', 'c4']) assert.equal(await admitPrompt(d, prompt(thread, id), { mode: 'collect' }), 'queued');
  assert.equal(await admitPrompt(d, prompt(thread, 'q5')), 'queued');
  assert.equal(await admitPrompt(d, prompt(thread, 'c6'), { mode: 'collect' }), 'queued');
  const handedTo = async (run: RunInput) => {
    const released = await releaseLease(d, thread, run.runId);
    assert.equal(released.outcome, 'next');
    return (released as { next: RunInput }).next;
  };
  const second = await handedTo(d.started[0]!);
  assert.equal(second.prompt.messageId, 'c2');
  assert.deepEqual(
    second.collected?.map((p) => p.messageId),
    ['c3', 'c4'],
  );
  assert.deepEqual((await getActor(d, thread))?.current?.collected?.length, 2, 'the lease holder carries them');
  const third = await handedTo(second);
  assert.equal(third.prompt.messageId, 'q5');
  assert.equal(third.collected, undefined);
  const fourth = await handedTo(third);
  assert.equal(fourth.prompt.messageId, 'c6');
  assert.equal((await releaseLease(d, thread, fourth.runId)).outcome, 'idle');
  assert.deepEqual(
    d.started.map((r) => r.prompt.messageId),
    ['c1', 'c2', 'q5', 'c6'],
  );
});

test('collect mode: one run takes at most MAX_COLLECTED_PROMPTS prompts and MAX_COLLECTED_BYTES of them; the rest follow', () => {
  const queued = (id: string, text = 'x') => ({
    runId: id,
    threadId: 'slack:C1:1.0003',
    prompt: { ...prompt('slack:C1:1.0003', id), text },
    collect: true as const,
  });
  const many = Array.from({ length: MAX_COLLECTED_PROMPTS + 3 }, (_, i) => queued(`m${i}`));
  const first = takeNext(many);
  assert.equal(first.next?.collected?.length, MAX_COLLECTED_PROMPTS);
  assert.deepEqual(
    first.rest.map((r) => r.runId),
    ['m21', 'm22'],
  );
  const big = Array.from({ length: 6 }, (_, i) => queued(`b${i}`, 'y'.repeat(MAX_COLLECTED_BYTES / 4)));
  const bounded = takeNext(big);
  assert.ok((bounded.next?.collected?.length ?? 0) < 5, `${bounded.next?.collected?.length} collected`);
  assert.ok(Buffer.byteLength(JSON.stringify(bounded.next)) <= MAX_COLLECTED_BYTES + 1024);
  assert.equal(bounded.rest.length, 6 - 1 - (bounded.next?.collected?.length ?? 0));
  assert.deepEqual(takeNext([]), { next: undefined, rest: [] });
});

test('a redelivered prompt is a duplicate and starts nothing new', async () => {
  const d = deps();
  const thread = 'slack:C1:1.0002';
  assert.equal(await admitPrompt(d, prompt(thread, 'm1')), 'started');
  assert.equal(await admitPrompt(d, prompt(thread, 'm1')), 'duplicate');
  assert.equal(await admitPrompt(d, prompt(thread, 'm2')), 'queued');
  assert.equal(await admitPrompt(d, prompt(thread, 'm2')), 'duplicate');
  assert.equal(d.started.length, 1);
  assert.equal((await getActor(d, thread))?.queue?.length, 1);
});

test("a thread's first message takes the lease only where the thread has no actor item and the deployment is not paused; elsewhere it writes nothing", async () => {
  const d = deps();
  const caps = { perChannel: 5, perDeployment: 50 };
  const thread = 'slack:CNEW:2.0001';
  const slots = () => slotsTaken(d, channelRunsKey(thread));
  assert.equal(await admitPrompt(d, prompt(thread, '2.0001'), { newThread: true, caps }), 'started');
  assert.equal(await admitPrompt(d, prompt(thread, '2.0001'), { newThread: true, caps }), 'duplicate', 'its redelivery');
  // The thread has an actor item (running here; idle below): refused, and nothing of the prompt kept.
  assert.equal(await admitPrompt(d, prompt(thread, '2.0002'), { newThread: true, caps }), NOT_NEW);
  assert.equal((await getActor(d, thread))?.queue, undefined);
  assert.equal(await slots(), 1);
  assert.equal(await admitPrompt(d, prompt(thread, '2.0002'), { caps }), 'queued', 'admitted as usual once read: no marker left behind');
  await releaseLease(d, thread, d.started[0]!.runId);
  await releaseLease(d, thread, d.started[1]!.runId);
  assert.equal((await getActor(d, thread))?.status, 'idle');
  assert.equal(await admitPrompt(d, prompt(thread, '2.0003'), { newThread: true, caps }), NOT_NEW, 'an idle thread is not new either');

  await d.db.send(new PutCommand({ TableName: d.tableName, Item: { ...pauseKey, by: 'test', at: 1 } }));
  try {
    const other = 'slack:CNEW:2.0004';
    assert.equal(await admitPrompt(d, prompt(other, '2.0004'), { newThread: true, caps }), NOT_NEW, 'paused');
    assert.equal(await getActor(d, other), undefined);
    assert.equal(await admitPrompt(d, prompt(other, '2.0004'), { newThread: true }), NOT_NEW, 'paused, without run slots too');
  } finally {
    await d.db.send(new DeleteCommand({ TableName: d.tableName, Key: pauseKey }));
  }
  assert.equal(await slots(), 0);
  assert.deepEqual(
    d.started.map((r) => r.prompt.messageId),
    ['2.0001', '2.0002'],
  );
});

test('a dispatch crash between taking the lease and starting the run is healed by the redelivery', async () => {
  const thread = 'slack:C1:1.0003';
  let calls = 0;
  const d = deps({
    startRun: async () => {
      calls++;
      if (calls === 1) throw new Error('crash before StartExecution');
    },
  });
  await assert.rejects(admitPrompt(d, prompt(thread, 'm1')), /crash/);
  assert.equal((await getActor(d, thread))?.started, false);
  assert.equal(await admitPrompt(d, prompt(thread, 'm1')), 'duplicate');
  assert.equal(calls, 2);
  assert.equal((await getActor(d, thread))?.started, true);
});

test('a finish that crashed during the hand-over completes it when retried', async () => {
  const thread = 'slack:C1:1.0004';
  const d = deps();
  await admitPrompt(d, prompt(thread, 'm1'));
  await admitPrompt(d, prompt(thread, 'm2'));
  const firstRun = d.started[0]!.runId;
  const failing = deps({ startRun: async () => Promise.reject(new Error('crash starting next')) });
  await assert.rejects(releaseLease(failing, thread, firstRun), /crash starting next/);
  const retried = await releaseLease(d, thread, firstRun);
  assert.equal(retried.outcome, 'next');
  assert.deepEqual(
    d.started.map((r) => r.prompt.messageId),
    ['m1', 'm2'],
  );
  assert.equal((await getActor(d, thread))?.started, true);
});

test('concurrent prompts on one thread: exactly one runs, the rest queue, every prompt runs once', async () => {
  const thread = 'slack:C1:1.0005';
  const d = deps();
  const ids = Array.from({ length: 20 }, (_, i) => `m${i}`);
  const admissions = await Promise.all(ids.map((id) => admitPrompt(d, prompt(thread, id), { maxQueueDepth: 100 })));
  assert.equal(admissions.filter((a) => a === 'started').length, 1);
  assert.equal(admissions.filter((a) => a === 'queued').length, 19);
  for (let i = 0; i < 20; i++) {
    const current = (await getActor(d, thread))?.current;
    assert.ok(current, `a run holds the lease at step ${i}`);
    await releaseLease(d, thread, current.runId);
  }
  assert.deepEqual(new Set(d.started.map((r) => r.prompt.messageId)), new Set(ids));
  assert.equal(d.started.length, 20);
  assert.equal((await getActor(d, thread))?.status, 'idle');
});

test('prompts racing with the release are never lost', async () => {
  const thread = 'slack:C1:1.0006';
  const d = deps();
  await admitPrompt(d, prompt(thread, 'first'));
  const late = Array.from({ length: 10 }, (_, i) => `late${i}`);
  await Promise.all([
    releaseLease(d, thread, d.started[0]!.runId),
    ...late.map((id) => admitPrompt(d, prompt(thread, id), { maxQueueDepth: 100 })),
  ]);
  for (;;) {
    const actor = await getActor(d, thread);
    if (actor?.status !== 'running' || !actor.current) break;
    await releaseLease(d, thread, actor.current.runId);
  }
  assert.deepEqual(new Set(d.started.map((r) => r.prompt.messageId)), new Set(['first', ...late]));
  assert.equal(d.started.length, 11);
});

test('past the queue depth a prompt is refused as busy, and nothing else changes', async () => {
  const thread = 'slack:C1:1.0007';
  const d = deps();
  assert.equal(await admitPrompt(d, prompt(thread, 'm0'), { maxQueueDepth: 2 }), 'started');
  assert.equal(await admitPrompt(d, prompt(thread, 'm1'), { maxQueueDepth: 2 }), 'queued');
  assert.equal(await admitPrompt(d, prompt(thread, 'm2'), { maxQueueDepth: 2 }), 'queued');
  assert.equal(await admitPrompt(d, prompt(thread, 'm3'), { maxQueueDepth: 2 }), 'busy');
  assert.deepEqual(
    (await getActor(d, thread))?.queue?.map((r) => r.prompt.messageId),
    ['m1', 'm2'],
  );
});

test('interrupt mode puts the new prompt first and flags the running run to stop', async () => {
  const thread = 'slack:C1:1.0008';
  const d = deps();
  await admitPrompt(d, prompt(thread, 'm0'));
  await admitPrompt(d, prompt(thread, 'm1'));
  assert.equal(await admitPrompt(d, prompt(thread, 'm2'), { mode: 'interrupt' }), 'queued');
  const actor = await getActor(d, thread);
  assert.deepEqual(
    actor?.queue?.map((r) => r.prompt.messageId),
    ['m2', 'm1'],
  );
  assert.equal(actor?.abortRunId, d.started[0]!.runId);
  // The release clears the flag for the next run.
  await releaseLease(d, thread, d.started[0]!.runId);
  const next = await getActor(d, thread);
  assert.equal(next?.current?.prompt.messageId, 'm2');
  assert.equal(next?.abortRunId, undefined);
});

test('a full queue of the largest prompts that may wait, plus every pending steer and the largest access policy, fits DynamoDB Local’s 400 KB item', async () => {
  const d = deps();
  const thread = 'slack:C1:9.0001';
  // A prompt grown to the queued-prompt limit (the webhook and dispatch keep every prompt under it).
  const heavy = (messageId: string) => {
    const base = prompt(thread, messageId);
    const text = '語'.repeat(Math.floor((MAX_QUEUED_PROMPT_BYTES - queuedPromptBytes(base)) / 3));
    const grown = { ...base, text };
    assert.ok(queuedPromptBytes(grown) <= MAX_QUEUED_PROMPT_BYTES && queuedPromptBytes(grown) > MAX_QUEUED_PROMPT_BYTES - 64);
    return grown;
  };
  const maxQueueDepth = settingsSchema.shape.maxQueueDepth.unwrap().maxValue!;
  // The largest record of who may stop or steer: every list of settings.json `access` full of the longest ids.
  const longest = (list: 'users' | 'admins' | 'workspaces') =>
    Array.from({ length: ACCESS_LIST_LIMITS[list] }, (_, i) => `slack:${String(i).padStart(94, 'X')}`);
  const control = controlPolicy(
    accessSchema.parse({ users: longest('users'), admins: longest('admins'), workspaces: longest('workspaces') }),
  );
  assert.equal(await admitPrompt(d, heavy('m0'), { maxQueueDepth, control }), 'started');
  for (let i = 1; i <= maxQueueDepth; i++) assert.equal(await admitPrompt(d, heavy(`m${i}`), { maxQueueDepth, control }), 'queued');
  for (let i = 0; i < MAX_PENDING_STEERS; i++) assert.equal(await addSteer(d, thread, 's'.repeat(MAX_STEER_BYTES)), 'queued');
  assert.equal(await addSteer(d, thread, 'one more'), 'full', 'the steer list is bounded');
  assert.equal(await admitPrompt(d, heavy('over'), { maxQueueDepth }), 'busy');
  assert.equal((await getActor(d, thread))?.queue?.length, maxQueueDepth);
});

test('steering a thread with nothing running says so', async () => {
  assert.equal(await addSteer(deps(), 'slack:C1:9.0002', 'anything'), 'idle');
});

test('run slots: a new thread past the channel or deployment cap is refused; queued prompts keep their thread’s slot; going idle gives it back once', async () => {
  const d = deps();
  const caps = { perChannel: 2, perDeployment: 3 };
  const slotsIn = (key: Parameters<typeof slotsTaken>[1]) => slotsTaken(d, key);
  const channelOf = (c: string) => channelRunsKey(`slack:${c}:1`);
  assert.equal(await admitPrompt(d, prompt('slack:CCAP1:1.1', 'a1'), { caps }), 'started');
  assert.equal(await admitPrompt(d, prompt('slack:CCAP1:1.2', 'b1'), { caps }), 'started');
  // The channel is full: a third thread there is refused, and nothing of it is kept (a redelivery may try again).
  assert.equal(await admitPrompt(d, prompt('slack:CCAP1:1.3', 'c1'), { caps }), 'channel-full');
  assert.equal(await getActor(d, 'slack:CCAP1:1.3'), undefined);
  // A prompt behind a running run of the full channel still queues, and runs on the same slot.
  assert.equal(await admitPrompt(d, prompt('slack:CCAP1:1.1', 'a2'), { caps }), 'queued');
  assert.equal(await admitPrompt(d, prompt('slack:CCAP2:1.1', 'd1'), { caps }), 'started');
  // The deployment is full (3): another channel is refused too.
  assert.equal(await admitPrompt(d, prompt('slack:CCAP3:1.1', 'e1'), { caps }), 'deployment-full');
  assert.equal(await slotsIn(channelOf('CCAP1')), 2);
  assert.equal(await slotsIn(deploymentRunsKey), 3);

  const run = (messageId: string) => d.started.find((r) => r.prompt.messageId === messageId)!.runId;
  assert.equal((await releaseLease(d, 'slack:CCAP1:1.1', run('a1'))).outcome, 'next');
  assert.equal(await slotsIn(deploymentRunsKey), 3, 'a hand-over keeps the slot');
  assert.equal((await releaseLease(d, 'slack:CCAP1:1.1', run('a2'))).outcome, 'idle');
  // Every path that releases may come again (finish, then the run-ended rule): the slot goes back once.
  assert.equal((await releaseLease(d, 'slack:CCAP1:1.1', run('a2'))).outcome, 'not-holder');
  assert.equal(await slotsIn(channelOf('CCAP1')), 1);
  assert.equal(await slotsIn(deploymentRunsKey), 2);
  assert.equal(await admitPrompt(d, prompt('slack:CCAP1:1.3', 'c1'), { caps }), 'started');
  await Promise.all(
    [
      ['slack:CCAP1:1.2', 'b1'],
      ['slack:CCAP1:1.3', 'c1'],
      ['slack:CCAP2:1.1', 'd1'],
    ].map(([thread, id]) => releaseLease(d, thread!, run(id!))),
  );
  for (const key of [channelOf('CCAP1'), channelOf('CCAP2'), deploymentRunsKey]) assert.equal(await slotsIn(key), 0);
});

test('racing prompts of many threads never take more run slots than the cap', async () => {
  const d = deps();
  const caps = { perChannel: 3, perDeployment: 100 };
  const outcomes = await Promise.all(Array.from({ length: 12 }, (_, i) => admitPrompt(d, prompt(`slack:CRACE:2.${i}`, `r${i}`), { caps })));
  assert.equal(outcomes.filter((o) => o === 'started').length, 3);
  assert.equal(outcomes.filter((o) => o === 'channel-full').length, 9);
  assert.equal(await slotsTaken(d, channelRunsKey('slack:CRACE:2.0')), 3);
  await Promise.all(d.started.map((r) => releaseLease(d, r.threadId, r.runId)));
  assert.equal(await slotsTaken(d, channelRunsKey('slack:CRACE:2.0')), 0);
});

test('each admission records who may stop or steer the thread (or clears it); a control checked against one run never reaches the next', async () => {
  const d = deps();
  const thread = 'slack:C1:9.0003';
  const control = controlPolicy(accessSchema.parse({ control: 'requester', admins: ['slack:U9'] }));
  assert.equal(await admitPrompt(d, prompt(thread, 'm1'), { control }), 'started');
  assert.deepEqual((await getActor(d, thread))?.control, control);
  assert.equal(await admitPrompt(d, prompt(thread, 'm2')), 'queued');
  assert.equal((await getActor(d, thread))?.control, undefined, 'settings.json no longer restricts control');
  const first = d.started[0]!.runId;
  await releaseLease(d, thread, first);
  // A stop or steer meant for the first run, arriving after the hand-over, leaves the second alone.
  assert.equal(await requestStop(d, thread, first), undefined);
  assert.equal(await addSteer(d, thread, 'late', first), 'idle');
  const actor = await getActor(d, thread);
  assert.equal(actor?.abortRunId, undefined);
  assert.equal(actor?.steer, undefined);
  const second = actor!.current!.runId;
  assert.equal((await requestStop(d, thread, second))?.runId, second);
  assert.equal(await addSteer(d, thread, 'now', second), 'queued');
});
