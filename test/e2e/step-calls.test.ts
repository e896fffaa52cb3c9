// The AWS calls one plain model step makes, counted from the local cloud's own record of every call
// (each front door records the role that signed it; the Bedrock fake records the model calls). A
// count, not a timing: each DynamoDB or S3 call is a network round trip in AWS, so a change that
// adds one to every step fails here. Calls are placed in the state whose time they arrived in.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { converse } from '../../bench/conversation.ts';
import { arrival, awsCallRecorder, sandboxStartWrites, type AwsCall } from '../../bench/aws-calls.ts';
import { roleOf } from '../../bench/breakdown.ts';
import { phaseOf } from '../../bench/calls.ts';
import { startTestStack, type TestStack } from '../support/local-stack.ts';

let stack: TestStack;
before(async () => {
  stack = await startTestStack();
  stack.bedrock.setDefault(() => ({ text: 'Done.' }));
});
after(async () => {
  await stack?.stop();
});

const listed = (calls: AwsCall[]) => calls.map((c) => `${c.service} ${c.operation} ${c.method} ${c.path}`).join('\n');

async function countedRun(text: string) {
  const recorder = awsCallRecorder(stack);
  recorder.start();
  const timeline = await converse(stack, text);
  return { timeline, calls: recorder.stop() };
}

test('one plain model step makes 4 AWS calls: its starting read, the model call, its ending write and the context save', async () => {
  // Warm: the first run takes the functions' cold starts (a Secrets Manager read in AWS, auth.test).
  await converse(stack, 'warm up');
  const { timeline, calls } = await countedRun('count the calls of one model step');
  // The first model step runs in Prepare's invocation, from its first write on (see converse()), as
  // the bench places it: prepare's last writes, in flight beside that write, and the sandbox's early
  // start, which prepare leaves running beside the step, are prepare's.
  const sandboxStart = sandboxStartWrites(calls);
  const model = calls.filter(
    (c) => (c.fn === 'agentStep' || c.service === 'Bedrock Runtime') && phaseOf(c, timeline, sandboxStart) === 'model',
  );
  // The goal (issue 21) is at most 5; these are the 4 a plain step needs today. The snapshot and the
  // context come from prepare (kept by the container), the flags and the reply record ride in its
  // starting read (a transaction when it reserves on a budget) and its ending transaction, and the
  // run's replies are redacted with its snapshot's secret patterns.
  assert.deepEqual(
    model.map((c) => `${c.service} ${c.operation}`).sort(),
    ['Bedrock Runtime ConverseStream', 'DynamoDB BatchGetItem', 'DynamoDB TransactWriteItems', 'S3 PutObject'],
    listed(model),
  );
});

test('a plain run is one agent-step invocation: prepare goes on into the model step, and the answer that ends the run finishes it', async () => {
  await converse(stack, 'warm up');
  const invoked = stack.cloud.lambda.invocations.length;
  const { timeline } = await countedRun('count the states of a plain run');
  assert.deepEqual(
    timeline.execution.history.map((h) => h.name),
    ['Start', 'Prepare', 'NextStep', 'RunSucceeded'],
  );
  assert.equal((timeline.execution.output as { loop: { released: string } }).loop.released, 'idle');
  const agentStep = stack.cloud.lambda.invocations.slice(invoked).filter((i) => roleOf(stack, i) === 'agentStep');
  assert.equal(agentStep.length, 1);
  // The model was called inside it, and the lease released by it (the thread idle before it returned).
  const [invocation] = agentStep;
  const request = stack.bedrock.requests.at(-1)!;
  assert.ok(invocation!.at <= request.time && request.time <= invocation!.endedAt!, 'the model call came from the Prepare invocation');
});

test('a plain run ends in 6 AWS calls: log.jsonl written over the version prepare read, the thread going idle in one conditional write without reading its actor first', async () => {
  await converse(stack, 'warm up');
  const { timeline, calls } = await countedRun('count the calls of the end of a run');
  // The finish runs in the same invocation, from the model step's last writes on (see converse()),
  // its log write begun beside them, as the bench places it.
  const finish = calls.filter((c) => c.fn === 'agentStep' && arrival(c) <= timeline.endedAt && phaseOf(c, timeline) === 'finish');
  // log.jsonl written (over the version prepare read: this container kept it); the sandbox item read
  // for the run's sandbox share; the metrics and audit claims (exactly once each) and the audit
  // record; then the lease: one transaction that idles the thread and gives its slots back, without
  // reading the actor item first.
  assert.deepEqual(
    finish.map((c) => `${c.service} ${c.operation}`).sort(),
    ['DynamoDB GetItem', 'DynamoDB PutItem', 'DynamoDB PutItem', 'DynamoDB TransactWriteItems', 'S3 PutObject', 'S3 PutObject'],
    listed(finish),
  );
});
