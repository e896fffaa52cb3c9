// Each agent step through its dependency seams (test/support/agent-harness.ts: DynamoDB Local, an
// S3 with conditional writes, the Bedrock fake, the Slack stand-in behind the Chat SDK adapter),
// with the clock in the test's hands.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as z from 'zod';
import { MODEL_STEP_LOG_MESSAGE } from '../../infra/constructs/dashboard.ts';
import { addSteer, getActor, requestStop } from '../../shared/run/actor.ts';
import { dataKeys } from '../../shared/ids.ts';
import type { LoopState, RunInput } from '../../shared/contracts.ts';
import { STEER_SKIPPED } from '../../shared/run/steer.ts';
import { fail, finish } from '../../shared/run/steps/finish.ts';
import { handoff } from '../../shared/run/steps/handoff.ts';
import { progressStep } from '../../shared/run/steps/progress.ts';
import { childRunInput } from '../../shared/run/subagents/child-run.ts';
import { createBatch } from '../../shared/run/subagents/batch.ts';
import { modelStep as modelStepAt } from '../../shared/run/steps/model.ts';
import { prepare as prepareAt } from '../../shared/run/steps/prepare.ts';
import { HEARTBEAT_OK } from '../../shared/run/steps/reply.ts';
import { countStep, routeAfterTool } from '../../shared/run/steps/run-control.ts';
import { BUILTIN_TOOLS } from '../../shared/tools/builtin/index.ts';
import { defineTool } from '../../shared/tools/tool.ts';
import { loadSnapshot, recentSnapshots } from '../../shared/run/steps/snapshot.ts';
import { toolStep as toolStepAt } from '../../shared/run/steps/tool.ts';
import { appendLog, loadContext, loadLog, saveContext, type LogVersion } from '../../shared/context/store.ts';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { BatchGetCommand, GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { readRecord } from '../../shared/run/ledger.ts';
import { readSpend } from '../../shared/policy/budgets.ts';
import { threadSpendKey } from '../../shared/table.ts';
import type { AgentDeps } from '../../shared/run/steps/deps.ts';
import { recentContexts } from '../../shared/run/steps/run-context.ts';
import { startStepHarness, type StepHarness } from '../support/agent-harness.ts';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ECSClient } from '@aws-sdk/client-ecs';
import { gate } from '../../packages/local-cloud/src/bedrock.ts';
import { getSandbox, type LifecycleDeps } from '../../shared/sandbox/lifecycle.ts';
import { runStep } from '../../shared/run/steps/index.ts';
import { recentlyUsed } from '../../shared/support/recent.ts';
import { eventually } from '../support/eventually.ts';

// Where each step sends the loop; the context version it also returns is pinned in its own test.
const routeOf = ({ contextVersion: _version, ...route }: LoopState): LoopState => route;
const prepare = async (...args: Parameters<typeof prepareAt>) => routeOf(await prepareAt(...args));
const modelStep = async (...args: Parameters<typeof modelStepAt>) => routeOf(await modelStepAt(...args));
const toolStep = async (...args: Parameters<typeof toolStepAt>) => routeOf(await toolStepAt(...args));

let h: StepHarness;
before(async () => {
  h = await startStepHarness();
});
after(async () => {
  await h?.close();
});

const entries = async (run: RunInput) => (await loadContext(h.deps.store, run.threadId)).entries;
const toolUse = (name: string, input: Record<string, unknown>, id = `tu-${name}-${Math.random().toString(36).slice(2, 8)}`) => ({
  name,
  input,
  toolUseId: id,
});

/** A prepared run: settings written first (if any), then prepare. */
async function preparedRun(text: string, settings?: object): Promise<RunInput> {
  await h.writeObject('settings.json', JSON.stringify(settings ?? {}));
  const run = await h.newRun(text);
  assert.deepEqual(await prepare(h.deps, run), { step: 0, next: 'model' });
  return run;
}

// ---------------------------------------------------------------------------------------------
// prepare

test('prepare fixes the run snapshot (channel model over deployment model) and adds the prompt once', async () => {
  const run = await h.newRun('hello there');
  const channel = run.threadId.split(':')[1];
  await h.writeObject(
    'settings.json',
    JSON.stringify({
      model: { id: 'deployment-model' },
      channels: { [`slack:${channel}`]: { model: { id: 'channel-model', maxOutputTokens: 99 } } },
    }),
  );
  await h.writeObject('MEMORY.md', 'the deploy freeze starts on Friday');
  assert.deepEqual(await prepare(h.deps, run), { step: 0, next: 'model' });
  const snapshot = await loadSnapshot(h.deps, run);
  assert.equal(snapshot.modelId, 'channel-model');
  assert.equal(snapshot.maxOutputTokens, 99);
  assert.equal(snapshot.startedAt, h.clock.ms, 'the run limit counts from the injected clock');
  assert.match(JSON.stringify(snapshot.system), /deploy freeze starts on Friday/);
  // A retried prepare (Lambda redelivery) does not add the prompt twice.
  await prepare(h.deps, run);
  const context = await entries(run);
  assert.equal(context.filter((e) => e.meta.messageId === run.prompt.messageId).length, 1);
  assert.equal(context.at(-1)?.content[0]?.text, 'dana: hello there');
  await h.writeObject('settings.json', '{}');
});

test("a retried prepare keeps the run's first snapshot (its model, its start time), and its model step uses it, whatever settings say by then", async () => {
  const run = await h.newRun('decide once');
  await h.writeObject('settings.json', JSON.stringify({ model: { id: 'first-model' } }));
  await prepare(h.deps, run);
  const first = await loadSnapshot(h.deps, run);
  // The invocation is retried a minute later, after settings.json changed.
  h.clock.ms += 60_000;
  await h.writeObject('settings.json', JSON.stringify({ model: { id: 'later-model' } }));
  h.bedrock.script({ text: 'As first decided.' });
  const state = await runStep({ ...h.deps, snapshots: recentSnapshots() }, { action: 'prepare', state: run });
  assert.equal('released' in state && state.released, 'idle');
  assert.equal(h.bedrock.requests.at(-1)!.modelId, 'first-model');
  const stored = await loadSnapshot({ store: h.deps.store }, run);
  assert.equal(stored.modelId, 'first-model');
  assert.equal(stored.startedAt, first.startedAt, 'maxRunMinutes counts from the first attempt');
  await h.writeObject('settings.json', '{}');
});

test('prepare of a run stopped before it began ends it without touching the context', async () => {
  const run = await h.newRun('never mind');
  await requestStop(h.deps.actor, run.threadId);
  assert.deepEqual(await prepare(h.deps, run), { step: 0, next: 'finish', stopReason: 'aborted' });
  assert.deepEqual(await entries(run), []);
});

/**
 * ECS's RunTask over HTTP, answered only once the test says so. A protocol-level fake: the local ECS
 * answers at once, and what is tested here is that nothing of the first model step waits for it
 * (on AWS RunTask takes hundreds of milliseconds).
 */
async function heldRunTask() {
  const answer = Promise.withResolvers<void>();
  const received: string[] = [];
  const server = createServer((request, response) => {
    received.push(String(request.headers['x-amz-target']));
    request.resume();
    void answer.promise.then(() => {
      response.setHeader('content-type', 'application/x-amz-json-1.1');
      response.end(JSON.stringify({ tasks: [{ taskArn: 'arn:aws:ecs:us-east-1:123456789012:task/sandbox/held' }], failures: [] }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const ecs = new ECSClient({
    endpoint: `http://127.0.0.1:${port}`,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
  const sandbox: LifecycleDeps = {
    db: h.deps.actor.db,
    tableName: h.deps.actor.tableName,
    ecs,
    config: {
      cluster: 'sandbox',
      taskDefinition: 'sandbox',
      containerName: 'sandbox',
      subnets: ['subnet-local'],
      securityGroups: ['sg-local'],
      port: 8080,
      idleMinutes: 5,
    },
  };
  return {
    sandbox,
    received,
    answer: () => answer.resolve(),
    close: async () => {
      ecs.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

test("prepare goes on into the first model step in the same invocation, and an answer that ends the run finishes it there; the sandbox's early start runs beside the step, and the run ends once it has", async () => {
  const ecs = await heldRunTask();
  try {
    await h.writeObject('settings.json', '{}');
    const run = await h.newRun('start my sandbox early');
    h.bedrock.script({ text: 'Started.' });
    const calls = h.bedrock.requests.length;
    let ended = false;
    const step = runStep({ ...h.deps, sandbox: ecs.sandbox }, { action: 'prepare', state: run }).finally(() => (ended = true));
    // The model answered and the reply is in the thread while RunTask is still unanswered.
    await eventually(() => h.botMessages(run).some((m) => m.text === 'Started.'), 10_000, 'the reply');
    assert.equal(h.bedrock.requests.length, calls + 1);
    assert.deepEqual(ecs.received, ['AmazonEC2ContainerServiceV20141113.RunTask']);
    assert.equal(await getSandbox(ecs.sandbox, run.threadId), undefined, 'not recorded before RunTask answers');
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(ended, false, 'the invocation waits for the sandbox start');
    assert.equal((await getActor(h.deps.actor, run.threadId))?.status, 'running', 'nor is the run finished before it');
    ecs.answer();
    // The answer ended the run: it finished in the same invocation, and the thread is free.
    assert.deepEqual(routeOf((await step) as LoopState), { step: 1, next: 'finish', stopReason: 'end_turn', work: 2, released: 'idle' });
    assert.equal((await getActor(h.deps.actor, run.threadId))?.status, 'idle');
    assert.equal((await getSandbox(ecs.sandbox, run.threadId))?.status, 'starting');
  } finally {
    await ecs.close();
  }
});

test('a prompt that prepare does not give to the model (a stop before it began) ends the invocation there, the model not called', async () => {
  const run = await h.newRun('stopped at once');
  await requestStop(h.deps.actor, run.threadId);
  const calls = h.bedrock.requests.length;
  assert.deepEqual(await runStep(h.deps, { action: 'prepare', state: run }), { step: 0, next: 'finish', stopReason: 'aborted', work: 1 });
  assert.equal(h.bedrock.requests.length, calls);
});

/** The call that begins step 0: it reads (or, to reserve on a budget, checks in a transaction) the step's reply record. */
const beginsStepZero = (command: object) =>
  (command instanceof TransactWriteCommand &&
    (command.input.TransactItems ?? []).some((item) => item.ConditionCheck?.Key?.sk === 'reply#0')) ||
  (command instanceof BatchGetCommand &&
    Object.values(command.input.RequestItems ?? {}).some((r) => r.Keys?.some((k) => k.sk === 'reply#0')));

/** An S3 client whose first PutObject on `key` runs `instead` (given the real send) in place of sending it. */
function onFirstPut(
  s3: StepHarness['deps']['store']['s3'],
  key: string,
  instead: (send: () => Promise<unknown>) => Promise<unknown>,
): typeof s3 {
  let seen = false;
  return new Proxy(s3, {
    get: (target, name) =>
      name === 'send'
        ? (command: { input?: { Key?: string } }) => {
            if (seen || !(command instanceof PutObjectCommand) || command.input.Key !== key) return target.send(command as never);
            seen = true;
            return instead(() => target.send(command as never));
          }
        : Reflect.get(target, name),
  });
}

test("the first model step's beginning call goes out while prepare's context save is unanswered; the model is called once it is answered", async () => {
  const run = await h.newRun('overlap my writes');
  const order: string[] = [];
  let answeredAt = Number.NaN;
  let beginSent!: () => void;
  const began = new Promise<void>((resolve) => (beginSent = resolve));
  // Prepare's save is held until the beginning write is sent (or 3 s, when it would never be).
  const s3 = onFirstPut(h.deps.store.s3, dataKeys(run.threadId).context, async (send) => {
    order.push('context save sent');
    await Promise.race([began, new Promise((resolve) => setTimeout(resolve, 3000))]);
    const answer = await send();
    order.push('context save answered');
    answeredAt = Date.now();
    return answer;
  });
  const db = beforeEachCommand(h.deps.ledger.db, async (command) => {
    if (beginsStepZero(command)) {
      order.push('beginning call sent');
      beginSent();
    }
  });
  const from = h.bedrock.requests.length;
  h.bedrock.script({ text: 'Overlapped.' });
  const deps = { ...h.deps, store: { ...h.deps.store, s3 }, ledger: { ...h.deps.ledger, db } };
  const state = await runStep(deps, { action: 'prepare', state: run });
  assert.equal('released' in state && state.released, 'idle');
  assert.deepEqual(order, ['context save sent', 'beginning call sent', 'context save answered']);
  assert.equal(h.bedrock.requests.length, from + 1);
  assert.ok(h.bedrock.requests.at(-1)!.time >= answeredAt, 'the model was called after the save was answered');
  assert.match(JSON.stringify(h.bedrock.requests.at(-1)!.body.messages), /overlap my writes/, 'the model got the prompt');
  assert.deepEqual(
    h.botMessages(run).map((m) => m.text),
    ['Overlapped.'],
  );
});

test("a prepare whose context save fails in the first model step's invocation calls no model and fails the invocation (its retry prepares again)", async () => {
  const run = await h.newRun('my save fails');
  const s3 = onFirstPut(h.deps.store.s3, dataKeys(run.threadId).context, () => Promise.reject(new Error('S3 is down')));
  const from = h.bedrock.requests.length;
  await assert.rejects(runStep({ ...h.deps, store: { ...h.deps.store, s3 } }, { action: 'prepare', state: run }), /S3 is down/);
  assert.equal(h.bedrock.requests.length, from, 'the model was not called');
  assert.deepEqual(h.botMessages(run), []);
  h.bedrock.script({ text: 'Prepared again.' });
  const state = await runStep(h.deps, { action: 'prepare', state: run });
  assert.equal('released' in state && state.released, 'idle');
  assert.deepEqual(
    (await entries(run)).map((e) => e.role),
    ['user', 'assistant'],
  );
});

// ---------------------------------------------------------------------------------------------
// model

test('model streams the answer into the thread, saves it with its usage, and finishes', async () => {
  const run = await preparedRun('what is 2+2?');
  h.bedrock.script({ text: 'It is four.', usage: { inputTokens: 40, outputTokens: 5, cacheReadInputTokens: 30 } });
  assert.deepEqual(await modelStep(h.deps, run, { step: 0, next: 'model' }), { step: 1, next: 'finish', stopReason: 'end_turn' });
  assert.deepEqual(
    h.botMessages(run).map((m) => m.text),
    ['It is four.'],
  );
  const answer = (await entries(run)).at(-1)!;
  assert.equal(answer.role, 'assistant');
  assert.equal(answer.meta.usage?.cacheReadInputTokens, 30);
  assert.equal(answer.meta.at, new Date(h.clock.ms).toISOString());
  // A retry of the same step (the Lambda died after saving) neither calls the model nor posts again.
  const calls = h.bedrock.requests.length;
  assert.deepEqual(await modelStep(h.deps, run, { step: 0, next: 'model' }), { step: 1, next: 'finish', stopReason: 'end_turn' });
  assert.equal(h.bedrock.requests.length, calls);
  assert.equal(h.botMessages(run).length, 1);
});

test("model: the step's log line carries its channel and cost, which the dashboard's top-channels query groups and sums", async () => {
  const run = await preparedRun('what is 3+3?', { prices: { 'test-default-model': { input: 3, output: 15 } } });
  h.bedrock.script({ text: 'Six.', usage: { inputTokens: 1000, outputTokens: 100 } });
  await modelStep(h.deps, run, { step: 0, next: 'model' });
  const line = h.logs.find((l) => l.message === MODEL_STEP_LOG_MESSAGE && l.runId === run.runId);
  assert.equal(line?.channel, `slack:${run.threadId.split(':')[1]}`);
  assert.equal(line?.costUsd, 0.0045);
});

test('model with tool calls routes to the tool step and shows the Stop button', async () => {
  const run = await preparedRun('list the files');
  h.bedrock.script({ text: 'Looking.', toolUses: [toolUse('bash', { command: 'ls' })] });
  assert.deepEqual(await modelStep(h.deps, run, { step: 0, next: 'model' }), { step: 1, next: 'tool', stopReason: 'tool_use' });
  assert.ok(h.botMessages(run).some((m) => JSON.stringify(m.blocks ?? []).includes('stop-run')));
});

test('limit: calls over maxToolCallsPerTurn are answered with an error, not run', async () => {
  const run = await preparedRun('three things', { maxToolCallsPerTurn: 2 });
  const uses = [toolUse('bash', { command: 'a' }), toolUse('bash', { command: 'b' }), toolUse('bash', { command: 'c' })];
  h.bedrock.script({ toolUses: uses });
  await modelStep(h.deps, run, { step: 0, next: 'model' });
  const results = (await entries(run)).at(-1)!.content.map((b) => b.toolResult);
  assert.equal(results.length, 1);
  assert.equal(results[0]?.toolUseId, uses[2]!.toolUseId);
  assert.match(String(results[0]?.content?.[0]?.text), /at most 2 tool calls/);
});

test('limit: the run ends with a message once it reaches maxModelSteps', async () => {
  const run = await preparedRun('keep going', { maxModelSteps: 2 });
  h.bedrock.script({ toolUses: [toolUse('bash', { command: 'true' })] });
  assert.deepEqual(await modelStep(h.deps, run, { step: 0, next: 'model' }), { step: 1, next: 'tool', stopReason: 'tool_use' });
  h.bedrock.script({ toolUses: [toolUse('bash', { command: 'true' })] });
  const state = await modelStep(h.deps, run, { step: 1, next: 'model' });
  assert.deepEqual(state, { step: 2, next: 'finish', stopReason: 'limit' });
  assert.match(h.botMessages(run).at(-1)!.text, /limit of 2 model calls/);
});

test('limit: the run ends with a message once maxRunMinutes have passed on the clock', async () => {
  const run = await preparedRun('a long job', { maxRunMinutes: 10 });
  h.bedrock.script({ toolUses: [toolUse('bash', { command: 'true' })] });
  assert.equal((await modelStep(h.deps, run, { step: 0, next: 'model' })).next, 'tool');
  h.clock.ms += 10 * 60_000;
  h.bedrock.script({ toolUses: [toolUse('bash', { command: 'true' })] });
  assert.deepEqual(await modelStep(h.deps, run, { step: 1, next: 'model' }), { step: 2, next: 'finish', stopReason: 'limit' });
  assert.match(h.botMessages(run).at(-1)!.text, /time limit of 10 minutes/);
});

test('model: steering that arrived while the model answered becomes another turn', async () => {
  const run = await preparedRun('write a haiku');
  h.bedrock.script({ text: 'Autumn moonlight...' });
  await addSteer(h.deps.actor, run.threadId, 'make it about winter');
  assert.deepEqual(await modelStep(h.deps, run, { step: 0, next: 'model' }), { step: 1, next: 'model', stopReason: 'end_turn' });
  assert.match(JSON.stringify((await entries(run)).at(-1)!.content), /make it about winter/);
});

test('model: a heartbeat that has nothing to say posts nothing; one that does, posts it whole', async () => {
  const quiet = await h.newRun('check the inbox', { heartbeat: true });
  await prepare(h.deps, quiet);
  h.bedrock.script({ text: HEARTBEAT_OK });
  await modelStep(h.deps, quiet, { step: 0, next: 'model' });
  assert.deepEqual(h.botMessages(quiet), []);
  const loud = await h.newRun('check the inbox', { heartbeat: true });
  await prepare(h.deps, loud);
  h.bedrock.script({ text: 'Two invoices are overdue.' });
  await modelStep(h.deps, loud, { step: 0, next: 'model' });
  assert.deepEqual(
    h.botMessages(loud).map((m) => m.text),
    ['Two invoices are overdue.'],
  );
});

test('model: an answer cut off at the output limit says so in the thread and in the context', async () => {
  const run = await preparedRun('tell me everything');
  h.bedrock.script({ text: 'Once upon a', stopReason: 'max_tokens' });
  await modelStep(h.deps, run, { step: 0, next: 'model' });
  assert.match(h.botMessages(run).at(-1)!.text, /cut off at the output limit/);
  assert.match(JSON.stringify((await entries(run)).at(-1)!.content), /cut off at the output limit/);
});

test('model: a stop flagged before the call ends the run without calling the model', async () => {
  const run = await preparedRun('stop me');
  await requestStop(h.deps.actor, run.threadId);
  const calls = h.bedrock.requests.length;
  assert.deepEqual(await modelStep(h.deps, run, { step: 0, next: 'model' }), { step: 0, next: 'finish', stopReason: 'aborted' });
  assert.equal(h.bedrock.requests.length, calls);
});

// ---------------------------------------------------------------------------------------------
// tool

async function runWithToolCalls(...uses: ReturnType<typeof toolUse>[]): Promise<RunInput> {
  const run = await preparedRun('use tools');
  h.bedrock.script({ toolUses: uses });
  await modelStep(h.deps, run, { step: 0, next: 'model' });
  return run;
}

test('tool: a sandbox tool without a sandbox gets a clear error result; the loop goes on', async () => {
  const run = await runWithToolCalls(toolUse('bash', { command: 'ls' }), toolUse('search_channel', { query: 'deploy' }));
  assert.deepEqual(await toolStep(h.deps, run, { step: 1, next: 'tool' }), { step: 1, next: 'tool' });
  const result = (await entries(run)).at(-1)!.content[0]!.toolResult;
  assert.equal(result?.status, 'error');
  assert.match(String(result?.content?.[0]?.text), /no sandbox/);
  // The chat tool runs here, in agent-step, and then it is the model's turn again.
  assert.deepEqual(await toolStep(h.deps, run, { step: 1, next: 'tool' }), { step: 1, next: 'model' });
  assert.equal((await entries(run)).at(-1)!.content.length, 2);
});

test('tool: a steer skips the remaining calls and goes back to the model; a stop ends the run', async () => {
  const steered = await runWithToolCalls(toolUse('search_channel', { query: 'a' }), toolUse('search_channel', { query: 'b' }));
  await addSteer(h.deps.actor, steered.threadId, 'only look at last week');
  assert.deepEqual(await toolStep(h.deps, steered, { step: 1, next: 'tool' }), { step: 1, next: 'model' });
  const context = await entries(steered);
  assert.equal(context.at(-2)!.content.filter((b) => b.toolResult?.content?.[0]?.text === STEER_SKIPPED).length, 2);
  assert.match(JSON.stringify(context.at(-1)!.content), /only look at last week/);

  const stopped = await runWithToolCalls(toolUse('search_channel', { query: 'a' }));
  await requestStop(h.deps.actor, stopped.threadId);
  assert.deepEqual(await toolStep(h.deps, stopped, { step: 1, next: 'tool' }), { step: 1, next: 'finish', stopReason: 'aborted' });
});

test('tool: a tool registered at run time is offered to the model and runs in the agent step, its input checked by its schema', async () => {
  const asked: string[] = [];
  const lookup = defineTool({
    name: 'lookup',
    runsIn: 'agent',
    description: 'Look a word up in the team glossary.',
    input: z.object({ word: z.string().describe('The word') }),
    async run(input, context) {
      asked.push(`${input.word} in ${context.thread.id}`);
      return { status: 'success', text: `${input.word}: a release train` };
    },
  });
  const deps = { ...h.deps, tools: BUILTIN_TOOLS.with([lookup]) };
  await h.writeObject('settings.json', '{}');
  const run = await h.newRun('what is a choo-choo?');
  await prepare(deps, run);
  const good = toolUse('lookup', { word: 'choo-choo' });
  const bad = toolUse('lookup', { words: 'choo-choo' });
  h.bedrock.script({ toolUses: [good, bad] });
  assert.deepEqual(await modelStep(deps, run, { step: 0, next: 'model' }), { step: 1, next: 'tool', stopReason: 'tool_use' });
  const offered = h.bedrock.requests.at(-1)!.body.toolConfig!.tools!;
  assert.deepEqual(offered.slice(0, -2), BUILTIN_TOOLS.toolConfig(false).tools);
  assert.equal(offered.at(-2)?.toolSpec?.name, 'lookup');
  assert.deepEqual(offered.at(-1), { cachePoint: { type: 'default' } });
  assert.deepEqual(await toolStep(deps, run, { step: 1, next: 'tool' }), { step: 1, next: 'tool' });
  assert.deepEqual(await toolStep(deps, run, { step: 1, next: 'tool' }), { step: 1, next: 'model' });
  const results = (await entries(run)).at(-1)!.content.map((b) => b.toolResult);
  assert.deepEqual(
    results.map((r) => [r?.toolUseId, r?.status, r?.content?.[0]?.text]),
    [
      [good.toolUseId, 'success', 'choo-choo: a release train'],
      [bad.toolUseId, 'error', 'invalid input for lookup: word: Invalid input: expected string, received undefined'],
    ],
  );
  assert.deepEqual(asked, [`choo-choo in ${run.threadId}`]);
});

test('routeAfterTool sends the next sandbox call to the sandbox step only from inside the sandbox step', () => {
  const pending = [
    {
      role: 'assistant' as const,
      content: [{ toolUse: { toolUseId: 'a', name: 'bash', input: {} } }],
      meta: { runId: 'r', at: '' },
    },
  ];
  assert.deepEqual(routeAfterTool(pending, 3, BUILTIN_TOOLS), { step: 3, next: 'sandbox' });
  assert.deepEqual(routeAfterTool(pending, 3), { step: 3, next: 'tool' });
  assert.deepEqual(routeAfterTool([], 3, BUILTIN_TOOLS), { step: 3, next: 'model' });
});

// ---------------------------------------------------------------------------------------------
// finish, fail, hand-over

test('finish removes the Stop button, logs the exchange and passes the thread on', async () => {
  const run = await runWithToolCalls(toolUse('search_channel', { query: 'x' }));
  h.bedrock.script({ text: 'Found nothing.' });
  await toolStep(h.deps, run, { step: 1, next: 'tool' });
  await modelStep(h.deps, run, { step: 1, next: 'model' });
  const release = await finish(h.deps, run, { step: 2, next: 'finish', stopReason: 'end_turn' });
  assert.equal(release.outcome, 'idle');
  assert.equal((await getActor(h.deps.actor, run.threadId))?.status, 'idle');
  assert.ok(!h.botMessages(run).some((m) => JSON.stringify(m.blocks ?? []).includes('stop-run')), 'the Stop button is gone');
  const log = await loadLog(h.deps.store, run.threadId);
  assert.deepEqual(
    log.map((e) => [e.isBot, e.text]),
    [
      [false, 'use tools'],
      [true, 'Found nothing.'],
    ],
  );
  // The reply's message id comes from its context entry (the model step put it there), not a record read.
  const reply = h.botMessages(run).find((m) => m.text === 'Found nothing.');
  assert.equal(log.at(-1)?.messageId, reply?.ts);
});

test('finish of a run that called no tool reads no Stop card record and no reply record: the context says there were none, and names the reply', async () => {
  const run = await preparedRun('just answer');
  h.bedrock.script({ text: 'Answered.' });
  const state = await modelStepAt(h.deps, run, { step: 0, next: 'model' });
  const reads: string[] = [];
  const db = beforeEachCommand(h.deps.ledger.db, async (command) => {
    if (command instanceof GetCommand && String(command.input.Key?.pk).startsWith('run#')) reads.push(String(command.input.Key?.sk));
  });
  const deps = { ...h.deps, ledger: { ...h.deps.ledger, db } };
  assert.equal((await finish(deps, run, { ...state, next: 'finish' })).outcome, 'idle');
  assert.deepEqual(reads, [], 'no ledger record was read');
  const log = await loadLog(h.deps.store, run.threadId);
  assert.equal(log.at(-1)?.messageId, h.botMessages(run).at(-1)?.ts);
});

/** The data bucket's client, noting the key of every GetObject it sends. */
function notingReads(reads: string[]): AgentDeps['store'] {
  const s3 = new Proxy(h.deps.store.s3, {
    get: (target, name) =>
      name === 'send'
        ? async (command: object) => {
            if (command instanceof GetObjectCommand) reads.push(String(command.input.Key));
            return target.send(command as never);
          }
        : Reflect.get(target, name),
  });
  return { ...h.deps.store, s3 };
}

test('finish writes log.jsonl over the version prepare kept, without reading it; a version another writer made stale is read again, and nothing is lost', async () => {
  const logs = recentlyUsed<LogVersion>(5);
  const reads: string[] = [];
  const deps = { ...h.deps, logs, store: notingReads(reads) };
  await h.writeObject('settings.json', '{}');
  const run = await h.newRun('keep the log');
  const logKey = dataKeys(run.threadId).log;
  await prepareAt(deps, run);
  assert.ok(logs.get(run.threadId), 'prepare kept the version it read');
  h.bedrock.script({ text: 'Kept.' });
  const state = await modelStepAt(deps, run, { step: 0, next: 'model' });
  reads.length = 0;
  assert.equal((await finish(deps, run, { ...state, next: 'finish' })).outcome, 'idle');
  assert.deepEqual(
    reads.filter((key) => key === logKey),
    [],
    'log.jsonl not read',
  );
  assert.deepEqual(
    (await loadLog(h.deps.store, run.threadId)).map((e) => e.text),
    ['keep the log', 'Kept.'],
  );

  // Another writer appends after prepare read the log: the kept version no longer matches.
  const next = await h.newRun('and again', { threadTs: run.threadId.split(':')[2] });
  await prepareAt(deps, next);
  await appendLog(h.deps.store, next.threadId, [
    {
      date: '2026-11-24T09:00:30.000Z',
      messageId: 'from-elsewhere',
      userId: 'U0X',
      userName: 'x',
      text: 'written meanwhile',
      isBot: false,
    },
  ]);
  h.bedrock.script({ text: 'Again.' });
  const again = await modelStepAt(deps, next, { step: 0, next: 'model' });
  reads.length = 0;
  assert.equal((await finish(deps, next, { ...again, next: 'finish' })).outcome, 'idle');
  assert.deepEqual(
    reads.filter((key) => key === logKey),
    [logKey],
    'read once, after the kept version failed the condition',
  );
  const texts = (await loadLog(h.deps.store, run.threadId)).map((e) => e.text);
  for (const text of ['keep the log', 'Kept.', 'written meanwhile', 'and again', 'Again.']) assert.ok(texts.includes(text), text);
});

test('fail posts one message naming the problem, even when retried, and frees the thread', async () => {
  const run = await preparedRun('break');
  const error = { Error: 'ThrottlingException', Cause: JSON.stringify({ errorType: 'ThrottlingException', errorMessage: 'slow down' }) };
  assert.equal((await fail(h.deps, run, error)).outcome, 'idle');
  assert.equal((await fail(h.deps, run, error)).outcome, 'not-holder');
  assert.equal(h.botMessages(run).length, 1);
  assert.equal((await getActor(h.deps.actor, run.threadId))?.status, 'idle');
});

test('handoff names the next execution on the actor first, then starts it where the loop was', async () => {
  const run = await preparedRun('a very long run');
  const loop: LoopState = { step: 7, next: 'handoff', resume: 'sandbox', work: 1000 };
  assert.deepEqual(await handoff(h.deps, run, loop), { ...loop, next: 'finish' });
  assert.equal((await getActor(h.deps.actor, run.threadId))?.current?.executionName, `${run.runId}-2`);
  assert.deepEqual(h.started.at(-1), { ...run, executionName: `${run.runId}-2`, loop: { step: 7, next: 'sandbox', work: 0 } });
});

test('handoff of a run whose command still runs keeps the progress, so the new execution attaches to the command', async () => {
  const run = await preparedRun('a long command at the hand-over');
  const progress = { toolUseId: 'tu-long', tool: 'bash', line: 'step 3 of 9' };
  const loop: LoopState = { step: 4, next: 'handoff', resume: 'progress', work: 1000, progress };
  await handoff(h.deps, run, loop);
  assert.deepEqual(h.started.at(-1), { ...run, executionName: `${run.runId}-2`, loop: { step: 4, next: 'progress', work: 0, progress } });
});

test("progress shows the command's last line in the status and goes back to the sandbox step; after a stop it shows nothing", async () => {
  const statuses = (run: RunInput) =>
    h.slack.calls
      .filter((c) => c.method === 'assistant.threads.setStatus' && c.args.thread_ts === run.prompt.thread.id.split(':')[2])
      .map((c) => String(c.args.status));
  const run = await preparedRun('run something long');
  const progress = { toolUseId: 'tu-long', tool: 'bash', line: 'compiling 3/9' };
  assert.deepEqual(await progressStep(h.deps, run, { step: 1, next: 'progress', progress }), { step: 1, next: 'sandbox', progress });
  assert.deepEqual(statuses(run), ['Running bash… compiling 3/9']);

  const stopped = await preparedRun('stop the long thing');
  await requestStop(h.deps.actor, stopped.threadId);
  // The sandbox step cancels the command when it attaches and sees the stop.
  assert.deepEqual(await progressStep(h.deps, stopped, { step: 1, next: 'progress', progress }), { step: 1, next: 'sandbox', progress });
  assert.deepEqual(statuses(stopped), []);
});

test('progress does not hold the run past its bound while the chat API makes the status wait (a 429 the client retries)', async () => {
  const run = await preparedRun('a long command in a rate-limited workspace');
  const progress = { toolUseId: 'tu-long', tool: 'bash', line: 'still going' };
  // Every try is refused while the limit stands, and the Web API client holds its queue for Retry-After each time.
  h.slack.rateLimits['assistant.threads.setStatus'] = { limit: 0, windowMs: 600_000, retryAfterSeconds: 5 };
  try {
    // Without the bound the step would wait for the client's retries, which only end with the limit.
    assert.deepEqual(await progressStep(h.deps, run, { step: 1, next: 'progress', progress }), { step: 1, next: 'sandbox', progress });
    assert.ok(h.slack.calls.some((c) => c.method === 'assistant.threads.setStatus' && c.status === 429));
  } finally {
    delete h.slack.rateLimits['assistant.threads.setStatus'];
  }
});

test("a subagent's long command puts its last line in its own part of the one status line its parent's children share", async () => {
  const parent = await preparedRun('delegate something long');
  const child = childRunInput(
    parent,
    { toolUseId: 'tu_sub', task: 'build it', agent: 'builder' },
    {
      batch: 'tu_sub',
      deadline: Date.now() + 60_000,
      maxModelSteps: 10,
    },
  );
  await createBatch(h.deps.ledger, parent.runId, 'tu_sub', [{ runId: child.runId, toolUseId: 'tu_sub', agent: 'builder' }], Date.now());
  const progress = { toolUseId: 'tu-cmd', tool: 'bash', line: 'compiling 3/9' };
  assert.deepEqual(await progressStep(h.deps, child, { step: 1, next: 'progress', progress }), { step: 1, next: 'sandbox', progress });
  const threadTs = parent.prompt.thread.id.split(':')[2];
  const statuses = h.slack.calls.filter((c) => c.method === 'assistant.threads.setStatus' && c.args.thread_ts === threadTs);
  assert.deepEqual(
    statuses.map((c) => c.args.status),
    ['Subagents: builder: running bash… compiling 3/9'],
  );
});

test('countStep hands over after the limit, and never from a finished or handed-over run', () => {
  assert.deepEqual(countStep({ step: 1, next: 'tool', work: 2 }, { step: 1, next: 'sandbox' }, 3), {
    step: 1,
    next: 'handoff',
    resume: 'sandbox',
    work: 3,
  });
  assert.deepEqual(countStep({ step: 1, next: 'tool', work: 2 }, { step: 2, next: 'finish' }, 3), { step: 2, next: 'finish', work: 3 });
  assert.deepEqual(countStep(undefined, { step: 0, next: 'model' }), { step: 0, next: 'model', work: 1 });
});

test('the snapshot and the context live under the thread, keyed by run', async () => {
  const run = await preparedRun('where is it kept?');
  assert.ok(h.s3.objects.has(`${dataKeys(run.threadId).threadDir}/runs/${run.runId}.json`));
  assert.ok(h.s3.objects.has(dataKeys(run.threadId).context));
});

test('the steps after prepare keep the settings the run began with: they read the snapshot, never settings.json', async () => {
  const run = await preparedRun('use the sandbox', {
    limits: { maxRunningSandboxes: 3 },
    sandbox: { maxSyncedFiles: 7 },
    maxEventFilesPerRun: 2,
  });
  const snapshot = await loadSnapshot(h.deps, run);
  assert.equal(snapshot.maxRunningSandboxes, 3);
  assert.deepEqual(snapshot.sandbox, { startEarly: true, maxSyncedFiles: 7, maxSyncedMegabytes: 1024 });
  assert.equal(snapshot.maxEventFilesPerRun, 2);
  // settings.json changes, and nothing but prepare may ask for it: the run goes on as it began.
  await h.writeObject('settings.json', JSON.stringify({ maxModelSteps: 1, limits: { maxRunningSandboxes: 9 } }));
  let reads = 0;
  const counted = {
    ...h.deps.store,
    s3: countingCalls(
      h.deps.store.s3,
      (key) => key === 'settings.json',
      () => reads++,
    ),
  };
  const deps = { ...h.deps, store: counted, settings: { get: () => Promise.reject(new Error('a step after prepare read settings.json')) } };
  h.bedrock.script({ toolUses: [toolUse('search_channel', { query: 'x' })] });
  assert.deepEqual(await modelStep(deps, run, { step: 0, next: 'model' }), { step: 1, next: 'tool', stopReason: 'tool_use' });
  assert.deepEqual(await toolStep(deps, run, { step: 1, next: 'tool' }), { step: 1, next: 'model' });
  h.bedrock.script({ text: 'Found it.' });
  assert.deepEqual(await modelStep(deps, run, { step: 1, next: 'model' }), { step: 2, next: 'finish', stopReason: 'end_turn' });
  await finish(deps, run, { step: 2, next: 'finish' });
  assert.equal(reads, 0);
  await h.writeObject('settings.json', '{}');
});

test("a container reads each run's snapshot once; it keeps the most recent runs'", async () => {
  const run = await preparedRun('read me once');
  let reads = 0;
  const s3 = h.deps.store.s3;
  const counting = countingCalls(
    s3,
    (key) => key.endsWith(`/runs/${run.runId}.json`),
    () => reads++,
  );
  const snapshots = recentSnapshots(2);
  const deps = { store: { ...h.deps.store, s3: counting }, snapshots };
  const first = await loadSnapshot(deps, run);
  assert.equal(await loadSnapshot(deps, run), first);
  assert.equal(reads, 1);
  snapshots.set('other-1', first);
  snapshots.set('other-2', first);
  await loadSnapshot(deps, run);
  assert.equal(reads, 2, 'the oldest of three was let go');
});

/** An S3 client that counts the calls it sends on the keys `counted` picks. */
function countingCalls(s3: StepHarness['deps']['store']['s3'], counted: (key: string) => boolean, count: () => void): typeof s3 {
  return new Proxy(s3, {
    get: (target, name) =>
      name === 'send'
        ? (command: { input?: { Key?: string } }) => {
            if (counted(command.input?.Key ?? '')) count();
            return target.send(command as never);
          }
        : Reflect.get(target, name),
  });
}

// ---------------------------------------------------------------------------------------------
// The model step's reads folded into its writes: each case a removed read covered still holds.

/** A state-table client that runs `before` ahead of each command it sends. */
function beforeEachCommand(db: AgentDeps['ledger']['db'], before: (command: object) => Promise<void>): typeof db {
  return new Proxy(db, {
    get: (target, name) =>
      name === 'send'
        ? async (command: object) => {
            await before(command);
            return target.send(command as never);
          }
        : Reflect.get(target, name),
  });
}

/** The transaction that ends step 0 (it records the step's reply). */
const endsStepZero = (command: object) =>
  command instanceof TransactWriteCommand && (command.input.TransactItems ?? []).some((item) => item.Put?.Item?.sk === 'reply#0');

test('model: a stop that lands after the answer streamed, before the step ends, is caught by the ending write: the cost is settled, nothing more is written', async () => {
  const run = await preparedRun('stop me late');
  const stepsBefore = (await readSpend(h.deps.ledger, threadSpendKey(run.threadId))).steps;
  const db = beforeEachCommand(h.deps.ledger.db, async (command) => {
    if (endsStepZero(command)) await requestStop(h.deps.actor, run.threadId);
  });
  h.bedrock.script({ text: 'An answer that streamed whole.' });
  const deps = { ...h.deps, ledger: { ...h.deps.ledger, db } };
  assert.deepEqual(await modelStep(deps, run, { step: 0, next: 'model' }), { step: 0, next: 'finish', stopReason: 'aborted' });
  assert.equal((await readSpend(h.deps.ledger, threadSpendKey(run.threadId))).steps, stepsBefore + 1, 'what the call cost is counted');
  // What streamed stays in the thread, recorded against a retry; the context, saved beside the
  // ending write, holds what the thread shows, once.
  assert.deepEqual(
    h.botMessages(run).map((m) => m.text),
    ['An answer that streamed whole.'],
  );
  assert.ok(await readRecord(h.deps.ledger, run.runId, 'reply#0'));
  assert.deepEqual(
    (await entries(run)).filter((e) => e.role === 'assistant').map((e) => JSON.stringify(e.content)),
    [JSON.stringify([{ text: 'An answer that streamed whole.' }])],
  );
});

test('model: a stream the stop watch cuts short leaves its part-answer out of the context (a whole answer may go in beside the ending write; a cut one may not)', async () => {
  const run = await preparedRun('stop me mid-answer');
  const held = gate();
  h.bedrock.script({ text: 'The first words of a long', hold: held.promise, holdAfterDeltas: 1 });
  const from = h.bedrock.requests.length;
  const step = modelStep(h.deps, run, { step: 0, next: 'model' });
  await eventually(() => h.bedrock.requests.length > from, 5000, 'the model call');
  await new Promise((resolve) => setTimeout(resolve, 100));
  await requestStop(h.deps.actor, run.threadId);
  // The watch polls the flag every 300 ms and cuts the stream; the fake's stream then ends.
  await new Promise((resolve) => setTimeout(resolve, 700));
  held.release();
  assert.deepEqual(await step, { step: 0, next: 'finish', stopReason: 'aborted' });
  assert.deepEqual(
    (await entries(run)).filter((e) => e.role === 'assistant'),
    [],
  );
});

test("model: a stopped step's context save that loses to the thread's next run ends the step stopped, and leaves the next run's context as it wrote it", async () => {
  const run = await preparedRun('stop me, then go on');
  const key = dataKeys(run.threadId).context;
  // The step's save and its ending write go out together: the next run's save lands first and the
  // stop is set before the ending write is sent.
  let nextRunSaved!: () => void;
  const landed = new Promise<void>((resolve) => (nextRunSaved = resolve));
  let raced = false;
  const s3 = new Proxy(h.deps.store.s3, {
    get: (target, name) =>
      name === 'send'
        ? async (command: { input?: { Key?: string } }) => {
            if (!raced && command instanceof PutObjectCommand && command.input.Key === key) {
              raced = true;
              await requestStop(h.deps.actor, run.threadId);
              const current = await loadContext(h.deps.store, run.threadId);
              const next = { role: 'user' as const, content: [{ text: 'the next run' }], meta: { runId: 'next-run', at: '' } };
              await saveContext(h.deps.store, run.threadId, [...current.entries, next], current.version);
              nextRunSaved();
            }
            return target.send(command as never);
          }
        : Reflect.get(target, name),
  });
  const db = beforeEachCommand(h.deps.ledger.db, async (command) => {
    if (endsStepZero(command)) await landed;
  });
  h.bedrock.script({ text: 'Too late to keep.' });
  const deps = { ...h.deps, store: { ...h.deps.store, s3 }, ledger: { ...h.deps.ledger, db } };
  assert.deepEqual(await modelStep(deps, run, { step: 0, next: 'model' }), { step: 0, next: 'finish', stopReason: 'aborted' });
  assert.ok(raced);
  const after = await entries(run);
  assert.equal(after.at(-1)?.meta.runId, 'next-run', "the next run's save stands");
  assert.equal(after.filter((e) => e.role === 'assistant').length, 0);
});

test("an answer that ends the run starts the finish's log write beside the step's ending write: it goes out before that write is answered", async () => {
  const run = await h.newRun('log me early');
  const logKey = dataKeys(run.threadId).log;
  const order: string[] = [];
  let logSent!: () => void;
  const logGoesOut = new Promise<void>((resolve) => (logSent = resolve));
  const s3 = new Proxy(h.deps.store.s3, {
    get: (target, name) =>
      name === 'send'
        ? (command: { input?: { Key?: string } }) => {
            if (command instanceof PutObjectCommand && command.input.Key === logKey) {
              order.push('log write sent');
              logSent();
            }
            return target.send(command as never);
          }
        : Reflect.get(target, name),
  });
  // The ending write is held until the log write is sent (or 3 s, when it would never be).
  const db = new Proxy(h.deps.ledger.db, {
    get: (target, name) =>
      name === 'send'
        ? async (command: object) => {
            if (!endsStepZero(command)) return target.send(command as never);
            order.push('ending write sent');
            await Promise.race([logGoesOut, new Promise((resolve) => setTimeout(resolve, 3000))]);
            const answer = await target.send(command as never);
            order.push('ending write answered');
            return answer;
          }
        : Reflect.get(target, name),
  });
  h.bedrock.script({ text: 'Logged beside.' });
  const deps = { ...h.deps, store: { ...h.deps.store, s3 }, ledger: { ...h.deps.ledger, db } };
  const state = await runStep(deps, { action: 'prepare', state: run });
  assert.equal('released' in state && state.released, 'idle');
  assert.deepEqual(order, ['ending write sent', 'log write sent', 'ending write answered']);
  assert.deepEqual(
    (await loadLog(h.deps.store, run.threadId)).map((e) => [e.isBot, e.text]),
    [
      [false, 'log me early'],
      [true, 'Logged beside.'],
    ],
  );
});

test("a step whose answer's save fails after the log write begun beside it landed: the retry edits the reply, and its finish corrects the log's line", async () => {
  const run = await h.newRun('say it twice');
  const contextKey = dataKeys(run.threadId).context;
  let contextSaves = 0;
  // Prepare's save goes through; the model step's (the second) fails once.
  const s3 = new Proxy(h.deps.store.s3, {
    get: (target, name) =>
      name === 'send'
        ? (command: { input?: { Key?: string } }) => {
            if (command instanceof PutObjectCommand && command.input.Key === contextKey && ++contextSaves === 2)
              return Promise.reject(new Error('the answer could not be saved'));
            return target.send(command as never);
          }
        : Reflect.get(target, name),
  });
  h.bedrock.script({ text: 'First wording.' });
  await assert.rejects(runStep({ ...h.deps, store: { ...h.deps.store, s3 } }, { action: 'prepare', state: run }), /could not be saved/);
  assert.deepEqual(
    (await loadLog(h.deps.store, run.threadId)).map((e) => e.text),
    ['say it twice', 'First wording.'],
    'the log write begun beside the ending write landed',
  );
  h.bedrock.script({ text: 'Second wording.' });
  const state = await runStep(h.deps, { action: 'prepare', state: run });
  assert.equal('released' in state && state.released, 'idle');
  const reply = h.botMessages(run);
  assert.deepEqual(
    reply.map((m) => m.text),
    ['Second wording.'],
    'one message, edited',
  );
  const log = await loadLog(h.deps.store, run.threadId);
  assert.deepEqual(
    log.map((e) => [e.messageId, e.text]),
    [
      [run.prompt.messageId, 'say it twice'],
      [reply[0]!.ts, 'Second wording.'],
    ],
  );
});

test('a snapshot write that fails while prepare still works on the prompt fails the invocation, with no model call and nothing left unhandled', async () => {
  const run = await h.newRun('my snapshot fails');
  const s3 = new Proxy(h.deps.store.s3, {
    get: (target, name) =>
      name === 'send'
        ? (command: { input?: { Key?: string } }) => {
            if (command instanceof PutObjectCommand && command.input.Key?.endsWith(`/runs/${run.runId}.json`))
              return Promise.reject(new Error('the snapshot could not be saved'));
            return target.send(command as never);
          }
        : Reflect.get(target, name),
  });
  const from = h.bedrock.requests.length;
  await assert.rejects(
    runStep({ ...h.deps, store: { ...h.deps.store, s3 } }, { action: 'prepare', state: run }),
    /snapshot could not be saved/,
  );
  assert.equal(h.bedrock.requests.length, from);
});

test('a run steered as its answer would have ended it: the log write begun then is completed at its real end, each line once', async () => {
  const run = await h.newRun('answer, then more');
  const db = beforeEachCommand(h.deps.ledger.db, async (command) => {
    if (endsStepZero(command)) await addSteer(h.deps.actor, run.threadId, 'and the weather?');
  });
  h.bedrock.script({ text: 'First answer.' });
  const first = await runStep({ ...h.deps, ledger: { ...h.deps.ledger, db } }, { action: 'prepare', state: run });
  assert.ok(!('released' in first), 'the run goes on');
  assert.equal((first as LoopState).next, 'model');
  assert.deepEqual(
    (await loadLog(h.deps.store, run.threadId)).map((e) => e.text),
    ['answer, then more', 'First answer.'],
    'the exchange so far, written beside the ending write',
  );
  h.bedrock.script({ text: 'Sunny.' });
  const second = await runStep(h.deps, { action: 'model', state: { ...run, loop: first as LoopState } });
  assert.equal('released' in second && second.released, 'idle');
  assert.deepEqual(
    (await loadLog(h.deps.store, run.threadId)).map((e) => e.text),
    ['answer, then more', 'First answer.', 'Sunny.'],
  );
});

test('model: a retry of a step that posted its reply and died before saving edits that reply (the starting write finds its record)', async () => {
  const run = await preparedRun('answer twice');
  let lost = false;
  const s3 = new Proxy(h.deps.store.s3, {
    get: (target, name) =>
      name === 'send'
        ? (command: { input?: { Key?: string } }) => {
            if (!lost && command instanceof PutObjectCommand && command.input.Key === dataKeys(run.threadId).context) {
              lost = true;
              return Promise.reject(new Error('the Lambda died before saving'));
            }
            return target.send(command as never);
          }
        : Reflect.get(target, name),
  });
  h.bedrock.script({ text: 'First try.' });
  await assert.rejects(modelStep({ ...h.deps, store: { ...h.deps.store, s3 } }, run, { step: 0, next: 'model' }), /died before saving/);
  h.bedrock.script({ text: 'Second try.' });
  assert.deepEqual(await modelStep(h.deps, run, { step: 0, next: 'model' }), { step: 1, next: 'finish', stopReason: 'end_turn' });
  assert.deepEqual(
    h.botMessages(run).map((m) => m.text),
    ['Second try.'],
    'one message, edited',
  );
});

test('the context a step saved goes on to the next step in the same container unread; a kept one S3 no longer has is read again', async () => {
  const deps = { ...h.deps, contexts: recentContexts(), snapshots: recentSnapshots() };
  await h.writeObject('settings.json', '{}');
  /** `deps` whose S3 counts the calls on the run's context and snapshot. */
  const counting = (run: RunInput) => {
    const counted = { calls: 0 };
    const key = (k: string) => k === dataKeys(run.threadId).context || k.endsWith(`/runs/${run.runId}.json`);
    return { counted, deps: { ...deps, store: { ...h.deps.store, s3: countingCalls(h.deps.store.s3, key, () => counted.calls++) } } };
  };
  const run = await h.newRun('carry my context');
  const prepared = await prepareAt(deps, run);
  assert.ok(prepared.contextVersion, 'prepare names the version it saved');
  // Another attempt of the step, elsewhere, answered and saved after what this container kept.
  h.bedrock.script({ text: 'Answered elsewhere.' });
  const elsewhere = await modelStepAt(h.deps, run, prepared);
  assert.notEqual(elsewhere.contextVersion, prepared.contextVersion);
  h.bedrock.script({ text: 'Answered here.' });
  assert.deepEqual(routeOf(await modelStepAt(counting(run).deps, run, prepared)), { step: 1, next: 'finish', stopReason: 'end_turn' });
  const answers = (await entries(run)).filter((e) => e.role === 'assistant');
  assert.equal(answers.length, 1, 'the step ran again on what S3 has, and found its answer there');
  // The plain case: prepare's context and snapshot are kept, so the model step reads neither.
  const next = await h.newRun('carry my context again');
  const nextPrepared = await prepareAt(deps, next);
  h.bedrock.script({ text: 'No reads.' });
  const { counted, deps: countedDeps } = counting(next);
  const answered = await modelStepAt(countedDeps, next, nextPrepared);
  assert.deepEqual(routeOf(answered), { step: 1, next: 'finish', stopReason: 'end_turn' });
  assert.equal(counted.calls, 1, 'only the save: neither the context nor the snapshot was read');
  assert.equal((await loadContext(h.deps.store, next.threadId)).version, answered.contextVersion);
});
