// A sandbox that syncs 1,100 files (one `npm install`), through the whole local cloud, while
// a run of another channel starts in the middle of it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { putData, readData } from '../support/data-bucket.ts';
import { eventually } from '../support/eventually.ts';
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

const botPostsIn = (channel: string) => (stack.slack.messages.channels.get(channel) ?? []).filter((m) => m.bot_id);
const requestsIn = (channel: string) =>
  stack.bedrock.requests.filter((r) => JSON.stringify(r.body.system ?? '').includes(`slack:${channel}:`));

test('a tool call that creates 1,100 files (more than one S3 listing page) syncs them, and the run goes on', async () => {
  const turns = [
    toolTurn('bash', { command: 'mkdir -p deps && cd deps && for i in $(seq 1 1100); do echo "module $i" > "m$i.js"; done; ls | wc -l' }),
    toolTurn('bash', { command: 'ls deps | wc -l' }),
  ];
  const started = Date.now();
  const conversation = runScripted(stack, {
    channel: 'C0FLOOD',
    text: 'please install the dependencies',
    turns: [...turns, { text: 'done' }],
    timeoutMs: 180_000,
  });
  // While the first command's files sync, an event starts a run in another channel (on a shared stack
  // a periodic event file left by another test did this): it must not take this conversation's next turn.
  await eventually(() => requestsIn('C0FLOOD').length > 0, 30_000, 'first model call');
  await putData(stack, 'events/ops-meanwhile.json', { type: 'immediate', adapterId: 'slack', channelId: 'C0ELSEWHERE', text: 'meanwhile' });
  await eventually(() => requestsIn('C0ELSEWHERE').length > 0, 30_000, 'the other channel ran');
  const { ended, results, threadId } = await conversation;
  const seconds = (Date.now() - started) / 1000;
  assert.equal(ended.status, 'SUCCEEDED', JSON.stringify(ended));
  const [create, count] = turns.map((t) => results.get(toolUseIdOf(t))!);
  assert.equal(create!.status, 'success', create!.text);
  assert.match(count!.text, /^1100\n/, count!.text);
  assert.ok(requestsIn('C0ELSEWHERE')[0]!.time < requestsIn('C0FLOOD')[1]!.time, 'the other run came in the middle');
  assert.equal(await readData(stack, `${dataKeys(threadId).threadDir}/scratch/deps/m1100.js`), 'module 1100\n');
  assert.ok(!botPostsIn('C0FLOOD').some((m) => /rejected|went wrong/.test(m.text)));
  console.log(`# 1,100 files synced through the local cloud in ${seconds.toFixed(1)} s`);
});
