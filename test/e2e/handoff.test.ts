// Long runs continue in a fresh execution well before Step Functions' history limit. Here the bound
// is set to 3 steps per execution (HANDOFF_AFTER_STEPS) so a short run exercises the hand-over.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import type { AuditRecord } from '../../shared/observability/audit.ts';
import { readData } from '../support/data-bucket.ts';
import { startTestStack, type TestStack } from '../support/local-stack.ts';
import { eventually } from '../support/eventually.ts';

let stack: TestStack;
before(async () => {
  stack = await startTestStack({ env: { HANDOFF_AFTER_STEPS: '3' } });
});
after(async () => {
  await stack?.stop();
});

const executionsOf = (runId: string) =>
  [...stack.cloud.stepFunctions.executions.values()]
    .filter((e) => e.name === runId || e.name.startsWith(`${runId}-`))
    .sort((a, b) => a.startDate.getTime() - b.startDate.getTime());

test('a run longer than one execution hands over and finishes with every tool result in order', async () => {
  const calls = Array.from({ length: 4 }, (_, i) => ({ toolUseId: `tu-h${i}`, name: 'bash', input: { command: `echo step-${i}` } }));
  stack.bedrock.script(...calls.map((c) => ({ toolUses: [c] })), { text: 'Handed over and done.' });
  const posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> a long job' });
  const threadId = `slack:${posted.channel}:${posted.threadTs}`;
  const first = await eventually(
    () => [...stack.cloud.stepFunctions.executions.values()].find((e) => (e.input as { threadId: string }).threadId === threadId),
    10_000,
    'run started',
  );
  const runId = first.name;
  await eventually(
    () => stack.slack.messages.thread(posted.channel, posted.threadTs).some((m) => m.text === 'Handed over and done.'),
    60_000,
    'final answer',
  );
  await eventually(() => executionsOf(runId).every((e) => e.status !== 'RUNNING'), 10_000, 'executions ended');
  const executions = executionsOf(runId);
  assert.ok(executions.length >= 3, `${executions.length} executions`);
  assert.deepEqual(
    executions.map((e) => e.name),
    executions.map((_, i) => (i === 0 ? runId : `${runId}-${i + 1}`)),
  );
  for (const e of executions.slice(0, -1)) {
    assert.equal(e.status, 'SUCCEEDED');
    assert.ok(
      e.history.some((h) => h.name === 'HandedOff'),
      `${e.name} handed over`,
    );
    assert.ok(e.history.filter((h) => ['Prepare', 'Model', 'Tool', 'SandboxTool'].includes(h.name)).length <= 3);
  }
  // The last execution's answer finished the run (in its Model invocation).
  assert.equal(executions.at(-1)!.status, 'SUCCEEDED');
  assert.equal((executions.at(-1)!.output as { loop: { released: string } }).loop.released, 'idle');
  assert.equal(executions.filter((e) => e.history.some((h) => h.name === 'Prepare')).length, 1, 'prepared once');
  const results = (stack.bedrock.requests.at(-1)!.body.messages ?? []).flatMap((m) => m.content ?? []).filter((b) => b.toolResult);
  assert.deepEqual(
    results.map((b) => b.toolResult!.toolUseId),
    calls.map((c) => c.toolUseId),
  );
  assert.equal(stack.slack.messages.thread(posted.channel, posted.threadTs).filter((m) => m.text === 'Handed over and done.').length, 1);
  // One audit record for the whole run, every execution's steps and tool calls in it.
  const listed = await stack.cloud.clients.s3.send(new ListObjectsV2Command({ Bucket: stack.cloud.names.bucket, Prefix: 'audit/' }));
  const keys = (listed.Contents ?? []).map((o) => o.Key!).filter((key) => key.endsWith(`/${runId}.json`));
  assert.equal(keys.length, 1);
  const record = JSON.parse((await readData(stack, keys[0]!))!) as AuditRecord;
  assert.equal(record.outcome, 'finished');
  assert.equal(record.steps, calls.length + 1);
  assert.deepEqual(
    record.toolCalls.map((c) => [c.name, c.outcome]),
    calls.map(() => ['bash', 'ok']),
  );
});

test('stop reaches a run after it was handed over', async () => {
  stack.bedrock.script(
    { toolUses: [{ toolUseId: 'tu-s0', name: 'bash', input: { command: 'echo warm-up' } }] },
    { toolUses: [{ toolUseId: 'tu-s1', name: 'bash', input: { command: 'sleep 300' } }] },
  );
  const posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> long then stop' });
  const threadId = `slack:${posted.channel}:${posted.threadTs}`;
  const first = await eventually(
    () => [...stack.cloud.stepFunctions.executions.values()].find((e) => (e.input as { threadId: string }).threadId === threadId),
    10_000,
    'run started',
  );
  const handed = await eventually(
    () =>
      executionsOf(first.name).find(
        (e) =>
          e.name !== first.name &&
          e.status === 'RUNNING' &&
          e.history.at(-1)?.name === 'SandboxTool' &&
          JSON.stringify(stack.bedrock.requests.at(-1)?.body.messages).includes('warm-up'),
      ),
    60_000,
    'sleeping in a handed-over execution',
  );
  await new Promise((r) => setTimeout(r, 300));
  await stack.slack.postUserMessage({ text: 'stop', threadTs: posted.threadTs });
  await eventually(
    () => stack.cloud.stepFunctions.executions.get(handed.executionArn)?.status === 'ABORTED',
    10_000,
    'handed-over execution aborted',
  );
});
