// A sandbox that syncs thousands of files (one `npm install`), through the whole local cloud, on a
// stack of its own. Known open finding: run after the other channel-boundary tests on one stack,
// the second command of this test does not see the files the first created; see the closing note.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readData } from '../support/data-bucket.ts';
import { startTestStack, type TestStack } from '../support/local-stack.ts';
import { runScripted, toolTurn, toolUseIdOf } from '../support/scripted-run.ts';
import { dataKeys } from '../../shared/ids.ts';

let stack: TestStack;
before(async () => {
  stack = await startTestStack();
  stack.bedrock.setDefault(() => ({ text: 'ok' }));
});
after(async () => {
  await stack?.stop();
});

const use = toolTurn;
const idOf = toolUseIdOf;
const botPostsIn = (channel: string) => (stack.slack.messages.channels.get(channel) ?? []).filter((m) => m.bot_id);

const read = (key: string) => readData(stack, key);

test('a tool call that creates thousands of files syncs them, and the run goes on', async () => {
  const turns = [
    use('bash', { command: 'mkdir -p deps && cd deps && for i in $(seq 1 3000); do echo "module $i" > "m$i.js"; done; ls | wc -l' }),
    use('bash', { command: 'ls deps | wc -l' }),
  ];
  const started = Date.now();
  const { ended, results, threadId } = await runScripted(stack, {
    channel: 'C0FLOOD',
    text: 'please install the dependencies',
    turns: [...turns, { text: 'done' }],
    timeoutMs: 180_000,
  });
  const seconds = (Date.now() - started) / 1000;
  assert.equal(ended.status, 'SUCCEEDED', JSON.stringify(ended));
  const [create, count] = turns.map((t) => results.get(idOf(t))!);
  assert.equal(create!.status, 'success', create!.text);
  assert.match(count!.text, /3000/);
  assert.equal(await read(`${dataKeys(threadId).threadDir}/scratch/deps/m3000.js`), 'module 3000\n');
  assert.ok(!botPostsIn('C0FLOOD').some((m) => /rejected|went wrong/.test(m.text)));
  console.log(`# 3,000 files synced through the local cloud in ${seconds.toFixed(1)} s`);
});
