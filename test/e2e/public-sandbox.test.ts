// The public sandbox network through the whole local cloud: agent-step starts the thread's task with
// a public address (RunTask assignPublicIp, from the stack's environment), and sandbox-step, still in
// the VPC's isolated subnets, reaches it through the security groups the local cloud enforces: the
// same rules as in the other modes, nothing on the task's side opened to anyone else.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestStack, type TestStack } from '../support/local-stack.ts';
import { runScripted, toolTurn, toolUseIdOf } from '../support/scripted-run.ts';

let stack: TestStack;
before(async () => {
  stack = await startTestStack({ sandboxNetwork: 'public' });
});
after(async () => {
  await stack?.stop();
});

test('a bash call runs in a task started with a public address, reached by sandbox-step over the VPC', async () => {
  const bash = toolTurn('bash', { command: 'echo "hello from $(basename $PWD)"' });
  const { ended, results } = await runScripted(stack, { text: 'say hello from the sandbox', turns: [bash, { text: 'Done.' }] });
  assert.equal(ended.status, 'SUCCEEDED');
  const result = results.get(toolUseIdOf(bash))!;
  assert.equal(result.status, 'success', result.text);
  assert.match(result.text, /hello from scratch/);
  const tasks = [...stack.cloud.ecs.tasks.values()];
  assert.equal(tasks.length, 1);
  assert.equal(tasks[0]!.publicIp, true);
  assert.deepEqual(stack.errors, []);
});
