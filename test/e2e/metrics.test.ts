// The functions' metrics through the whole local cloud: a run's EMF lines, read from the functions'
// output as CloudWatch Logs reads them, count each thing once per run even when steps are retried.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_SETTINGS } from '../../infra/settings.ts';
import type { MetricPoint } from '../../packages/local-cloud/src/metrics.ts';
import { gate } from '../../packages/local-cloud/src/bedrock.ts';
import { startTestStack, type TestStack } from '../support/local-stack.ts';
import { eventually } from '../support/eventually.ts';
import { runScripted, toolTurn } from '../support/scripted-run.ts';

let stack: TestStack;
before(async () => {
  stack = await startTestStack();
});
after(async () => {
  await stack?.stop();
});

/** The points of one metric published since `from` (an index into the cloud's points). */
const pointsOf = (from: number, name: string): MetricPoint[] => stack.cloud.metrics.points.slice(from).filter((p) => p.name === name);
const settle = () => new Promise((resolve) => setTimeout(resolve, 1000));

test('a run with one tool call, each kind of step retried once, publishes each metric once per run (or per step)', async () => {
  const from = stack.cloud.metrics.points.length;
  // Each step crashes once after its work was done; the state machine retries it. Prepare's
  // invocation holds the first model step (the tool call), the Model state's the answer and the finish.
  for (const action of ['prepare', 'model']) {
    stack.cloud.injectFault({ role: 'agentStep', action, when: 'after', errorName: 'Lambda.ServiceException' });
  }
  stack.cloud.injectFault({ role: 'sandboxStep', action: 'tool', when: 'after', errorName: 'Lambda.ServiceException' });
  const run = await runScripted(stack, {
    text: 'measure me',
    turns: [toolTurn('bash', { command: 'echo measured' }), { text: 'Measured.' }],
  });
  assert.equal(run.ended.status, 'SUCCEEDED');
  await eventually(() => pointsOf(from, 'RunsFinished').length > 0, 15_000, 'RunsFinished published');
  await settle();

  const slackMessage = { adapter: 'slack', trigger: 'message' };
  const once = (name: string, dimensions: Record<string, string>) => {
    const points = pointsOf(from, name);
    assert.equal(points.length, 1, `${name} once, got ${points.length}`);
    assert.deepEqual(points[0]!.dimensions, dimensions, name);
    assert.equal(points[0]!.namespace, 'Threadwork', `${name}: the stack's namespace`);
    return points[0]!;
  };
  assert.equal(once('RunsStarted', slackMessage).value, 1);
  assert.equal(once('RunsFinished', slackMessage).value, 1);
  assert.ok(once('RunDuration', slackMessage).value > 0);
  assert.ok(once('QueueWait', { adapter: 'slack' }).value >= 0);
  const tool = once('ToolCalls', { tool: 'bash' });
  assert.equal(tool.functionId.includes('SandboxStep'), true, 'counted by the sandbox step');
  assert.equal(pointsOf(from, 'ToolErrors').length, 0);
  assert.equal(pointsOf(from, 'RunsFailed').length + pointsOf(from, 'RunsStopped').length, 0);

  // Two model steps (the tool call, then the answer), each once despite the retried one.
  const model = { adapter: 'slack', model: DEFAULT_SETTINGS.modelId };
  for (const name of ['ModelSteps', 'InputTokens', 'OutputTokens', 'CacheReadTokens', 'CacheWriteTokens']) {
    const points = pointsOf(from, name);
    assert.equal(points.length, 2, `${name} per model step`);
    for (const point of points) assert.deepEqual(point.dimensions, model, name);
  }
  assert.ok(pointsOf(from, 'InputTokens').every((p) => p.value > 0));
  assert.equal(pointsOf(from, 'ModelLatency').length, 2);
  assert.deepEqual(pointsOf(from, 'ModelLatency')[0]!.dimensions, { model: DEFAULT_SETTINGS.modelId });
  assert.equal(pointsOf(from, 'TimeToFirstToken').length, 1, 'only the answer with text streamed a first token');

  // Cost: each model step's, and the run's share of its sandbox's Fargate time, at the end.
  const cost = pointsOf(from, 'CostUsd');
  assert.equal(cost.length, 3, `two model steps and the sandbox: ${JSON.stringify(cost)}`);
  for (const point of cost) {
    assert.deepEqual(point.dimensions, slackMessage);
    assert.ok(point.value > 0);
  }
  assert.ok(cost[2]!.value < 0.001, 'seconds of a 1 vCPU, 2 GB task cost a fraction of a cent');

  // The summary npm run ops -- metrics prints, from the local endpoint.
  const response = await fetch(`${stack.cloud.metrics.endpoint}/metrics?name=ToolCalls`);
  const { metrics } = (await response.json()) as { metrics: { name: string; byDimensions: { dimensions: object }[] }[] };
  assert.equal(metrics.length, 1);
  assert.ok(metrics[0]!.byDimensions.some((d) => JSON.stringify(d.dimensions) === '{"tool":"bash"}'));
});

test('a run whose model step fails for good counts one RunsFailed, its start and duration', async () => {
  const from = stack.cloud.metrics.points.length;
  // Bedrock refuses the request (not a throttle, so not retried): the model step fails after prepare.
  const run = await runScripted(stack, { text: 'fail me', turns: [{ error: { type: 'ValidationException', message: 'bad request' } }] });
  assert.equal(run.ended.status, 'FAILED');
  await eventually(() => pointsOf(from, 'RunsFailed').length > 0, 15_000, 'RunsFailed published');
  await settle();
  assert.equal(pointsOf(from, 'RunsStarted').length, 1);
  assert.equal(pointsOf(from, 'RunsFailed').length, 1);
  assert.equal(pointsOf(from, 'RunDuration').length, 1);
  assert.equal(pointsOf(from, 'RunsFinished').length, 0);
  assert.equal(pointsOf(from, 'ModelSteps').length, 0);
});

test('a run stopped while the model answers counts one RunsStopped (from run-ended), no RunsFinished, no model step', async () => {
  const from = stack.cloud.metrics.points.length;
  const hold = gate();
  stack.bedrock.script({ text: 'never finished', hold: hold.promise });
  const posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> stop me' });
  const threadId = `slack:${posted.channel}:${posted.threadTs}`;
  await eventually(() => stack.bedrock.requests.some((r) => JSON.stringify(r.body.messages).includes('stop me')), 30_000, 'at the model');
  await stack.slack.postUserMessage({ text: 'stop', threadTs: posted.threadTs });
  await eventually(() => pointsOf(from, 'RunsStopped').length > 0, 30_000, 'RunsStopped published');
  hold.release();
  await settle();
  const execution = [...stack.cloud.stepFunctions.executions.values()].find((e) => (e.input as { threadId: string }).threadId === threadId);
  assert.equal(execution?.status, 'ABORTED');
  assert.equal(pointsOf(from, 'RunsStarted').length, 1);
  assert.equal(pointsOf(from, 'RunsStopped').length, 1);
  assert.equal(pointsOf(from, 'RunsFinished').length + pointsOf(from, 'RunsFailed').length, 0);
  assert.equal(pointsOf(from, 'ModelSteps').length, 0);
  assert.ok(pointsOf(from, 'RunsStopped')[0]!.functionId.includes('RunEnded'), 'counted by the run-ended function');
});
