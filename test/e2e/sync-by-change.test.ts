// Sandbox sync by change, through the whole local cloud: S3 is listed for a new sandbox and at a
// run's first tool call, and afterwards only when another writer bumped the channel's workspace
// version (shared/sandbox/workspace-version.ts). The S3 calls are read from the local cloud's record
// of every AWS call, by the calling function's role.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { dataKeys } from '../../shared/ids.ts';
import type { RecordedRequest, ScriptedTurn } from '../../packages/local-cloud/src/bedrock.ts';
import { readData } from '../support/data-bucket.ts';
import { eventually } from '../support/eventually.ts';
import { startTestStack, type TestStack } from '../support/local-stack.ts';
import { runScripted, toolTurn, toolUseIdOf } from '../support/scripted-run.ts';

let stack: TestStack;
before(async () => {
  stack = await startTestStack();
});
after(async () => {
  await stack?.stop();
});

/** sandbox-step's S3 calls (the SDK's name of each) from the `from`th recorded call on, with their times. */
function sandboxStepS3Calls(from: number) {
  const role = stack.cloud.functionRoles.sandboxStep;
  return stack.cloud.awsCalls
    .slice(from)
    .filter((c) => c.caller === role && c.service === 's3')
    .map((c) => ({
      at: c.at,
      path: c.path,
      operation: c.operation === 'ListBucket' ? 'ListObjectsV2' : c.operation,
    }));
}

/** Each SandboxTool state of a run: when it was entered and when the next state was. */
function sandboxToolWindows(executionArn: string): { from: number; to: number }[] {
  const history = stack.cloud.stepFunctions.executions.get(executionArn)!.history;
  return history.flatMap((h, i) =>
    h.name === 'SandboxTool' && history[i + 1] ? [{ from: h.enteredAt, to: history[i + 1]!.enteredAt }] : [],
  );
}

/** Turns a model request of the thread whose prompt says `marker` takes (several threads share a channel here). */
const forPrompt =
  (marker: string) =>
  (turn: ScriptedTurn): ScriptedTurn => ({
    ...turn,
    takenBy: (r: RecordedRequest) => JSON.stringify(r.body.messages ?? []).includes(marker),
  });

test('a tool call that changes nothing lists nothing; files a command creates or removes reach or leave S3', async () => {
  const turns = [
    toolTurn('bash', { command: 'echo kept > kept.txt && echo doomed > doomed.txt' }),
    toolTurn('bash', { command: 'true' }),
    toolTurn('bash', { command: 'rm doomed.txt' }),
  ];
  const first = stack.cloud.awsCalls.length;
  const { ended, results, threadId } = await runScripted(stack, {
    channel: 'C0SYNCNONE',
    text: 'sync by change',
    turns: [...turns, { text: 'done' }],
  });
  assert.equal(ended.status, 'SUCCEEDED', JSON.stringify(ended));
  for (const turn of turns) assert.equal(results.get(toolUseIdOf(turn))?.status, 'success', results.get(toolUseIdOf(turn))?.text);

  const calls = sandboxStepS3Calls(first);
  const windows = sandboxToolWindows(ended.executionArn);
  assert.equal(windows.length, 3);
  const within = (w: { from: number; to: number }) => calls.filter((c) => c.at >= w.from && c.at <= w.to);
  // The run's first call lists what the new sandbox mirrors; the others list nothing.
  assert.ok(
    within(windows[0]!).some((c) => c.operation === 'ListObjectsV2'),
    'the first call lists S3',
  );
  const unchanged = within(windows[1]!);
  assert.deepEqual(
    unchanged.filter((c) => c.operation === 'ListObjectsV2'),
    [],
    'a call that changed nothing lists nothing',
  );
  // Nor writes anything: only the run's context is read and saved (and the settings and sync state read).
  assert.deepEqual(
    unchanged.filter((c) => c.operation !== 'GetObject' && !c.path.includes('context.jsonl')),
    [],
    'a call that changed nothing writes nothing but its context',
  );
  assert.equal(within(windows[2]!).filter((c) => c.operation === 'ListObjectsV2').length, 0, 'a removal needs no listing');

  const scratch = `${dataKeys(threadId).threadDir}/scratch`;
  assert.equal(await readData(stack, `${scratch}/kept.txt`), 'kept\n');
  assert.ok(
    calls.some((c) => c.operation === 'PutObject' && c.path.includes(`${encodeURI(scratch)}/doomed.txt`)),
    'the created file was saved',
  );
  assert.ok(
    calls.some((c) => c.operation === 'DeleteObject' && c.path.includes(`${encodeURI(scratch)}/doomed.txt`)),
    'the removed file was deleted',
  );
  assert.equal(await readData(stack, `${scratch}/doomed.txt`), undefined);
});

test("a file another thread's sandbox saves between two of this thread's tool calls is seen at the next call", async () => {
  const channel = 'C0SYNCPEER';
  const memory = `/workspace/data/slack/${channel}/MEMORY.md`;
  let release!: () => void;
  const peerDone = new Promise<void>((resolve) => (release = resolve));
  const mine = [toolTurn('bash', { command: 'true' }), toolTurn('bash', { command: `cat ${memory}` })];
  const thisThread = runScripted(stack, {
    channel,
    text: 'alpha thread',
    turns: [mine[0]!, { ...mine[1]!, hold: peerDone }, { text: 'done' }].map(forPrompt('alpha thread')),
  });
  // This thread's first tool call is done (its result is on its way to the model) before the peer writes.
  await eventually(
    () =>
      stack.bedrock.requests.some(
        (r) =>
          JSON.stringify(r.body.messages ?? []).includes(toolUseIdOf(mine[0]!)) && JSON.stringify(r.body.messages).includes('alpha thread'),
      ),
    120_000,
    'first tool call done',
  );
  const peer = await runScripted(stack, {
    channel,
    text: 'beta thread',
    turns: [toolTurn('write', { path: memory, content: '- Written by the other thread.\n' }), { text: 'noted' }].map(
      forPrompt('beta thread'),
    ),
  });
  assert.equal(peer.ended.status, 'SUCCEEDED', JSON.stringify(peer.ended));
  release();
  const { ended, results } = await thisThread;
  assert.equal(ended.status, 'SUCCEEDED', JSON.stringify(ended));
  const seen = results.get(toolUseIdOf(mine[1]!));
  assert.equal(seen?.status, 'success', seen?.text);
  assert.match(seen!.text, /Written by the other thread/);
});
