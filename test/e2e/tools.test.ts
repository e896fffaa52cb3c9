// Tools through the whole local cloud: the scripted model asks for tools; agent-step and
// sandbox-step run them against a real command server process (the local ECS stand-in's task),
// with files synced through S3, and the results come back to the model paired with their ids.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { dataKeys } from '../../shared/ids.ts';
import { startTestStack, writeStackFile, type TestStack } from '../support/local-stack.ts';
import { eventually } from '../support/eventually.ts';
import { runScripted, toolTurn } from '../support/scripted-run.ts';
import { readData } from '../support/data-bucket.ts';
import type { ScriptedTurn } from '../../packages/local-cloud/src/bedrock.ts';
import { demoModel } from '../../packages/local-cloud/src/demo-model.ts';
import { hostPidOf, pidAlive } from '../support/sandbox-pids.ts';
import { DETACH_MS } from '../../shared/sandbox/streaming.ts';

let stack: TestStack;
const steps: string[] = [];
before(async () => {
  stack = await startTestStack({ onStep: (step, ms) => void (ms >= 0 && steps.push(step)) });
});
after(async () => {
  await stack?.stop();
});

const use = toolTurn;

/** Posts a mention and waits for the run to end; returns the thread and the tool results the model saw. */
const converse = (text: string, turns: ScriptedTurn[], timeoutMs?: number) => runScripted(stack, { text, turns, timeoutMs });

const s3Text = (key: string) => readData(stack, key);

test('write, bash, read, edit, upload and search_channel each run and answer the model', async () => {
  const turns = [
    use('write', { path: 'hello.sh', content: 'echo "hello from $(basename $PWD)"\n' }),
    use('bash', { command: 'sh hello.sh > out.txt && cat out.txt' }),
    use('read', { path: 'out.txt' }),
    use('edit', { path: 'hello.sh', old_string: 'hello from', new_string: 'greetings from' }),
    use('upload', { path: 'out.txt', comment: 'Here is the output.' }),
    use('search_channel', { query: 'write a script' }),
    { text: 'All done.' },
  ];
  const ids = turns.slice(0, 6).map((t) => t.toolUses![0]!.toolUseId!);
  const { ended, results, posted, threadId } = await converse('write a script, run it and upload the result', turns);
  assert.equal(ended.status, 'SUCCEEDED');
  assert.deepEqual([...results.keys()], ids, 'every tool use got its result, in order');
  assert.match(results.get(ids[0]!)!.text, /wrote \d+ bytes to \/workspace\/data\/slack\/C0LOCAL\/.+\/scratch\/hello\.sh/);
  assert.match(results.get(ids[1]!)!.text, /hello from scratch/);
  assert.match(results.get(ids[1]!)!.text, /exit code 0/);
  assert.match(results.get(ids[2]!)!.text, /^1\thello from scratch$/m);
  assert.match(results.get(ids[3]!)!.text, /replaced 1 occurrence/);
  assert.match(results.get(ids[4]!)!.text, /uploaded out\.txt/);
  assert.match(results.get(ids[5]!)!.text, /write a script, run it/);
  for (const id of ids) assert.equal(results.get(id)!.status, 'success', `${id} succeeded`);
  // The file reached the thread, and the workspace is in S3.
  const inThread = stack.slack.messages.thread(posted.channel, posted.threadTs);
  const uploaded = inThread.find((m) => m.files?.length);
  assert.equal((uploaded?.files?.[0] as { name?: string })?.name, 'out.txt');
  // The Slack adapter uploads the file, then posts the comment beside it.
  assert.ok(inThread.some((m) => m.bot_id && m.text === 'Here is the output.'));
  const scratch = `${dataKeys(threadId).threadDir}/scratch`;
  assert.equal(await s3Text(`${scratch}/hello.sh`), 'echo "greetings from $(basename $PWD)"\n');
  assert.equal(await s3Text(`${scratch}/out.txt`), 'hello from scratch\n');
  // While tools ran, the thread showed what was running.
  const statuses = stack.slack.calls.filter((c) => c.method === 'assistant.threads.setStatus').map((c) => String(c.args.status));
  assert.ok(statuses.includes('Running bash…'), `statuses: ${statuses.join(', ')}`);
  assert.equal(inThread.filter((m) => m.bot_id && !m.files?.length).at(-1)?.text, 'All done.');
});

/** What the thread's assistant status said, in order, each with when the Slack stand-in got it. */
const statusesOf = (threadTs: string) =>
  stack.slack.calls
    .filter((c) => c.method === 'assistant.threads.setStatus' && c.args.thread_ts === threadTs)
    .map((c) => ({ status: String(c.args.status), at: c.at }));

test("a long command's status line shows its last line of output while it runs; the result has the whole output", async () => {
  const turns = [use('bash', { command: 'for i in 1 2 3; do echo line-$i; echo $i >> count.txt; sleep 2; done' }), { text: 'Counted.' }];
  const { ended, results, posted, threadId } = await converse('count slowly', turns, 120_000);
  assert.equal(ended.status, 'SUCCEEDED');
  const result = results.get(turns[0]!.toolUses![0]!.toolUseId!)!;
  assert.equal(result.status, 'success');
  assert.match(result.text, /^line-1\nline-2\nline-3\n+\[exit code 0, /, 'the whole output, once');
  const statuses = statusesOf(posted.threadTs);
  const shown = statuses.filter((s) => /^Running bash… line-[12]$/.test(s.status));
  assert.ok(shown.length > 0, `an intermediate line was shown: ${statuses.map((s) => s.status).join(' | ')}`);
  // Shown while the command ran: before the sandbox step that collected its result returned.
  const history = ended.history;
  const lastSandbox = history.findLastIndex((h) => h.name === 'SandboxTool');
  const collected = history[lastSandbox + 1]!;
  assert.equal(collected.name, 'NextStep');
  assert.ok(shown[0]!.at < collected.enteredAt, 'the line was shown before the command ended');
  assert.ok(history.some((h) => h.name === 'ToolProgress'));
  // What the command wrote across the steps reached S3 when it ended.
  assert.equal(await s3Text(`${dataKeys(threadId).threadDir}/scratch/count.txt`), '1\n2\n3\n');
  // A short command takes no ToolProgress state: it ends within the first wait.
  const short = await converse('say hi', [use('bash', { command: 'echo hi' }), { text: 'Said.' }]);
  assert.equal(short.ended.status, 'SUCCEEDED');
  assert.ok(!short.ended.history.some((h) => h.name === 'ToolProgress'), short.ended.history.map((h) => h.name).join(' '));
});

test('a stop while a long command shows its output ends the run and kills the command', async () => {
  stack.bedrock.script({
    toolUses: [use('bash', { command: 'echo $$ > ticker.pid; i=0; while true; do i=$((i+1)); echo tick-$i; sleep 1; done' }).toolUses![0]!],
  });
  const posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> tick until stopped' });
  const threadId = `slack:${posted.channel}:${posted.threadTs}`;
  await eventually(() => statusesOf(posted.threadTs).some((s) => /^Running bash… tick-\d+$/.test(s.status)), 60_000, 'a tick shown');
  const task = [...stack.cloud.ecs.tasks.values()].find((t) => t.tags.some((x) => x.value === threadId) && t.status === 'RUNNING')!;
  const pidFile = `${task.workspace}/data/slack/${posted.channel}/${encodeURIComponent(posted.threadTs)}/scratch/ticker.pid`;
  const pid = await eventually(
    () => existsSync(pidFile) && hostPidOf(task.pid!, Number(readFileSync(pidFile, 'utf8').trim())),
    10_000,
    'ticker',
  );
  const execution = [...stack.cloud.stepFunctions.executions.values()].find(
    (e) => (e.input as { threadId: string }).threadId === threadId,
  )!;
  const stopAt = Date.now();
  await stack.slack.postUserMessage({ text: 'stop', threadTs: posted.threadTs });
  await eventually(() => stack.cloud.stepFunctions.executions.get(execution.executionArn)?.status === 'ABORTED', 10_000, 'run stopped');
  // A stop while the sandbox step waits on the command cancels it at once; one in the moment between
  // two waits leaves it to the command server, which cancels it once no step came back (DETACH_MS).
  await eventually(() => !pidAlive(pid), DETACH_MS + 15_000, 'ticker killed');
  console.log(`# stop -> streaming command killed in ${Date.now() - stopAt} ms`);
});

test('edit explains not-found and not-unique; errors go back to the model, the run goes on', async () => {
  const turns = [
    use('write', { path: 'notes.txt', content: 'todo\ntodo\n' }),
    use('edit', { path: 'notes.txt', old_string: 'missing', new_string: 'x' }),
    use('edit', { path: 'notes.txt', old_string: 'todo', new_string: 'done' }),
    use('read', { path: 'nope.txt' }),
    { text: 'Understood.' },
  ];
  const ids = turns.slice(0, 4).map((t) => t.toolUses![0]!.toolUseId!);
  const { ended, results } = await converse('edit things', turns);
  assert.equal(ended.status, 'SUCCEEDED');
  assert.equal(results.get(ids[1]!)!.status, 'error');
  assert.match(results.get(ids[1]!)!.text, /old_string not found/);
  assert.match(results.get(ids[2]!)!.text, /occurs 2 times/);
  assert.match(results.get(ids[3]!)!.text, /no such file/);
});

test('a command past its timeout is killed with its children', async () => {
  // The pids are the sandbox's own (a PID namespace of its own), so the next command checks them.
  const turns = [
    use('bash', { command: 'sleep 300 & echo $! > child.pid; sh -c "sleep 300" & echo $! >> child.pid; sleep 300', timeout_seconds: 1 }),
    use('bash', { command: 'for pid in $(cat child.pid); do kill -0 $pid 2>/dev/null && echo "alive $pid"; done; echo checked' }),
    { text: 'It timed out.' },
  ];
  const { results, threadId } = await converse('run something slow', turns);
  const [result, check] = [...results.values()];
  assert.equal(result!.status, 'error');
  assert.match(result!.text, /killed after 1 s timeout/);
  const pids = (await s3Text(`${dataKeys(threadId).threadDir}/scratch/child.pid`))!.trim().split('\n').map(Number);
  assert.equal(pids.length, 2);
  assert.match(check!.text, /checked/);
  assert.doesNotMatch(check!.text, /alive/);
});

test('output over the display limit is truncated, with the full output in a file', async () => {
  const turns = [use('bash', { command: 'seq 1 200000' }), { text: 'Counted.' }];
  const { results, threadId } = await converse('count a lot', turns);
  const result = [...results.values()][0]!;
  assert.match(result.text, /output truncated/);
  assert.ok(result.text.length < 40_000, `the model saw ${result.text.length} chars`);
  assert.match(result.text, /200000/);
  const file = /in \/workspace\/(\S+\.log)/.exec(result.text)![1]!;
  const full = await s3Text(file.replace(/^data\//, ''));
  assert.equal(full?.trim().split('\n').length, 200000);
  assert.ok(file.startsWith(`data/${dataKeys(threadId).threadDir}/scratch/`));
});

test("two threads' sandboxes do not see each other's files", async () => {
  const a = await converse('thread A', [use('write', { path: 'secret.txt', content: 'only for A' }), { text: 'ok' }]);
  const b = await converse('thread B', [
    use('bash', { command: 'pwd; ls -A; cat secret.txt' }),
    use('read', { path: 'secret.txt' }),
    { text: 'ok' },
  ]);
  assert.notEqual(a.threadId, b.threadId);
  const [ls, read] = [...b.results.values()];
  // The paths are a Fargate task's, locally too.
  assert.match(ls!.text, /^\/workspace\/data\/slack\/C0LOCAL\/[^/]+\/scratch$/m);
  assert.doesNotMatch(ls!.text, /only for A/);
  assert.match(ls!.text, /No such file/);
  assert.match(read!.text, /no such file/);
  const tasks = [...stack.cloud.ecs.tasks.values()].filter((t) => t.status === 'RUNNING');
  assert.ok(tasks.length >= 2, 'one task per thread');
  assert.equal(new Set(tasks.map((t) => t.ip)).size, tasks.length);
});

test('the command server refuses requests without the task token', async () => {
  const task = [...stack.cloud.ecs.tasks.values()].find((t) => t.status === 'RUNNING')!;
  const base = `http://${task.ip}:${task.port}`;
  assert.equal((await fetch(`${base}/health`)).status, 401);
  assert.equal((await fetch(`${base}/exec`, { method: 'POST', headers: { authorization: 'Bearer guess' }, body: '{}' })).status, 401);
});

test('a sandbox killed mid-run is replaced and the run continues with its files', async () => {
  const first = use('write', { path: 'kept.txt', content: 'survives the task' });
  // After the first tool result, the task dies; the next tool call must land on a new task.
  let killed = '';
  const turns: ScriptedTurn[] = [first, use('bash', { command: 'cat kept.txt' }), { text: 'Still here.' }];
  const watcher = (async () => {
    await eventually(
      () =>
        stack.bedrock.requests.some(
          (r) =>
            JSON.stringify(r.body.messages).includes(first.toolUses![0]!.toolUseId!) &&
            JSON.stringify(r.body.messages).includes('toolResult'),
        ),
      30_000,
      'first tool done',
    );
    const running = [...stack.cloud.ecs.tasks.values()].filter((t) => t.status === 'RUNNING');
    const newest = running.sort((x, y) => Number(y.ip.split('.').pop()) - Number(x.ip.split('.').pop()))[0]!;
    killed = newest.arn;
    await stack.cloud.ecs.kill(newest.arn);
  })();
  const { results, ended, threadId } = await converse('survive a crash', turns);
  await watcher;
  assert.equal(ended.status, 'SUCCEEDED');
  const cat = [...results.values()][1]!;
  assert.match(cat.text, /survives the task/);
  assert.ok(killed);
  const replacement = [...stack.cloud.ecs.tasks.values()].filter(
    (t) => t.status === 'RUNNING' && t.tags.some((tag) => tag.value === threadId),
  );
  assert.equal(replacement.length, 1);
  assert.notEqual(replacement[0]!.arn, killed);
});

test('the scratch files of a thread are in S3 under its data directory', async () => {
  const { threadId } = await converse('make files', [use('bash', { command: 'mkdir -p a/b && echo x > a/b/c.txt' }), { text: 'ok' }]);
  const out = await stack.cloud.clients.s3.send(
    new ListObjectsV2Command({ Bucket: stack.cloud.names.bucket, Prefix: `${dataKeys(threadId).threadDir}/scratch/` }),
  );
  assert.deepEqual(
    out.Contents?.map((c) => c.Key!.split('/scratch/')[1]),
    ['a/b/c.txt'],
  );
});

test('a memory edit made with the file tools reaches the next run, at the scope written', async () => {
  const first = await converse('remember that deploys are on Tuesdays', [
    use('write', { path: '/workspace/data/slack/C0LOCAL/MEMORY.md', content: '- Deploys happen on Tuesdays.\n' }),
    { text: 'Noted.' },
  ]);
  assert.equal([...first.results.values()][0]!.status, 'success');
  const next = await converse('when do we deploy?', [{ text: 'On Tuesdays.' }]);
  const system = (next.requests[0]!.body.system ?? []).map((b) => b.text ?? '').join('\n');
  assert.match(system, /### Channel Memory\n- Deploys happen on Tuesdays\./);
  assert.doesNotMatch(system, /### Global Memory/);
});

test('read returns at most 2000 lines and 30,000 characters, even when asked for 100,000 lines', async () => {
  const turns = [
    use('bash', { command: 'seq 1 100000 > big.txt' }),
    use('read', { path: 'big.txt', limit: 100_000 }),
    { text: 'Read it.' },
  ];
  const { results } = await converse('read a big file', turns);
  const read = results.get(turns[1]!.toolUses![0]!.toolUseId!)!;
  assert.ok(read.text.length <= 31_000, `${read.text.length} characters returned`);
  assert.match(read.text, /^2000\t2000$/m);
  assert.match(read.text, /98000 more lines \(use offset 2001\) \(one read returns at most 2000 lines/);
});

test("upload posts only the thread's own scratch/ and attachments/ files, not memory, skills or events", async () => {
  const turns = [
    use('write', { path: '/workspace/data/slack/C0LOCAL/MEMORY.md', content: 'the channel secret\n' }),
    use('upload', { path: '/workspace/data/slack/C0LOCAL/MEMORY.md' }),
    use('upload', { path: '../../../../slack/C0LOCAL/MEMORY.md' }),
    { text: 'Refused.' },
  ];
  const { results, posted } = await converse('upload the channel memory', turns);
  for (const turn of turns.slice(1, 3)) {
    const result = results.get(turn.toolUses![0]!.toolUseId!)!;
    assert.equal(result.status, 'error');
    assert.match(result.text, /not in your scratch\/ or attachments\/ folders/);
  }
  assert.ok(!stack.slack.messages.thread(posted.channel, posted.threadTs).some((m) => m.files?.length));
});

test('a command may run at most as long as one sandbox-step invocation leaves it', async () => {
  const turns = [use('bash', { command: 'echo never', timeout_seconds: 3600 }), { text: 'Too long.' }];
  const { results, ended } = await converse('run for an hour', turns);
  assert.equal(ended.status, 'SUCCEEDED');
  const result = results.get(turns[0]!.toolUses![0]!.toolUseId!)!;
  assert.equal(result.status, 'error');
  assert.equal(result.text, 'invalid input for bash: timeout_seconds: Too big: expected number to be <=780');
});

test('the start reports each step as it finishes (what npm start prints, each with its time)', () => {
  const finished = (prefix: string) => steps.findIndex((step) => step.startsWith(prefix));
  for (const prefix of ['the stack synthesized', 'DynamoDB Local', 'SQS and S3', 'the functions deployed', 'API Gateway']) {
    assert.ok(finished(prefix) >= 0, `${prefix}: ${steps.join(' | ')}`);
  }
  // The functions are deployed once the emulators and the synthesized template are there; the API comes last.
  assert.ok(finished('the functions deployed') > Math.max(finished('the stack synthesized'), finished('DynamoDB Local')));
  assert.equal(finished('API Gateway'), steps.length - 1);
});

// Last in this file: from here on the model's unscripted answers are the demo model's.
test('the demo model: `npm run chat` with a fenced `echo hi` shows the output of the command the sandbox ran', async (t) => {
  stack.bedrock.setDefault(demoModel());
  // The stack file npm start would write for this stack; the chat CLI finds the stack through it.
  const stackFile = writeStackFile(stack, t, 'demo');
  const asked = stack.bedrock.requests.length;

  const typed = 'run this: ```sh\necho hi\n```';
  const chat = ['--import', 'tsx', 'packages/local-cloud/src/chat-cli.ts', '--quiet', '1500', typed];
  const { stdout } = await promisify(execFile)(process.execPath, chat, { env: { PATH: process.env.PATH, LOCAL_STACK_FILE: stackFile } });
  assert.match(stdout, /^bot> I ran `echo hi`\. Its output:\n```\nhi\n\n\[exit code 0, [\d.]+ s\]\n```$/m);
  // The output is the sandbox's: the command server's result (with its exit code) went to the model.
  const calls = stack.bedrock.requests.slice(asked);
  const result = calls.flatMap((r) => r.body.messages?.at(-1)?.content ?? []).find((block) => block.toolResult)?.toolResult;
  assert.equal(result?.status, 'success');
  assert.match(JSON.stringify(result?.content), /hi\\n.*exit code 0/);
  const threadTs = /--thread (\S+)/.exec(stdout)![1]!;
  const replies = stack.slack.messages.thread('C0LOCAL', threadTs).filter((m) => m.bot_id);
  assert.ok(
    replies.some((m) => /Its output:\n```\nhi\n\n\[exit code 0/.test(m.text)),
    JSON.stringify(replies.map((m) => m.text)),
  );
});
