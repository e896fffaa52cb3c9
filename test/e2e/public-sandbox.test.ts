// The public sandbox network through the whole local cloud (and a stdio MCP server, which needs a
// sandbox network other than isolated, running in the thread's sandbox): agent-step starts the thread's task with
// a public address (RunTask assignPublicIp, from the stack's environment), and sandbox-step, still in
// the VPC's isolated subnets, reaches it through the security groups the local cloud enforces: the
// same rules as in the other modes, nothing on the task's side opened to anyone else.
import { test, before, after } from 'node:test';
import { readdirSync } from 'node:fs';
import assert from 'node:assert/strict';
import { startTestStack, type TestStack } from '../support/local-stack.ts';
import { runScripted, toolTurn, toolUseIdOf } from '../support/scripted-run.ts';
import { putData } from '../support/data-bucket.ts';
import { auditRecordOf } from '../support/audit.ts';
import { eventually } from '../support/eventually.ts';
import { stdioServerBundle } from '../support/mcp-stdio-server.ts';

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

test("a stdio MCP server runs in the thread's sandbox: listed once for the run, called as <server>__<tool> by the sandbox step, one process for every call", async () => {
  // The server as an operator might install one: a script in the shared skills folder, which every sandbox mirrors.
  await putData(stack, 'skills/notes-mcp/server.mjs', await stdioServerBundle());
  await putData(stack, 'settings.json', {
    mcpServers: {
      notes: {
        command: 'node',
        args: ['/workspace/data/skills/notes-mcp/server.mjs'],
        env: { NOTES_MODE: 'e2e' },
        channels: ['slack:C0NOTES'],
        tools: { deny: ['cancelled_*'] },
        // Long: a call the stop did not cancel would run on past the test's waits.
        timeoutSeconds: 600,
      },
    },
  });
  const first = toolTurn('notes__count_calls', { label: 'first' });
  const second = toolTurn('notes__count_calls', { label: 'second' });
  const mode = toolTurn('notes__environment', {});
  const { ended, results, requests, threadId } = await runScripted(stack, {
    channel: 'C0NOTES',
    text: 'count twice',
    turns: [first, second, mode, { text: 'Counted.' }],
  });
  assert.equal(ended.status, 'SUCCEEDED');
  const offered = (requests[0]!.body.toolConfig?.tools ?? []).flatMap((t) => (t.toolSpec?.name ? [t.toolSpec.name] : []));
  assert.ok(offered.includes('notes__count_calls') && offered.includes('notes__environment'), offered.join(', '));
  assert.ok(!offered.includes('notes__cancelled_calls'), 'a denied tool is not listed');
  const a = results.get(toolUseIdOf(first))!;
  const b = results.get(toolUseIdOf(second))!;
  assert.equal(a.status, 'success', a.text);
  assert.match(a.text, /^first: call 1 answered by process \d+$/);
  // Another step, another client: the same process, which counted the first call.
  assert.match(b.text, /^second: call 2 answered by process \d+$/);
  assert.equal(/process (\d+)/.exec(a.text)![1], /process (\d+)/.exec(b.text)![1]);
  assert.equal(results.get(toolUseIdOf(mode))!.text, 'mode e2e');
  const states = [...stack.cloud.stepFunctions.executions.values()]
    .filter((e) => (e.input as { threadId: string }).threadId === threadId)
    .flatMap((e) => e.history.map((h) => h.name));
  assert.ok(states.includes('Connect') && states.includes('SandboxTool'));
  assert.ok(!states.includes('ReachTool'), 'a stdio server is not called by the reach step');
  // Audited and counted by server and tool, as an HTTP server's calls are.
  const record = await auditRecordOf(stack, threadId);
  const audited = record.toolCalls.filter((c) => c.name === 'notes__count_calls');
  assert.deepEqual(
    audited.map((c) => [c.server, c.tool, c.outcome]),
    [
      ['notes', 'count_calls', 'ok'],
      ['notes', 'count_calls', 'ok'],
    ],
  );
  assert.ok(audited.every((c) => c.bytes! > 20));
  const counted = stack.cloud.metrics.points.filter((p) => p.name === 'ReachCalls' && p.dimensions.server === 'notes');
  assert.deepEqual(counted.map((p) => p.dimensions.tool).sort(), ['count_calls', 'count_calls', 'environment']);
  assert.deepEqual(stack.errors, []);
});

test('a stop cancels a running stdio MCP call in the sandbox (the server is told) and ends the run', async () => {
  // The settings of the test before: the notes server for C0NOTES.
  const channel = 'C0NOTES';
  const wait = toolTurn('notes__wait_for_cancel', {});
  stack.bedrock.script({ takenBy: (r) => JSON.stringify(r.body.system ?? '').includes(`slack:${channel}:`), ...wait });
  const posted = await stack.slack.postUserMessage({ channel, text: '<@U0LOCALBOT> wait' });
  const threadId = `slack:${posted.channel}:${posted.threadTs}`;
  // The call reached the server in the thread's task: its marker is in the task's workspace.
  const task = await eventually(
    () => [...stack.cloud.ecs.tasks.values()].find((t) => readdirSync(t.workspace).some((f) => f.startsWith('waiting-'))),
    60_000,
    'the call at the server',
  );
  await stack.slack.postUserMessage({ channel, text: 'stop', threadTs: posted.threadTs });
  // The server was told: it answered the cancelled call (and removed its marker).
  await eventually(() => !readdirSync(task.workspace).some((f) => f.startsWith('waiting-')), 30_000, 'the call cancelled in the server');
  const execution = [...stack.cloud.stepFunctions.executions.values()].find(
    (e) => (e.input as { threadId: string }).threadId === threadId,
  )!;
  assert.equal((await stack.cloud.stepFunctions.waitForExecution(execution.executionArn, 30_000)).status, 'ABORTED');
});
