// The shared prompt files (memory, skills, identity) kept by a warm agent-step, through the whole
// local cloud with the deployed kind of max age (long enough that only the workspace version can make
// a run read them again; shared/context/prompt-files.ts): a channel's MEMORY.md or skill another
// thread's sandbox saved is in the very next run's system prompt, and a run when nothing changed
// reads none of them. The S3 calls are read from the local cloud's record of every AWS call.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { RecordedRequest } from '../../packages/local-cloud/src/bedrock.ts';
import { startTestStack, type TestStack } from '../support/local-stack.ts';
import { runScripted, toolTurn } from '../support/scripted-run.ts';

let stack: TestStack;
before(async () => {
  stack = await startTestStack({ env: { PROMPT_FILES_CACHE_SECONDS: '3600' } });
});
after(async () => {
  await stack?.stop();
});

const CHANNEL = 'C0KEPTFILES';
const systemOf = (request: RecordedRequest) => JSON.stringify(request.body.system ?? []);

/** agent-step's S3 calls during a run's Prepare state. */
function prepareS3Calls(executionArn: string, from: number) {
  const history = stack.cloud.stepFunctions.executions.get(executionArn)!.history;
  const at = history.findIndex((h) => h.name === 'Prepare');
  const window = { from: history[at]!.enteredAt, to: history[at + 1]!.enteredAt };
  const role = stack.cloud.functionRoles.agentStep;
  return stack.cloud.awsCalls
    .slice(from)
    .filter((c) => c.caller === role && c.service === 's3' && c.at >= window.from && c.at <= window.to)
    .map((c) => `${c.operation === 'ListBucket' ? 'ListObjectsV2' : c.operation} ${decodeURIComponent(c.path)}`);
}

test("a MEMORY.md and a skill another thread's sandbox saved are in the next run's prompt; an unchanged channel's files are not read again", async () => {
  const first = await runScripted(stack, { channel: CHANNEL, text: 'first thread', turns: [{ text: 'hello' }] });
  assert.equal(first.ended.status, 'SUCCEEDED', JSON.stringify(first.ended));
  assert.match(systemOf(first.requests[0]!), /no memory yet/);

  const writer = await runScripted(stack, {
    channel: CHANNEL,
    text: 'remember this',
    turns: [
      toolTurn('write', { path: `/workspace/data/slack/${CHANNEL}/MEMORY.md`, content: '- Releases ship on Thursdays.\n' }),
      toolTurn('write', {
        path: `/workspace/data/slack/${CHANNEL}/skills/release/SKILL.md`,
        content: '---\nname: release\ndescription: How this channel releases.\n---\nTag, then announce.\n',
      }),
      { text: 'noted' },
    ],
  });
  assert.equal(writer.ended.status, 'SUCCEEDED', JSON.stringify(writer.ended));

  const reader = await runScripted(stack, { channel: CHANNEL, text: 'what do you know', turns: [{ text: 'Thursdays' }] });
  assert.equal(reader.ended.status, 'SUCCEEDED', JSON.stringify(reader.ended));
  const system = systemOf(reader.requests[0]!);
  assert.match(system, /Releases ship on Thursdays/);
  assert.match(system, /### release/);
  assert.match(system, /Tag, then announce/);

  // Nothing changed since: the next run reads none of the shared files (only its own thread's).
  const from = stack.cloud.awsCalls.length;
  const quiet = await runScripted(stack, { channel: CHANNEL, text: 'again', turns: [{ text: 'still Thursdays' }] });
  assert.equal(quiet.ended.status, 'SUCCEEDED', JSON.stringify(quiet.ended));
  assert.match(systemOf(quiet.requests[0]!), /Releases ship on Thursdays/);
  const calls = prepareS3Calls(quiet.ended.executionArn, from);
  assert.deepEqual(
    calls.filter((c) => c.startsWith('ListObjectsV2') || /(MEMORY|IDENTITY|SYSTEM|SKILL)\.md/.test(c)),
    [],
    calls.join('\n'),
  );
});
