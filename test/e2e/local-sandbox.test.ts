// A machine that cannot isolate the local sandbox (here: bubblewrap missing) refuses the sandbox's
// tools with the reason, through the whole local cloud, and the run goes on.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestStack, type TestStack } from '../support/local-stack.ts';
import { runScripted, toolTurn, toolUseIdOf } from '../support/scripted-run.ts';

let stack: TestStack;
before(async () => {
  stack = await startTestStack({ bubblewrap: '/nonexistent/bwrap' });
});
after(async () => {
  await stack?.stop();
});

test('without bubblewrap, a sandbox tool call gets an error saying why and how to go on', async () => {
  const bash = toolTurn('bash', { command: 'cat ~/.aws/credentials' });
  const { ended, results } = await runScripted(stack, { text: 'read my credentials', turns: [bash, { text: 'I could not.' }] });
  assert.equal(ended.status, 'SUCCEEDED');
  const result = results.get(toolUseIdOf(bash))!;
  assert.equal(result.status, 'error');
  assert.match(result.text, /The sandbox could not be started/);
  assert.match(result.text, /cannot isolate commands on this machine: \/nonexistent\/bwrap not found/);
  assert.match(result.text, /LOCAL_SANDBOX=unsafe/);
  assert.equal(stack.cloud.ecs.tasks.size, 0, 'no task was started');
});
