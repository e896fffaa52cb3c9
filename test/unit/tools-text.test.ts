import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyEdit, numberedLines, ToolError, truncateForModel } from '../../shared/tools/text.ts';
import { appendToolResult, pendingToolCall, repairToolPairs } from '../../shared/context/tool-calls.ts';
import { resolveToolPath } from '../../shared/tools/paths.ts';
import { toS3Key, workspaceLayout } from '../../shared/sandbox/workspace.ts';
import type { ContextEntry } from '../../shared/context/store.ts';

test('edit replaces a unique string, and explains not-found and not-unique', () => {
  const file = 'alpha\nbeta\nalpha\n';
  assert.equal(applyEdit(file, { path: 'f', old_string: 'beta', new_string: 'gamma' }).content, 'alpha\ngamma\nalpha\n');
  assert.throws(
    () => applyEdit(file, { path: 'f', old_string: 'delta', new_string: 'x' }),
    (e: Error) => e instanceof ToolError && /not found in f/.test(e.message),
  );
  assert.throws(() => applyEdit(file, { path: 'f', old_string: 'alpha', new_string: 'x' }), /occurs 2 times in f/);
  const all = applyEdit(file, { path: 'f', old_string: 'alpha', new_string: 'x', replace_all: true });
  assert.deepEqual(all, { content: 'x\nbeta\nx\n', replaced: 2 });
  assert.throws(() => applyEdit(file, { path: 'f', old_string: '', new_string: 'x' }), /empty/);
});

test('read numbers lines and pages with offset and limit', () => {
  const text = Array.from({ length: 12 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';
  assert.equal(numberedLines(text, 1, 2), '1\tline 1\n2\tline 2\n… 10 more lines (use offset 3)');
  assert.equal(numberedLines(text, 11, 5), '11\tline 11\n12\tline 12');
  assert.equal(numberedLines(''), '(empty file)');
  assert.throws(() => numberedLines(text, 40), /past the end/);
});

test('long output keeps its end for the model', () => {
  const long = Array.from({ length: 1000 }, (_, i) => `row ${i}`).join('\n');
  const view = truncateForModel(long, 100_000, 10);
  assert.equal(view.truncated, true);
  assert.ok(view.text.endsWith('row 999'));
  assert.equal(view.text.split('\n').length, 10);
  assert.deepEqual(truncateForModel('short'), { text: 'short', truncated: false });
});

test('tool paths resolve inside the workspace only; only data-tree paths sync to S3', () => {
  const layout = workspaceLayout('slack:C1:1.5');
  assert.equal(resolveToolPath(layout, 'out/a.txt'), 'data/slack/C1/1.5/scratch/out/a.txt');
  assert.equal(resolveToolPath(layout, '/workspace/data/MEMORY.md'), 'data/MEMORY.md');
  assert.throws(() => resolveToolPath(layout, '../../../../../../etc/passwd'), /outside your workspace/);
  assert.throws(() => resolveToolPath(layout, '/etc/passwd'), /outside your workspace/);
  assert.equal(toS3Key(layout, 'data/slack/C1/MEMORY.md'), 'slack/C1/MEMORY.md');
  assert.equal(toS3Key(layout, 'data/slack/C1/1.5/scratch/x'), 'slack/C1/1.5/scratch/x');
  assert.equal(toS3Key(layout, 'data/slack/C2/MEMORY.md'), undefined, "another channel's memory is not this thread's");
  assert.equal(toS3Key(layout, 'data/slack/C1/9.9/scratch/x'), undefined, "another thread's scratch is not this thread's");
  assert.equal(toS3Key(layout, 'home/.cache/x'), undefined);
});

test('tool results pair with their tool uses, one per step, in order', () => {
  const meta = { runId: 'r', at: '' };
  const context: ContextEntry[] = [
    { role: 'user', content: [{ text: 'hi' }], meta },
    {
      role: 'assistant',
      content: [
        { text: 'ok' },
        { toolUse: { toolUseId: 'a', name: 'bash', input: {} } },
        { toolUse: { toolUseId: 'b', name: 'read', input: { path: 'x' } } },
      ],
      meta,
    },
  ];
  assert.equal(pendingToolCall(context)?.toolUseId, 'a');
  appendToolResult(context, pendingToolCall(context)!, { status: 'success', text: 'done' }, meta);
  assert.equal(pendingToolCall(context)?.toolUseId, 'b');
  appendToolResult(context, pendingToolCall(context)!, { status: 'error', text: 'nope' }, meta);
  assert.equal(pendingToolCall(context), undefined);
  assert.equal(context.length, 3);
  assert.deepEqual(
    context[2]!.content.map((b) => b.toolResult?.toolUseId),
    ['a', 'b'],
  );
});

test('a tool use left without a result gets an error result before the next request', () => {
  const repaired = repairToolPairs([
    { role: 'user', content: [{ text: 'hi' }] },
    { role: 'assistant', content: [{ toolUse: { toolUseId: 'a', name: 'bash', input: {} } }] },
    { role: 'user', content: [{ text: 'next prompt' }] },
  ]);
  assert.equal(repaired.length, 3);
  assert.equal(repaired[2]!.content?.[0]?.toolResult?.toolUseId, 'a');
  assert.equal(repaired[2]!.content?.[0]?.toolResult?.status, 'error');
  const trailing = repairToolPairs([
    { role: 'user', content: [{ text: 'hi' }] },
    { role: 'assistant', content: [{ toolUse: { toolUseId: 'z', name: 'bash', input: {} } }] },
  ]);
  assert.equal(trailing.at(-1)?.content?.[0]?.toolResult?.toolUseId, 'z');
});

test('a read returns at most 2000 lines and 30,000 characters, whatever limit is asked for', async () => {
  const { MAX_READ_CHARS } = await import('../../shared/tools/text.ts');
  const many = Array.from({ length: 100_000 }, (_, i) => `${i + 1}`).join('\n');
  const out = numberedLines(many, 1, 100_000);
  assert.equal(out.split('\n').length, 2001);
  assert.match(
    out.split('\n').at(-1)!,
    /^… 98000 more lines \(use offset 2001\) \(one read returns at most 2000 lines and 30,000 characters\)$/,
  );
  const wide = Array.from({ length: 500 }, () => 'x'.repeat(1000)).join('\n');
  const cut = numberedLines(wide, 1, 500);
  assert.ok(cut.length <= MAX_READ_CHARS + 200, `${cut.length} characters`);
  assert.match(cut, /more lines \(use offset \d+\) \(one read returns at most/);
  assert.throws(() => numberedLines(many, Number('x')), ToolError);
});
