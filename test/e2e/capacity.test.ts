// Bounds on work across threads, through the whole local cloud: concurrent runs per channel and per
// deployment, and sandbox tasks. Every path a run ends by (finish, failure, stop) and the idle reaper
// give their slots back, so the counters are at zero when nothing runs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { gate } from '../../packages/local-cloud/src/bedrock.ts';
import { documentClient } from '../../shared/aws/dynamodb.ts';
import { channelRunsKey, slotsTaken } from '../../shared/run/capacity.ts';
import { deploymentRunsKey, sandboxesKey } from '../../shared/table.ts';
import { putData } from '../support/data-bucket.ts';
import { eventually } from '../support/eventually.ts';
import { startTestStack, type TestStack } from '../support/local-stack.ts';
import { runScripted, toolTurn, toolUseIdOf } from '../support/scripted-run.ts';

let stack: TestStack;
before(async () => {
  stack = await startTestStack();
  stack.bedrock.setDefault(() => ({ text: 'ok' }));
  await putData(stack, 'settings.json', {
    limits: { maxConcurrentRunsPerChannel: 1, maxConcurrentRuns: 2, maxRunningSandboxes: 1 },
    sandbox: { startEarly: false },
  });
});
after(async () => {
  await stack?.stop();
});

const db = () => ({ db: documentClient(stack.cloud.clients.dynamodb), tableName: stack.cloud.names.table });
const slots = async () => ({
  channelA: await slotsTaken(db(), channelRunsKey('slack:C0CAPA:1')),
  channelB: await slotsTaken(db(), channelRunsKey('slack:C0CAPB:1')),
  deployment: await slotsTaken(db(), deploymentRunsKey),
  sandboxes: await slotsTaken(db(), sandboxesKey),
});
const executionOf = (threadId: string) =>
  [...stack.cloud.stepFunctions.executions.values()].find((e) => (e.input as { threadId: string }).threadId === threadId);
const requestsIn = (channel: string) =>
  stack.bedrock.requests.filter((r) => JSON.stringify(r.body.system ?? '').includes(`slack:${channel}:`));
const inChannel = (channel: string) => (r: { body: { system?: unknown } }) =>
  JSON.stringify(r.body.system ?? '').includes(`slack:${channel}:`);

/** A run whose model call waits until `release`. */
async function heldRun(channel: string) {
  const hold = gate();
  const before = requestsIn(channel).length;
  stack.bedrock.script({ text: 'held answer', hold: hold.promise, takenBy: inChannel(channel) });
  const posted = await stack.slack.postUserMessage({ channel, text: '<@U0LOCALBOT> hold on' });
  await eventually(() => requestsIn(channel).length > before, 30_000, `${channel} at the model`);
  return { posted, threadId: `slack:${channel}:${posted.threadTs}`, release: hold.release };
}

async function refusal(channel: string, pattern: RegExp) {
  const posted = await stack.slack.postUserMessage({ channel, text: '<@U0LOCALBOT> one more please' });
  await eventually(
    () => stack.slack.ephemeral.some((m) => m.thread_ts === posted.threadTs && pattern.test(m.text)),
    15_000,
    'refusal reply',
  );
  assert.equal(executionOf(`slack:${channel}:${posted.threadTs}`), undefined, 'no run started');
}

test('a new thread past the channel or deployment run limit is refused with a reply; finished, failed and stopped runs give their slots back', async () => {
  // Finish: a held run fills its channel; another thread there is refused.
  const first = await heldRun('C0CAPA');
  assert.deepEqual(await slots(), { channelA: 1, channelB: 0, deployment: 1, sandboxes: 0 });
  await refusal('C0CAPA', /^1 run is already running in this channel \(the limit, maxConcurrentRunsPerChannel\)/);
  // The deployment allows 2: a second channel runs, a third is refused.
  const second = await heldRun('C0CAPB');
  await refusal('C0CAPC', /^2 runs are already running across this deployment \(the limit, maxConcurrentRuns\)/);
  first.release();
  second.release();
  await eventually(() => executionOf(first.threadId)?.status === 'SUCCEEDED', 30_000, 'first finished');
  await eventually(() => executionOf(second.threadId)?.status === 'SUCCEEDED', 30_000, 'second finished');
  await eventually(async () => (await slots()).deployment === 0, 15_000, 'slots given back after finishing');

  // Failure: a model error ends the run through HandleFailure.
  stack.bedrock.script({ error: { type: 'ValidationException', message: 'bad request' }, takenBy: inChannel('C0CAPA') });
  const failed = await stack.slack.postUserMessage({ channel: 'C0CAPA', text: '<@U0LOCALBOT> fail please' });
  await eventually(() => executionOf(`slack:C0CAPA:${failed.threadTs}`)?.status === 'FAILED', 30_000, 'failed run ended');
  await eventually(async () => (await slots()).deployment === 0, 15_000, 'slots given back after a failure');

  // Stop: the execution is aborted; the run-ended rule releases.
  const stopped = await heldRun('C0CAPA');
  await stack.slack.postUserMessage({ channel: 'C0CAPA', threadTs: stopped.posted.threadTs, text: 'stop' });
  await eventually(() => executionOf(stopped.threadId)?.status === 'ABORTED', 15_000, 'stopped');
  stopped.release();
  await eventually(async () => (await slots()).deployment === 0, 15_000, 'slots given back after a stop');
  assert.deepEqual(await slots(), { channelA: 0, channelB: 0, deployment: 0, sandboxes: 0 });
});

test('past the sandbox limit a tool call gets a clear error and the run goes on; the reaper gives the slot back', async () => {
  const first = await runScripted(stack, {
    channel: 'C0CAPA',
    text: 'run a command',
    turns: [toolTurn('bash', { command: 'echo one' }), { text: 'done' }],
  });
  assert.equal(first.ended.status, 'SUCCEEDED');
  assert.equal((await slots()).sandboxes, 1, 'the sandbox stays up, idle');
  const refused = toolTurn('bash', { command: 'echo two' });
  const second = await runScripted(stack, { channel: 'C0CAPB', text: 'run another', turns: [refused, { text: 'could not run it' }] });
  assert.equal(second.ended.status, 'SUCCEEDED');
  const result = second.results.get(toolUseIdOf(refused))!;
  assert.equal(result.status, 'error');
  assert.equal(
    result.text,
    'The sandbox could not be started: sandbox limit reached (1 running, limits.maxRunningSandboxes); try again later.',
  );
  assert.equal((await slots()).sandboxes, 1);
  // Idle past the timeout: the reaper stops it and gives its slot back.
  await db().db.send(
    new UpdateCommand({
      TableName: stack.cloud.names.table,
      Key: { pk: 'sandboxes', sk: first.threadId },
      UpdateExpression: 'SET lastUsedAt = :old',
      ExpressionAttributeValues: { ':old': Date.now() - 60 * 60_000 },
    }),
  );
  await stack.cloud.handlers.sandboxReaper({});
  assert.deepEqual(await slots(), { channelA: 0, channelB: 0, deployment: 0, sandboxes: 0 });
});
