// The pause on the actor, against DynamoDB Local: held prompts wait in their thread's queue (once,
// in order, bounded), a run that ends while paused hands over to nothing, and resume starts each
// waiting thread's first prompt, the rest after it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { admitPrompt, getActor, releaseLease, waitingThreads, type ActorDeps } from '../../shared/run/actor.ts';
import { slotHolders, slotsTaken } from '../../shared/run/capacity.ts';
import { actorKey, deploymentRunsKey } from '../../shared/table.ts';
import { operatorStopCause, operatorStopNotice, resume } from '../../shared/policy/kill-switch.ts';
import { isPaused, pause, pauseState, withPauseFlag } from '../../shared/policy/pause.ts';
import { commandIn, COMMANDS } from '../../shared/commands/answer.ts';
import { opsCommand } from '../../shared/commands/ops.ts';
import type { RunInput } from '../../shared/contracts.ts';
import { promptFor as prompt } from '../support/prompts.ts';
import { tableForFile } from '../support/dynamo.ts';

const table = tableForFile();

function deps(): ActorDeps & { started: RunInput[] } {
  const started: RunInput[] = [];
  const base = { db: table().db, tableName: table().tableName };
  return { ...base, startRun: async (run) => void started.push(run), started, paused: () => isPaused(base) };
}
const caps = { perChannel: 1, perDeployment: 1 };

test('paused: prompts wait in order (a redelivery once), start nothing, past the queue depth are busy; resume starts them in order', async () => {
  const d = deps();
  const thread = 'slack:C1:2.0001';
  await pause(d, 'an operator');
  assert.deepEqual({ ...(await pauseState(d)), at: undefined }, { paused: true, by: 'an operator', at: undefined });
  const held = { hold: true, maxQueueDepth: 3, caps };
  assert.equal(await admitPrompt(d, prompt(thread, 'm1'), held), 'queued');
  assert.equal(await admitPrompt(d, prompt(thread, 'm1'), held), 'duplicate');
  assert.equal(await admitPrompt(d, prompt(thread, 'm2'), held), 'queued');
  assert.equal(await admitPrompt(d, prompt(thread, 'm3'), held), 'queued');
  assert.equal(await admitPrompt(d, prompt(thread, 'm4'), held), 'busy');
  assert.equal(d.started.length, 0);
  assert.deepEqual(await waitingThreads(d), [thread]);
  assert.equal(await slotsTaken(d, deploymentRunsKey), 0, 'held prompts take no run slot');

  assert.deepEqual(await resume(d), [thread]);
  assert.equal(await isPaused(d), false);
  assert.deepEqual(
    d.started.map((r) => r.prompt.messageId),
    ['m1'],
  );
  assert.deepEqual(await waitingThreads(d), []);
  assert.deepEqual(
    (await slotHolders(d)).map((h) => h.threadId),
    [thread],
  );
  // A prompt after resume waits behind the resumed ones.
  assert.equal(await admitPrompt(d, prompt(thread, 'm5'), { caps, maxQueueDepth: 5 }), 'queued');
  for (const run of [...d.started]) await releaseLease(d, thread, run.runId);
  while ((await getActor(d, thread))?.status === 'running') await releaseLease(d, thread, d.started.at(-1)!.runId);
  assert.deepEqual(
    d.started.map((r) => r.prompt.messageId),
    ['m1', 'm2', 'm3', 'm5'],
  );
  assert.equal(await slotsTaken(d, deploymentRunsKey), 0, 'every slot given back');
});

test("dispatch's one read: a thread's actor item and the pause flag together, each as it is now", async () => {
  const d = deps();
  const thread = 'slack:C1:6.0001';
  assert.deepEqual(await withPauseFlag(d, actorKey(thread)), { item: undefined, paused: false }, 'a new thread, not paused');
  assert.equal(await admitPrompt(d, prompt(thread, 'm1'), { caps }), 'started');
  await pause(d, 'an operator');
  const read = await withPauseFlag(d, actorKey(thread));
  assert.deepEqual(
    [read.paused, read.item?.status, (read.item?.current as RunInput | undefined)?.prompt.messageId],
    [true, 'running', 'm1'],
  );
  await resume(d);
  assert.equal((await withPauseFlag(d, actorKey(thread))).paused, false);
  await releaseLease(d, thread, d.started[0]!.runId);
  assert.equal((await withPauseFlag(d, actorKey(thread))).item?.status, 'idle');
});

test('an idle thread with prompts waiting (a resume that did not reach it) queues a new prompt behind them, never ahead', async () => {
  const d = deps();
  const thread = 'slack:C1:2.0002';
  await pause(d, 'an operator');
  assert.equal(await admitPrompt(d, prompt(thread, 'w1'), { hold: true }), 'queued');
  await d.db.send(new (await import('@aws-sdk/lib-dynamodb')).DeleteCommand({ TableName: d.tableName, Key: { pk: 'ops', sk: 'pause' } }));
  assert.equal(await admitPrompt(d, prompt(thread, 'w2'), { caps }), 'queued');
  assert.equal(d.started.length, 0);
  assert.deepEqual(
    (await getActor(d, thread))?.queue?.map((r) => r.prompt.messageId),
    ['w1', 'w2'],
  );
  await resume(d);
  while ((await getActor(d, thread))?.status === 'running') await releaseLease(d, thread, d.started.at(-1)!.runId);
  assert.deepEqual(
    d.started.map((r) => r.prompt.messageId),
    ['w1', 'w2'],
  );
});

test('interrupt mode at an idle thread with prompts waiting: they start first, then the new prompt interrupts as usual', async () => {
  const d = deps();
  const thread = 'slack:C2:2.0004';
  await pause(d, 'an operator');
  assert.equal(await admitPrompt(d, prompt(thread, 'i1'), { hold: true }), 'queued');
  assert.equal(await admitPrompt(d, prompt(thread, 'i2'), { hold: true }), 'queued');
  await d.db.send(new DeleteCommand({ TableName: d.tableName, Key: { pk: 'ops', sk: 'pause' } }));
  assert.equal(await admitPrompt(d, prompt(thread, 'i3'), { mode: 'interrupt', caps }), 'queued');
  const after = await getActor(d, thread);
  assert.deepEqual(
    d.started.map((r) => r.prompt.messageId),
    ['i1'],
  );
  assert.deepEqual(
    after?.queue?.map((r) => r.prompt.messageId),
    ['i3', 'i2'],
  );
  assert.equal(after?.abortRunId, d.started[0]!.runId, 'the running run is told to stop');
  while ((await getActor(d, thread))?.status === 'running') await releaseLease(d, thread, d.started.at(-1)!.runId);
});

test('a run that ends while paused hands its thread to nothing: its queue waits for resume', async () => {
  const d = deps();
  const thread = 'slack:C1:2.0003';
  assert.equal(await admitPrompt(d, prompt(thread, 'r1'), { caps }), 'started');
  await pause(d, 'an operator');
  assert.equal(await admitPrompt(d, prompt(thread, 'r2'), { hold: true, caps }), 'queued');
  assert.equal((await releaseLease(d, thread, d.started[0]!.runId)).outcome, 'idle');
  assert.equal(d.started.length, 1);
  assert.equal(await slotsTaken(d, deploymentRunsKey), 0, 'the ended run gave its slot back');
  assert.deepEqual(await resume(d), [thread]);
  assert.deepEqual(
    d.started.map((r) => r.prompt.messageId),
    ['r1', 'r2'],
  );
  assert.equal((await releaseLease(d, thread, d.started[1]!.runId)).outcome, 'idle');
});

test('chat commands: runs, stop all, pause, resume after a mention; anything else is a prompt', () => {
  // What the registry finds for a message, when it is the ops command.
  const parseOpsCommand = (text: string) => {
    const found = commandIn(COMMANDS, text);
    return found?.command === opsCommand ? found.args : undefined;
  };
  assert.equal(parseOpsCommand('<@U0BOT> runs'), 'runs');
  assert.equal(parseOpsCommand('@bot Stop   all'), 'stop-all');
  assert.equal(parseOpsCommand('pause.'), 'pause');
  assert.equal(parseOpsCommand('RESUME'), 'resume');
  for (const text of ['stop', 'pause the build', 'runs of tests', 'resume writing']) assert.equal(parseOpsCommand(text), undefined, text);
});

test('who stopped a run: an operator or an admin is told in the thread; any other cause is not', () => {
  assert.equal(operatorStopNotice(operatorStopCause('an operator')), 'Stopped by an operator.');
  assert.equal(operatorStopNotice(operatorStopCause('an admin, slack:U0A')), 'Stopped by an admin, slack:U0A.');
  for (const cause of ['Stopped from the thread', 'interrupted by a newer message', null, undefined])
    assert.equal(operatorStopNotice(cause), undefined);
});
