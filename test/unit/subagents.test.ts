// Subagents' plain parts: a child's run input, its own context, the thread's one status line, what the
// parent's model reads of a child's end, and the event files a child may not save. The whole flow
// (parallel children, stop, budgets, audit) runs through the local cloud in test/e2e/audit.test.ts and
// test/e2e/budgets.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runInputSchema, type RunInput } from '../../shared/contracts.ts';
import { contextIdOf } from '../../shared/context/store.ts';
import { dataKeys } from '../../shared/ids.ts';
import { childResultOf, finishedOutcome } from '../../shared/run/subagents/end.ts';
import { childRunId, childRunInput, childTaskEntry, depthOf, holderRunId } from '../../shared/run/subagents/child-run.ts';
import { statusLine } from '../../shared/run/subagents/progress.ts';
import { childResultText, subagent } from '../../shared/tools/builtin/subagent.ts';
import { eventFileSaveRefusal } from '../../shared/events/run-writes.ts';
import { syncNotes } from '../../shared/sandbox/sync-notes.ts';
import { runTool } from '../../shared/tools/run.ts';

const threadId = 'slack:C0123:1700000000.000100';
const parent: RunInput = {
  runId: 'run-parent',
  threadId,
  agent: 'reviewer',
  prompt: {
    threadId,
    messageId: '1700000000.000100',
    text: 'a long question the child never needs',
    author: { userId: 'U1', userName: 'ana' },
    postedAt: '2026-11-27T10:00:00.000Z',
    thread: { _type: 'chat:Thread', id: threadId, adapterName: 'slack', channelId: 'C0123', isDM: false },
  },
};
const wait = { batch: 'tu_1', deadline: 1_800_000_000_000, maxModelSteps: 12 };

test("a child's run input: its own id per call, the root's lease, one level deeper, the prompt's who and where without its text", () => {
  const child = childRunInput(parent, { toolUseId: 'tu_1', task: 'count the apples' }, wait);
  assert.equal(child.runId, childRunId('run-parent', 'tu_1'));
  assert.notEqual(childRunId('run-parent', 'tu_2'), child.runId);
  assert.ok(runInputSchema.safeParse(child).success, 'a valid execution input');
  assert.equal(child.prompt.text, '');
  assert.equal(child.prompt.author.userId, 'U1', 'budgets and access see the same person');
  assert.equal(child.agent, 'reviewer', 'the parent’s agent unless the call names one');
  assert.deepEqual(child.child, {
    parentRunId: 'run-parent',
    rootRunId: 'run-parent',
    toolUseId: 'tu_1',
    batch: 'tu_1',
    depth: 1,
    task: 'count the apples',
    deadline: wait.deadline,
    maxModelSteps: 12,
  });
  assert.equal(holderRunId(child), 'run-parent');
  const grandchild = childRunInput(child, { toolUseId: 'tu_9', task: 'deeper', agent: 'helper' }, wait);
  assert.equal(grandchild.child!.depth, 2);
  assert.equal(depthOf(grandchild), 2);
  assert.equal(grandchild.child!.rootRunId, 'run-parent', 'the root holds the lease however deep');
  assert.equal(grandchild.child!.parentRunId, child.runId);
  assert.equal(grandchild.agent, 'helper');
  assert.equal(holderRunId(parent), 'run-parent');
});

test("a child's input over its bounds is refused by the schema, naming the limit", () => {
  const big = childRunInput(parent, { toolUseId: 'tu_1', task: 'x'.repeat(17 * 1024) }, wait);
  const parsed = runInputSchema.safeParse(big);
  assert.equal(parsed.success, false);
  assert.match(JSON.stringify(parsed.error?.issues), /16 KB/);
});

test('a child works on a context of its own, beside the thread’s, starting from its task', () => {
  const child = childRunInput(parent, { toolUseId: 'tu_1', task: 'count', context: 'the crate is red' }, wait);
  assert.equal(contextIdOf(parent), threadId);
  assert.notEqual(contextIdOf(child), threadId);
  const entry = childTaskEntry(child, child.child!, Date.parse('2026-11-27T10:00:01Z'));
  assert.match(entry.content[0]!.text!, /^count\n\n## Context from the agent that asked\nthe crate is red$/);
  assert.equal(entry.meta.runId, child.runId);
  assert.match(dataKeys(threadId).childContext(child.runId), /^slack\/C0123\/.+\/subagents\/sub-[0-9a-f]{40}\.jsonl$/);
});

test('the status line names every child with its progress, bounded', () => {
  const line = statusLine({
    children: [
      { runId: 'a', toolUseId: '1', agent: 'reviewer' },
      { runId: 'b', toolUseId: '2' },
    ],
    progress: { a: 'running bash…' },
  });
  assert.equal(line, 'Subagents: reviewer: running bash… · subagent 2: starting…');
  const long = statusLine({ children: Array.from({ length: 20 }, (_, i) => ({ runId: `r${i}`, toolUseId: `${i}` })), progress: {} });
  assert.ok(long.length <= 240 && long.endsWith('…'));
});

test("what the parent's model reads of a child's end: how it ended, its steps, its answer; an error unless it finished", async () => {
  const call = { toolUseId: 'tu_1', name: 'subagent', input: { task: 'x' } };
  const finished = await runTool(subagent, call, {
    toolUseId: 'tu_1',
    result: { outcome: 'finished', answer: '7 apples', agent: 'counter', steps: 2, tokens: { input: 1, output: 1 } },
  });
  assert.deepEqual(finished, { status: 'success', text: 'The subagent "counter" finished after 2 model calls.\n\n7 apples' });
  const late = await runTool(subagent, call, {
    toolUseId: 'tu_1',
    result: { outcome: 'timed_out', steps: 0, tokens: { input: 0, output: 0 } },
  });
  assert.equal(late.status, 'error');
  assert.equal(late.text, 'The subagent did not finish in time and was stopped after 0 model calls. It gave no answer.');
  assert.match(
    childResultText({ outcome: 'failed', reason: 'Lambda.Unknown', steps: 1, tokens: { input: 0, output: 0 } }),
    /failed after 1 model call \(Lambda\.Unknown\)/,
  );
  const invalid = await runTool(
    subagent,
    { ...call, input: { task: '' } },
    { toolUseId: 'tu_1', result: { outcome: 'finished', steps: 0, tokens: { input: 0, output: 0 } } },
  );
  assert.match(invalid.text, /invalid input for subagent/);
});

test("a child's result comes from its own answers: the last one's text, its steps and usage; long answers are cut", () => {
  const child = childRunInput(parent, { toolUseId: 'tu_1', task: 'count' }, wait);
  const meta = (step: number) => ({ runId: child.runId, step, at: '2026-11-27T10:00:00Z', usage: { inputTokens: 10, outputTokens: 5 } });
  const result = childResultOf(
    child,
    [
      { role: 'user', content: [{ text: 'count' }], meta: { runId: child.runId, at: '' } },
      { role: 'assistant', content: [{ text: 'let me look' }, { toolUse: { toolUseId: 't', name: 'bash', input: {} } }], meta: meta(0) },
      { role: 'assistant', content: [{ text: 'x'.repeat(40 * 1024) }], meta: meta(1) },
    ],
    finishedOutcome({ step: 2, next: 'finish', stopReason: 'end_turn' }),
    'counter',
  );
  assert.equal(result.outcome, 'finished');
  assert.equal(result.steps, 2);
  assert.deepEqual(result.tokens, { input: 20, output: 10 });
  assert.ok(Buffer.byteLength(result.answer!) < 33 * 1024 && result.answer!.endsWith('[answer cut at 32 KB]'));
  assert.equal(finishedOutcome({ step: 1, next: 'finish', stopReason: 'aborted' }), 'stopped');
  assert.equal(finishedOutcome({ step: 1, next: 'finish', stopReason: 'budget' }), 'budget');
});

test('a run that may save no event file (a subagent) is told why, in the file’s error and the tool result', () => {
  assert.match(eventFileSaveRefusal('slack/C0123/events/x.json', 0), /a subagent's run starts no events/);
  const notes = syncNotes(
    { restored: [], unreadable: [], eventFilesRefused: ['slack/C0123/events/x.json'], conflicts: [] } as unknown as Parameters<
      typeof syncNotes
    >[0],
    { maxEventFilesPerRun: 0, sandbox: { startEarly: true, maxSyncedFiles: 5000, maxSyncedMegabytes: 1024 } },
  );
  assert.match(notes.join('\n'), /this run may save none \(a subagent's run starts no events/);
});
