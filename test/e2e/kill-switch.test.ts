// The kill switch through the whole local cloud: the ops commands find the stack from its outputs
// with the standard AWS chain (as against a deployed stack), list and stop held runs, pause and
// resume the deployment; admins do the same from the chat, anyone else is refused.
import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { gate } from '../../packages/local-cloud/src/bedrock.ts';
import { operatorEnvOf } from '../../packages/local-cloud/src/operator-env.ts';
import { createLogger } from '../../shared/observability/log.ts';
import { listRuns } from '../../shared/policy/kill-switch.ts';
import { pauseState } from '../../shared/policy/pause.ts';
import { killSwitch } from '../../scripts/ops/kill-switch.ts';
import { openStack, type OpsStack } from '../../scripts/ops/stack.ts';
import { putData, readData } from '../support/data-bucket.ts';
import { eventually } from '../support/eventually.ts';
import { threadOf, threadProbes } from '../support/threads.ts';
import { startTestStack, writeStackFile, type TestStack } from '../support/local-stack.ts';
import { runScripted, toolTurn } from '../support/scripted-run.ts';

let stack: TestStack;
let ops: OpsStack;
let operatorEnv: Record<string, string>;
before(async () => {
  stack = await startTestStack();
  stack.bedrock.setDefault(() => ({ text: 'ok' }));
  // What npm start writes for the ops CLI: the operator's view of the stack through the standard chain.
  const operator = operatorEnvOf(stack.cloud);
  operatorEnv = operator.env;
  Object.assign(process.env, operatorEnv);
  ops = await openStack(operator.stackName, {}, createLogger({ level: 'silent' }));
});
after(async () => {
  ops?.destroy();
  await stack?.stop();
});

const ADMIN = 'U0OPSADMIN';
beforeEach(() => putData(stack, 'settings.json', { sandbox: { startEarly: false }, access: { admins: [`slack:${ADMIN}`] } }));

const { runsOf, actor, idle, modelSaw } = threadProbes(() => stack);
const botSaid = (posted: { channel: string; threadTs: string }, text: RegExp) =>
  stack.slack.messages.thread(posted.channel, posted.threadTs).filter((m) => m.bot_id && text.test(m.text));
const ephemeralTo = (user: string, posted: { threadTs: string }) =>
  stack.slack.ephemeral.filter((m) => m.visibleTo === user && m.thread_ts === posted.threadTs);
const mention = (text: string, user: string, threadTs?: string) =>
  stack.slack.postUserMessage({ text: `<@U0LOCALBOT> ${text}`, user, ...(threadTs ? { threadTs } : {}) });

/** A run held at the model: after one priced model step (a tool call) when `priced`. */
async function heldRun(label: string, user = 'U0RUNNER', priced = false) {
  const hold = gate();
  const mine = (r: { body: { messages?: unknown } }) => JSON.stringify(r.body.messages).includes(label);
  stack.bedrock.script(
    ...(priced
      ? [{ ...toolTurn('search_channel', { query: label }), usage: { inputTokens: 2000, outputTokens: 400 }, takenBy: mine }]
      : []),
    { text: `${label} held`, hold: hold.promise, takenBy: mine },
  );
  const posted = await mention(label, user);
  await eventually(() => modelSaw(label) >= (priced ? 2 : 1), 30_000, `${label} held at the model`);
  return { posted, threadId: threadOf(posted), hold };
}

async function stoppedAndTold(run: Awaited<ReturnType<typeof heldRun>>, notice: RegExp) {
  await eventually(() => runsOf(run.threadId)[0]?.status === 'ABORTED', 15_000, `${run.threadId} aborted`);
  run.hold.release();
  await idle(run.threadId);
  await eventually(() => botSaid(run.posted, notice).length === 1, 15_000, `${run.threadId} told`);
}

test('ops runs lists a held run (thread, requester, steps, cost so far); ops stop THREAD stops it and the thread is told an operator did', async () => {
  const run = await heldRun('ks-listed', 'U0RUNNER', true);
  const [listed] = (await listRuns({ actor: ops.control.actor, store: ops.store })).filter((r) => r.threadId === run.threadId);
  assert.equal(listed?.requester, 'u0runner');
  assert.equal(listed?.steps, 1, 'the tool-call step is done, the second model step is held');
  assert.ok((listed?.costUsd ?? 0) > 0, 'the priced step has a cost');
  const table = await killSwitch(ops, 'runs', { threads: [], all: false });
  const row = table.split('\n').find((line) => line.startsWith(run.threadId));
  assert.match(table, /^THREAD\s+REQUESTER\s+STARTED\s+STEPS\s+COST\s+QUEUED/);
  assert.match(row ?? '', /u0runner\s+\S+Z \(\d+ s ago\)\s+1\s+\$0\.\d{4}\s+0$/);

  assert.equal(await killSwitch(ops, 'stop', { threads: [run.threadId], all: false }), `Stopped 1 run: ${run.threadId}.`);
  await stoppedAndTold(run, /^Stopped by an operator\.$/);
  assert.equal(
    await killSwitch(ops, 'stop', { threads: [run.threadId], all: false }),
    `Stopped 0 runs.\nNothing is running in ${run.threadId}.`,
  );
  assert.doesNotMatch(await killSwitch(ops, 'runs', { threads: [], all: false }), new RegExp(run.threadId));
});

test('ops stop --all stops every running run, and each thread is told', async () => {
  const runs = [await heldRun('ks-all-one'), await heldRun('ks-all-two', 'U0OTHER')];
  assert.match(await killSwitch(ops, 'stop', { threads: [], all: true }), /^Stopped 2 runs: /);
  for (const run of runs) await stoppedAndTold(run, /^Stopped by an operator\.$/);
  assert.equal(await killSwitch(ops, 'runs', { threads: [], all: false }), 'No runs are running.');
  await assert.rejects(killSwitch(ops, 'stop', { threads: ['x'], all: true }), /thread ids, or --all/);
});

test('pause: three prompts in two threads each get a paused reply and none reaches the model; resume runs all three, in order', async () => {
  assert.match(await killSwitch(ops, 'pause', { threads: [], all: false }), /^Paused /);
  const a = await mention('ks-paused-a1', 'U0PAUSED');
  await eventually(() => botSaid(a, /Paused by an operator/).length === 1, 15_000, 'first paused reply');
  await stack.slack.postUserMessage({ text: 'ks-paused-a2', user: 'U0PAUSED', threadTs: a.threadTs });
  const b = await mention('ks-paused-b1', 'U0PAUSED');
  await eventually(
    () => botSaid(a, /Paused by an operator/).length === 2 && botSaid(b, /Paused by an operator/).length === 1,
    15_000,
    'paused replies',
  );
  assert.equal(botSaid(a, /^Paused by an operator: your message will run when resumed\.$/).length, 2);
  assert.match(await killSwitch(ops, 'runs', { threads: [], all: false }), /Paused by an operator since/);
  for (const text of ['ks-paused-a1', 'ks-paused-a2', 'ks-paused-b1']) assert.equal(modelSaw(text), 0, `${text} never reached the model`);
  assert.equal(runsOf(threadOf(a)).length + runsOf(threadOf(b)).length, 0, 'no run started');
  assert.equal((await actor(threadOf(a)))?.queue?.length, 2, 'both prompts wait in their thread');

  const resumed = await killSwitch(ops, 'resume', { threads: [], all: false });
  assert.match(resumed, new RegExp(`started the waiting prompts of .*${threadOf(a)}`));
  assert.equal((await pauseState(ops.control.actor)).paused, false);
  const done = (threadId: string, n: number) => runsOf(threadId).length === n && runsOf(threadId).every((e) => e.status === 'SUCCEEDED');
  await eventually(() => done(threadOf(a), 2) && done(threadOf(b), 1), 60_000, 'all three ran');
  await idle(threadOf(a));
  const order = runsOf(threadOf(a)).map((e) => (e.input as { prompt: { text: string } }).prompt.text);
  assert.deepEqual(order, ['@bot ks-paused-a1', 'ks-paused-a2']);
  assert.equal(modelSaw('ks-paused-b1') > 0, true);
});

test("an event file's prompt while paused waits like a person's, and runs on resume", async () => {
  const posted = await mention('ks-event-thread', 'U0EVENTS');
  const threadId = threadOf(posted);
  await eventually(() => runsOf(threadId).length === 1, 15_000, 'first run');
  await idle(threadId);
  await killSwitch(ops, 'pause', { threads: [], all: false });
  await putData(stack, 'events/ks-paused.json', { type: 'immediate', threadId, text: 'ks-event-while-paused' });
  await stack.cloud.s3Notifications.poll();
  await eventually(() => botSaid(posted, /Paused by an operator/).length === 1, 15_000, 'paused reply');
  assert.equal(modelSaw('ks-event-while-paused'), 0);
  assert.equal(runsOf(threadId).length, 1);
  await killSwitch(ops, 'resume', { threads: [], all: false });
  await eventually(() => modelSaw('ks-event-while-paused') > 0, 15_000, 'the event ran');
  await idle(threadId);
});

test('a prompt into a running thread while paused waits too: the running run finishes, the held prompt runs only after resume', async () => {
  const run = await heldRun('ks-running-then-paused');
  await killSwitch(ops, 'pause', { threads: [], all: false });
  await stack.slack.postUserMessage({ text: 'ks-behind-the-pause', user: 'U0RUNNER', threadTs: run.posted.threadTs });
  await eventually(() => botSaid(run.posted, /Paused by an operator/).length === 1, 15_000, 'paused reply');
  run.hold.release();
  await idle(run.threadId);
  assert.equal(runsOf(run.threadId).length, 1, 'the running run finished; the held prompt did not start');
  assert.equal(modelSaw('ks-behind-the-pause'), 0);
  await killSwitch(ops, 'resume', { threads: [], all: false });
  await eventually(() => runsOf(run.threadId).length === 2, 15_000, 'the held prompt started');
  await idle(run.threadId);
  assert.ok(modelSaw('ks-behind-the-pause') > 0);
});

test("admins from the chat: a non-admin's pause and stop all are refused; an admin's runs, pause, stop all and resume work", async () => {
  const stranger = await mention('pause', 'U0NOTADMIN');
  await eventually(() => ephemeralTo('U0NOTADMIN', stranger).length === 1, 15_000, 'refusal');
  assert.match(ephemeralTo('U0NOTADMIN', stranger)[0]!.text, /only admins/);
  await mention('stop all', 'U0NOTADMIN', stranger.threadTs);
  await eventually(() => ephemeralTo('U0NOTADMIN', stranger).length === 2, 15_000, 'second refusal');
  assert.equal((await pauseState(ops.control.actor)).paused, false);
  assert.equal(runsOf(threadOf(stranger)).length, 0, 'commands are never prompts');

  const run = await heldRun('ks-chat-held');
  const asked = await mention('runs', ADMIN);
  await eventually(() => ephemeralTo(ADMIN, asked).length === 1, 15_000, 'runs answer');
  assert.match(ephemeralTo(ADMIN, asked)[0]!.text, new RegExp(`${run.threadId}\\s+u0runner`));
  await mention('pause', ADMIN, asked.threadTs);
  await eventually(() => ephemeralTo(ADMIN, asked).length === 2, 15_000, 'pause answer');
  assert.match(ephemeralTo(ADMIN, asked)[1]!.text, /^Paused/);
  assert.deepEqual({ ...(await pauseState(ops.control.actor)), at: undefined }, { paused: true, by: `slack:${ADMIN}`, at: undefined });
  await mention('stop all', ADMIN, asked.threadTs);
  await eventually(() => ephemeralTo(ADMIN, asked).length === 3, 15_000, 'stop all answer');
  assert.equal(ephemeralTo(ADMIN, asked)[2]!.text, 'Stopped 1 run.');
  await stoppedAndTold(run, new RegExp(`^Stopped by an admin, slack:${ADMIN}\\.$`));

  const waiting = await mention('ks-chat-waiting', 'U0RUNNER');
  await eventually(() => botSaid(waiting, /Paused by an operator/).length === 1, 15_000, 'paused reply');
  await mention('resume', ADMIN, asked.threadTs);
  await eventually(() => ephemeralTo(ADMIN, asked).length === 4, 15_000, 'resume answer');
  assert.match(
    ephemeralTo(ADMIN, asked)[3]!.text,
    /^Resumed: new runs start again, and the prompts that waited in 1 thread are starting\.$/,
  );
  await eventually(() => modelSaw('ks-chat-waiting') > 0, 15_000, 'the waiting prompt ran');
  await idle(threadOf(waiting));
});

test('the ops CLI process finds the stack by name with the standard AWS chain and lists its runs', async (t) => {
  const cli = ['--import', 'tsx', 'scripts/ops/main.ts', 'runs', '--stack', ops.stackName];
  const { stdout } = await promisify(execFile)(process.execPath, cli, { env: { PATH: process.env.PATH, ...operatorEnv } });
  assert.equal(stdout.trim(), 'No runs are running.');
  // Without --stack: the local stack, found through the stack file npm start writes, and nothing else.
  const local = await promisify(execFile)(process.execPath, cli.slice(0, -2), {
    env: { PATH: process.env.PATH, LOCAL_STACK_FILE: writeStackFile(stack, t) },
  });
  assert.equal(local.stdout.trim(), 'No runs are running.');
  const wrong = await promisify(execFile)(process.execPath, [...cli.slice(0, -1), 'no-such-stack'], {
    env: { PATH: process.env.PATH, ...operatorEnv },
  }).catch((error: { stderr: string; code: number }) => error);
  assert.equal((wrong as { code: number }).code, 2);
  assert.match((wrong as { stderr: string }).stderr, /Cannot read stack no-such-stack/);
});

// Names reach operators: the ops CLI prints them in a terminal, admins read them in a chat code block.
const CLEAR_AND_FORGE = '\u001b[2J\u001b[H\u001b[32mAll runs stopped.\u001b[0m\r\n';
// In a file name the forged line starts with a cursor move instead (ESC[1E): the local IAM's `*`
// does not match a line break in an S3 key, though AWS's does.
const CLEAR_AND_FORGE_IN_NAME = '\u001b[2J\u001b[H\u001b[32mAll runs stopped.\u001b[0m\u001b[1E';
const CLOSE_AND_PHISH = '```\n<!channel> <https://phish.example/login|Admins: sign in again>';
const CONTROL_CHARACTERS = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

test('event file names other than letters, digits, ".", "_" and "-" are refused with an error file: nothing runs under them', async () => {
  const agentName = '\u001b[2J\u001b[Hagent-forged.json';
  await runScripted(stack, {
    channel: 'C0NAMES',
    text: 'ks-names schedule something',
    // Relative to the scratch directory (data/slack/C0NAMES/{thread}/scratch), as in the other tests.
    turns: [
      toolTurn('bash', {
        command: `D=../../../../events/slack/C0NAMES; mkdir -p $D; printf '{"type":"immediate","text":"ks-names agent"}' > "$D/$(printf '\\033[2J\\033[H')agent-forged.json"`,
      }),
      { text: 'done' },
    ],
  });
  const operatorNames = [`${CLEAR_AND_FORGE_IN_NAME}ops.json`, 'x```<!channel>.json'];
  for (const name of operatorNames) {
    await putData(stack, `events/slack/C0NAMES/${name}`, { type: 'immediate', text: `ks-names ${operatorNames.indexOf(name)}` });
  }
  await stack.cloud.s3Notifications.poll();
  for (const name of [agentName, ...operatorNames]) {
    const error = await eventually(
      () => readData(stack, `events/slack/C0NAMES/${name.replace(/\.json$/, '.error.json')}`),
      15_000,
      `error file of ${JSON.stringify(name)}`,
    );
    assert.match(JSON.parse(error).error, /may use only letters, digits, "\.", "_" and "-"/);
  }
  const started = [...stack.cloud.stepFunctions.executions.values()].filter((e) =>
    (e.input as { prompt: { author: { userName: string } } }).prompt.author.userName.startsWith('event events/slack/C0NAMES/'),
  );
  assert.deepEqual(started, [], 'no run started from them');
  assert.deepEqual(
    (stack.slack.messages.channels.get('C0NAMES') ?? []).filter((m) => m.bot_id && !m.thread_ts).map((m) => m.text),
    [],
    'no thread was started',
  );
});

test("ops runs and the admins' chat runs show control characters and markup inert: no cleared terminal, forged line, closed code block, mention or link", async () => {
  // A person's name as their chat platform gives it is theirs to choose.
  stack.slack.users.set('U0EVILNAME', { id: 'U0EVILNAME', name: `${CLEAR_AND_FORGE}${CLOSE_AND_PHISH}`, real_name: 'x', is_bot: false });
  const run = await heldRun('ks-evil-name', 'U0EVILNAME');
  try {
    const table = await killSwitch(ops, 'runs', { threads: [], all: false });
    assert.doesNotMatch(table, CONTROL_CHARACTERS, 'no control character reaches the terminal');
    const rows = table.split('\n');
    assert.equal(rows.length, 2, `one header and one row: ${JSON.stringify(table)}`);
    assert.ok(rows[1]!.startsWith(run.threadId) && rows[1]!.includes('\\x1b[2J'), rows[1]);

    const asked = await mention('runs', ADMIN);
    const answer = (await eventually(() => ephemeralTo(ADMIN, asked)[0], 15_000, 'runs answer')).text;
    assert.equal(answer.match(/```/g)?.length, 2, `one code block, closed once: ${answer}`);
    assert.ok(answer.startsWith('```') && answer.endsWith('```'), answer);
    assert.doesNotMatch(answer, /<!channel>|<https?:|<@/, 'no mention or link survives');
    assert.doesNotMatch(answer, CONTROL_CHARACTERS);
    assert.match(answer, /&lt;!channel&gt;/);
  } finally {
    run.hold.release();
    await idle(run.threadId);
  }
});

test('while paused, an event file aimed at a channel starts no thread there: it is refused with an error file', async () => {
  await killSwitch(ops, 'pause', { threads: [], all: false });
  try {
    await putData(stack, 'events/ks-paused-channel.json', {
      type: 'immediate',
      adapterId: 'slack',
      channelId: 'C0PAUSEDCH',
      text: 'ks-paused-channel',
    });
    await stack.cloud.s3Notifications.poll();
    const error = await eventually(() => readData(stack, 'events/ks-paused-channel.error.json'), 15_000, 'error file');
    assert.match(JSON.parse(error).error, /paused/);
    assert.deepEqual(stack.slack.messages.channels.get('C0PAUSEDCH') ?? [], [], 'nothing was posted in the channel');
  } finally {
    await killSwitch(ops, 'resume', { threads: [], all: false });
  }
});
