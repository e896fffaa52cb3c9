// Thread actors under pressure, through the whole local cloud: queue depth and busy replies, steer
// between tools, stop that kills the running command, crashes in every step, duplicate deliveries.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '../../shared/aws/dynamodb.ts';
import { gate } from '../../packages/local-cloud/src/bedrock.ts';
import { startTestStack, type TestStack } from '../support/local-stack.ts';
import { eventually } from '../support/eventually.ts';
import { hostPidOf, pidAlive } from '../support/sandbox-pids.ts';
import { STEER_SKIPPED } from '../../shared/run/steer.ts';
import { buttonPress, postForm as postFormTo, recordedSlashCommand } from '../support/slack-forms.ts';

let stack: TestStack;
before(async () => {
  stack = await startTestStack();
});
after(async () => {
  await stack?.stop();
});

let n = 0;
const use = (name: string, input: Record<string, unknown>) => ({ toolUseId: `tu-${name}-${++n}`, name, input });

const runsOf = (threadId: string) =>
  [...stack.cloud.stepFunctions.executions.values()]
    .filter((e) => (e.input as { threadId: string }).threadId === threadId)
    .sort((a, b) => a.startDate.getTime() - b.startDate.getTime());

async function actor(threadId: string) {
  const out = await documentClient(stack.cloud.clients.dynamodb).send(
    new GetCommand({ TableName: stack.cloud.names.table, Key: { pk: `actor#${threadId}`, sk: 'actor' } }),
  );
  return out.Item;
}

const idle = (threadId: string) => eventually(async () => (await actor(threadId))?.status === 'idle', 30_000, `${threadId} idle`);
const bot = (channel: string, ts: string) =>
  stack.slack.messages.thread(channel, ts).filter((m) => m.bot_id && m.text !== '...' && !m.blocks?.length);
const threadOf = (posted: { channel: string; threadTs: string }) => `slack:${posted.channel}:${posted.threadTs}`;
const putSettings = (settings: Record<string, unknown>) =>
  stack.cloud.clients.s3.send(
    new PutObjectCommand({ Bucket: stack.cloud.names.bucket, Key: 'settings.json', Body: JSON.stringify(settings) }),
  );
/** The state each agent-step action runs in. */
const STATE_OF: Record<string, string> = { prepare: 'Prepare', model: 'Model' };
const requestsMentioning = (text: string) => stack.bedrock.requests.filter((r) => JSON.stringify(r.body.messages).includes(text));

test('six prompts into a busy thread: one busy reply, five runs in arrival order', async () => {
  const hold = gate();
  stack.bedrock.script({ text: 'first answer', hold: hold.promise });
  const first = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> queue-start' });
  await eventually(() => requestsMentioning('queue-start').length > 0, 30_000, 'first run at the model');
  for (let i = 1; i <= 6; i++) await stack.slack.postUserMessage({ text: `queued-${i}`, threadTs: first.threadTs });
  const threadId = threadOf(first);
  await eventually(() => stack.slack.ephemeral.some((m) => /busy/.test(m.text) && m.thread_ts === first.threadTs), 15_000, 'busy reply');
  assert.equal((await actor(threadId))?.queue?.length, 5);
  hold.release();
  await eventually(() => runsOf(threadId).length === 6 && runsOf(threadId).every((e) => e.status !== 'RUNNING'), 60_000, 'six runs done');
  await idle(threadId);
  // The fake echoes the last user text: each run answered its own prompt, in order.
  const order = runsOf(threadId).map((e) => (e.input as { prompt: { text: string } }).prompt.text);
  assert.deepEqual(order, ['@bot queue-start', 'queued-1', 'queued-2', 'queued-3', 'queued-4', 'queued-5']);
  assert.equal(stack.slack.ephemeral.filter((m) => m.thread_ts === first.threadTs).length, 1);
  const replies = bot(first.channel, first.threadTs).map((m) => m.text);
  assert.equal(replies.length, 6);
  assert.match(replies[5]!, /queued-5/);
});

test('a steer during a three-tool response skips the rest, with matching results, and the model sees it', async () => {
  const [slow, second, third] = [
    use('bash', { command: 'touch slow-started; sleep 2; echo slow done' }),
    use('bash', { command: 'echo two' }),
    use('bash', { command: 'echo three' }),
  ];
  stack.bedrock.script({ toolUses: [slow, second, third] }, { text: 'Steered answer.' });
  const posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> run three tools' });
  const threadId = threadOf(posted);
  await eventually(
    () =>
      stack.cloud.ecs.tasks.size > 0 &&
      [...stack.cloud.ecs.tasks.values()].some((t) => t.tags.some((x) => x.value === threadId) && t.status === 'RUNNING'),
    20_000,
    'sandbox running',
  );
  // The steer must arrive while the first command runs (not before its step checks the flags).
  const started = () =>
    [...stack.cloud.ecs.tasks.values()].some((t) =>
      readdirSync(t.workspace, { recursive: true }).some((f) => String(f).endsWith('slow-started')),
    );
  await eventually(started, 30_000, 'first tool running');
  await stack.slack.postUserMessage({ text: 'steer use python instead', threadTs: posted.threadTs });
  await eventually(() => runsOf(threadId)[0]?.status === 'SUCCEEDED', 30_000, 'run done');
  const last = stack.bedrock.requests.at(-1)!;
  const content = (last.body.messages ?? []).flatMap((m) => m.content ?? []);
  const results = content.filter((b) => b.toolResult).map((b) => b.toolResult!);
  assert.deepEqual(
    results.map((r) => r.toolUseId),
    [slow.toolUseId, second.toolUseId, third.toolUseId],
  );
  assert.match(JSON.stringify(results[0]!.content), /slow done/);
  for (const skipped of results.slice(1)) assert.equal(skipped.content?.[0]?.text, STEER_SKIPPED);
  assert.ok(
    content.some((b) => /^\(steering while you worked\) [^:\s][^:]*: use python instead$/.test(b.text ?? '')),
    `the steer text reached the model under its author's name: ${JSON.stringify(content.filter((b) => b.text))}`,
  );
  assert.doesNotMatch(JSON.stringify(last.body.system), /python/, 'steering never rewrites the system prompt');
  assert.equal(bot(posted.channel, posted.threadTs).at(-1)?.text, 'Steered answer.');
});

test('a steer with nothing running is dropped with a notice', async () => {
  stack.bedrock.script({ text: 'done' });
  const posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> hi' });
  await idle(threadOf(posted));
  const before = stack.bedrock.requests.length;
  await stack.slack.postUserMessage({ text: 'steer something else', threadTs: posted.threadTs });
  await eventually(
    () => stack.slack.ephemeral.some((m) => m.thread_ts === posted.threadTs && /nothing to steer/.test(m.text)),
    10_000,
    'notice',
  );
  assert.equal(stack.bedrock.requests.length, before);
});

test('stop during a long command kills it, says so, and the queued prompt runs next', async () => {
  const sleeper = use('bash', { command: 'sleep 300 & echo $! > sleeper.pid; sleep 300' });
  stack.bedrock.script({ toolUses: [sleeper] });
  const posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> sleep a while' });
  const threadId = threadOf(posted);
  await eventually(() => runsOf(threadId)[0]?.history.some((h) => h.name === 'SandboxTool'), 30_000, 'command running');
  await new Promise((r) => setTimeout(r, 500));
  stack.bedrock.script({ text: 'Next prompt answered.' });
  await stack.slack.postUserMessage({ text: 'after the stop', threadTs: posted.threadTs });
  await eventually(async () => ((await actor(threadId))?.queue?.length ?? 0) === 1, 10_000, 'queued');
  const task = [...stack.cloud.ecs.tasks.values()].find((t) => t.tags.some((x) => x.value === threadId) && t.status === 'RUNNING')!;
  // The sleeper's pid is the sandbox's (a PID namespace of its own): found on the host while it runs.
  const pidFile = `${task.workspace}/data/slack/${posted.channel}/${encodeURIComponent(posted.threadTs)}/scratch/sleeper.pid`;
  const pid = await eventually(
    () => existsSync(pidFile) && hostPidOf(task.pid!, Number(readFileSync(pidFile, 'utf8').trim())),
    10_000,
    'sleeper',
  );
  const stopAt = Date.now();
  await stack.slack.postUserMessage({ text: 'stop', threadTs: posted.threadTs });
  await eventually(() => runsOf(threadId)[0]?.status === 'ABORTED', 10_000, 'execution aborted');
  // The sleeping processes are gone (the sandbox process stays, ready for the next run).
  await eventually(() => !pidAlive(pid), 5000, 'sleeper killed');
  const killedAfterMs = Date.now() - stopAt;
  assert.ok(bot(posted.channel, posted.threadTs).some((m) => m.text === 'Stopped.'));
  await eventually(
    () => bot(posted.channel, posted.threadTs).some((m) => m.text === 'Next prompt answered.'),
    30_000,
    'queued prompt answered',
  );
  await idle(threadId);
  assert.equal(runsOf(threadId).length, 2);
  console.log(`# stop -> sleeper killed in ${killedAfterMs} ms`);
});

test('stop with nothing running says so and changes nothing', async () => {
  stack.bedrock.script({ text: 'hello' });
  const posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> hello' });
  await idle(threadOf(posted));
  await stack.slack.postUserMessage({ text: 'stop', threadTs: posted.threadTs });
  await eventually(
    () => stack.slack.ephemeral.some((m) => m.thread_ts === posted.threadTs && /Nothing is running/.test(m.text)),
    10_000,
    'notice',
  );
  assert.equal(runsOf(threadOf(posted)).length, 1);
});

/**
 * The model's answers for a run that crashes in `action`. The first model step runs in prepare's
 * invocation, and an answer that ends the run finishes it in the same invocation; a Model state comes
 * after a tool call, so a crash there needs one first (search_channel runs in agent-step, without a sandbox).
 */
function crashTurns(action: string, answer: string) {
  if (action !== 'model') return [{ text: answer }];
  return [{ toolUses: [{ name: 'search_channel', input: { query: 'crash' }, toolUseId: `tu-crash-${Date.now()}` }] }, { text: answer }];
}

for (const action of ['prepare', 'model']) {
  test(`a crash after the ${action} step did its work is retried without repeating it`, async () => {
    stack.cloud.injectFault({ role: 'agentStep', action, when: 'after', errorName: 'Lambda.ServiceException' });
    stack.bedrock.script(...crashTurns(action, `answer despite a ${action} crash`));
    const posted = await stack.slack.postUserMessage({ text: `<@U0LOCALBOT> crash ${action}` });
    const threadId = threadOf(posted);
    await eventually(() => runsOf(threadId)[0]?.status === 'SUCCEEDED', 30_000, 'run succeeded');
    await idle(threadId);
    assert.ok(runsOf(threadId)[0]!.history.some((h) => h.name === STATE_OF[action]));
    assert.deepEqual(
      bot(posted.channel, posted.threadTs).map((m) => m.text),
      [`answer despite a ${action} crash`],
    );
    const steps = crashTurns(action, '').length;
    assert.equal(requestsMentioning(`crash ${action}`).length, steps, 'the model was called once a step');
  });
}

for (const action of ['prepare', 'model']) {
  test(`a crash in ${action} that is not retried ends the run with a message and frees the thread`, async () => {
    stack.cloud.injectFault({ role: 'agentStep', action, when: 'before', errorName: 'Runtime.ExitError' });
    if (action === 'model') stack.bedrock.script(crashTurns(action, '')[0]!);
    const posted = await stack.slack.postUserMessage({ text: `<@U0LOCALBOT> hard crash ${action}` });
    const threadId = threadOf(posted);
    await idle(threadId);
    assert.match(bot(posted.channel, posted.threadTs).at(-1)!.text, /something went wrong/i);
    stack.bedrock.script({ text: 'fine again' });
    await stack.slack.postUserMessage({ text: 'again', threadTs: posted.threadTs });
    await eventually(() => bot(posted.channel, posted.threadTs).some((m) => m.text === 'fine again'), 30_000, 'thread usable');
    await idle(threadId);
    assert.equal(runsOf(threadId).length, 2, 'each prompt ran once');
  });
}

test('a dispatch crash after admitting is redelivered and starts exactly one run', async () => {
  stack.cloud.injectFault({ role: 'dispatch', when: 'after', errorName: 'Error' });
  stack.bedrock.script({ text: 'dispatched once' });
  const posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> dispatch crash' });
  const threadId = threadOf(posted);
  await eventually(() => bot(posted.channel, posted.threadTs).some((m) => m.text === 'dispatched once'), 30_000, 'answered');
  await new Promise((r) => setTimeout(r, 3000)); // past the visibility timeout: the redelivery has happened
  await idle(threadId);
  assert.equal(runsOf(threadId).length, 1);
  assert.equal(bot(posted.channel, posted.threadTs).length, 1);
});

test('a duplicate SQS delivery of one prompt starts one run', async () => {
  stack.bedrock.script({ text: 'only once' });
  const posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> duplicate me' });
  const threadId = threadOf(posted);
  await idle(threadId);
  const [run] = runsOf(threadId);
  // The same prompt again, past the FIFO's dedup (another dedup id), as a redrive or a replay would.
  await stack.cloud.clients.sqs.send(
    new SendMessageCommand({
      QueueUrl: stack.cloud.names.inboxUrl,
      MessageBody: JSON.stringify((run!.input as { prompt: unknown }).prompt),
      MessageGroupId: threadId,
      MessageDeduplicationId: 'replayed',
    }),
  );
  await new Promise((r) => setTimeout(r, 2500));
  assert.equal(runsOf(threadId).length, 1);
});

// 40 threads are enough to have every thread's runs contend with many others (the bench's section 6
// drives 300 new threads for throughput); more only lengthens the suite.
const LOAD_THREADS = 40;

test(`${LOAD_THREADS} threads with 3 prompts each keep every thread in order and never overlap its runs`, async () => {
  // Plain conversations: no sandbox for each thread, and all of them running at once in one channel.
  await stack.cloud.clients.s3.send(
    new PutObjectCommand({
      Bucket: stack.cloud.names.bucket,
      Key: 'settings.json',
      Body: JSON.stringify({ sandbox: { startEarly: false }, limits: { maxConcurrentRunsPerChannel: 1000, maxConcurrentRuns: 1000 } }),
    }),
  );
  stack.bedrock.setDefault((req) => {
    const last = JSON.stringify(req.body.messages?.at(-1) ?? '');
    return { text: `re: ${/load-\d+-\d+/.exec(last)?.[0] ?? '?'}`, delayMs: 1 };
  });
  const threads = await Promise.all(
    Array.from({ length: LOAD_THREADS }, (_, t) => stack.slack.postUserMessage({ text: `<@U0LOCALBOT> load-${t}-0` })),
  );
  await Promise.all(
    threads.map(async (posted, t) => {
      for (let i = 1; i < 3; i++) await stack.slack.postUserMessage({ text: `load-${t}-${i}`, threadTs: posted.threadTs });
    }),
  );
  await eventually(
    () => threads.every((p) => runsOf(threadOf(p)).length === 3 && runsOf(threadOf(p)).every((e) => e.status === 'SUCCEEDED')),
    480_000,
    `all ${LOAD_THREADS * 3} runs`,
  );
  for (const [t, posted] of threads.entries()) {
    const runs = runsOf(threadOf(posted));
    assert.deepEqual(
      runs.map((e) => (e.input as { prompt: { text: string } }).prompt.text.replace('@bot ', '')),
      [0, 1, 2].map((i) => `load-${t}-${i}`),
    );
    const replies = bot(posted.channel, posted.threadTs);
    for (let i = 1; i < runs.length; i++) {
      // The lease passes on as a run finishes, after its reply is complete and its context saved.
      const replied = replies[i - 1]!.local.versions.at(-1)?.at ?? replies[i - 1]!.local.createdAt;
      assert.ok(replied <= runs[i]!.startDate.getTime(), `thread ${t}: run ${i} started before run ${i - 1} finished its work`);
    }
    assert.deepEqual(
      replies.map((m) => m.text),
      [0, 1, 2].map((i) => `re: load-${t}-${i}`),
    );
  }
});

// Slash commands and button clicks arrive form-encoded; shapes from the recorded Slack payloads.
const postForm = (fields: Record<string, string>) => postFormTo(stack, fields);

async function heldRun(label: string) {
  const hold = gate();
  stack.bedrock.script({ text: `${label} held`, hold: hold.promise });
  const posted = await stack.slack.postUserMessage({ text: `<@U0LOCALBOT> ${label}`, user: 'U0SLASHUSER' });
  await eventually(() => requestsMentioning(label).length > 0, 10_000, `${label} at the model`);
  return { posted, threadId: threadOf(posted), hold };
}

test("the /stop slash command stops the caller's most recent thread in the channel", async () => {
  const recorded = recordedSlashCommand();
  const { posted, threadId, hold } = await heldRun('slash-stop-target');
  const response = await postForm({
    ...recorded,
    team_id: 'T0LOCAL',
    channel_id: posted.channel,
    user_id: 'U0SLASHUSER',
    command: '/stop',
    text: '',
  });
  assert.equal(response.status, 200);
  await eventually(() => runsOf(threadId)[0]?.status === 'ABORTED', 10_000, 'aborted by /stop');
  hold.release();
  await idle(threadId);
  assert.ok(stack.slack.ephemeral.some((m) => m.text === 'Stopped.' && m.visibleTo === 'U0SLASHUSER'));
});

test('the Stop button on the running reply stops the run', async () => {
  const sleeper = use('bash', { command: 'sleep 300' });
  stack.bedrock.script({ toolUses: [sleeper] });
  const posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> press the button' });
  const threadId = threadOf(posted);
  const card = await eventually(
    () => stack.slack.messages.thread(posted.channel, posted.threadTs).find((m) => JSON.stringify(m.blocks ?? []).includes('stop-run')),
    30_000,
    'stop card',
  );
  await eventually(() => runsOf(threadId)[0]?.history.some((h) => h.name === 'SandboxTool'), 30_000, 'command running');
  const payload = buttonPress({
    channel: posted.channel,
    threadTs: posted.threadTs,
    cardTs: card.ts,
    user: 'U0LOCALUSER',
    actionId: 'stop-run',
    value: runsOf(threadId)[0]!.name,
  });
  const response = await postForm({ payload: JSON.stringify(payload) });
  assert.equal(response.status, 200);
  await eventually(() => runsOf(threadId)[0]?.status === 'ABORTED', 10_000, 'aborted by the button');
  await idle(threadId);
  assert.ok(bot(posted.channel, posted.threadTs).some((m) => m.text.startsWith('Stopped.')));
  await eventually(
    () => !stack.slack.messages.thread(posted.channel, posted.threadTs).some((m) => m.ts === card.ts),
    10_000,
    'stop card removed',
  );
});

test('collect mode (per channel): messages sent while a run works become one follow-up run, each under its author', async () => {
  await putSettings({ sandbox: { startEarly: false }, channels: { 'slack:C0COLLECT': { queueMode: 'collect' } } });
  try {
    const hold = gate();
    stack.bedrock.script({ text: 'first answer', hold: hold.promise }, { text: 'one answer for all three' });
    const posted = await stack.slack.postUserMessage({ channel: 'C0COLLECT', text: '<@U0LOCALBOT> collect-start' });
    const threadId = threadOf(posted);
    await eventually(() => requestsMentioning('collect-start').length > 0, 30_000, 'first run at the model');
    await stack.slack.postUserMessage({ channel: 'C0COLLECT', user: 'U0ALICE', text: 'collect-a', threadTs: posted.threadTs });
    await stack.slack.postUserMessage({ channel: 'C0COLLECT', user: 'U0BOB', text: 'collect-b', threadTs: posted.threadTs });
    await stack.slack.postUserMessage({ channel: 'C0COLLECT', user: 'U0ALICE', text: 'collect-c', threadTs: posted.threadTs });
    await eventually(async () => (await actor(threadId))?.queue?.length === 3, 15_000, 'three prompts waiting');
    hold.release();
    await eventually(() => runsOf(threadId).length === 2 && runsOf(threadId).every((e) => e.status !== 'RUNNING'), 60_000, 'two runs done');
    await idle(threadId);
    assert.equal(runsOf(threadId).length, 2, 'the three messages ran as one run');
    const second = runsOf(threadId)[1]!.input as { prompt: { text: string }; collected?: { text: string }[] };
    assert.equal(second.prompt.text, 'collect-a');
    assert.deepEqual(
      second.collected?.map((p) => p.text),
      ['collect-b', 'collect-c'],
    );
    // The model read them as one turn, in order, each under its author's name.
    const lastTurn = JSON.stringify(stack.bedrock.requests.at(-1)!.body.messages!.at(-1));
    assert.match(lastTurn, /u0alice: collect-a.*u0bob: collect-b.*u0alice: collect-c/i);
    assert.deepEqual(
      bot(posted.channel, posted.threadTs).map((m) => m.text),
      ['first answer', 'one answer for all three'],
    );
  } finally {
    await putSettings({});
  }
});

test('steer mode (per channel): a message sent while a run works steers it instead of waiting', async () => {
  await putSettings({ sandbox: { startEarly: false }, channels: { 'slack:C0STEERMODE': { queueMode: 'steer' } } });
  try {
    const hold = gate();
    stack.bedrock.script({ text: 'first thoughts', hold: hold.promise }, { text: 'steered answer' });
    const posted = await stack.slack.postUserMessage({ channel: 'C0STEERMODE', text: '<@U0LOCALBOT> steer-start' });
    const threadId = threadOf(posted);
    await eventually(() => requestsMentioning('steer-start').length > 0, 30_000, 'first run at the model');
    await stack.slack.postUserMessage({ channel: 'C0STEERMODE', text: 'steer-mode-change', threadTs: posted.threadTs });
    await eventually(async () => (await actor(threadId))?.steer?.length === 1, 15_000, 'the message waits as a steer');
    assert.equal((await actor(threadId))?.queue?.length ?? 0, 0, 'nothing queued');
    hold.release();
    await eventually(() => runsOf(threadId)[0]?.status === 'SUCCEEDED', 60_000, 'the run ended');
    await idle(threadId);
    assert.equal(runsOf(threadId).length, 1, 'no second run');
    const last = JSON.stringify(stack.bedrock.requests.at(-1)!.body.messages);
    assert.match(last, /steering while you worked\) [^"]*steer-mode-change/);
    assert.ok(bot(posted.channel, posted.threadTs).some((m) => m.text === 'steered answer'));
  } finally {
    await putSettings({});
  }
});

test('interrupt mode (per channel): a new prompt stops the running one and runs next', async () => {
  await stack.cloud.clients.s3.send(
    new PutObjectCommand({
      Bucket: stack.cloud.names.bucket,
      Key: 'settings.json',
      Body: JSON.stringify({ sandbox: { startEarly: false }, channels: { 'slack:C0INTERRUPT': { queueMode: 'interrupt' } } }),
    }),
  );
  const hold = gate();
  // The stopped run left no answer, so the model sees both prompts in one turn: answer the newest.
  stack.bedrock.setDefault((req) => ({
    text: `re: ${JSON.stringify(req.body.messages?.at(-1))
      .match(/interrupt-\w+/g)
      ?.at(-1)}`,
  }));
  stack.bedrock.script({ text: 'never finished', hold: hold.promise, holdAfterDeltas: 0 });
  const posted = await stack.slack.postUserMessage({ channel: 'C0INTERRUPT', text: '<@U0LOCALBOT> interrupt-first' });
  const threadId = threadOf(posted);
  await eventually(() => requestsMentioning('interrupt-first').length > 0, 10_000, 'first run at the model');
  await stack.slack.postUserMessage({ channel: 'C0INTERRUPT', text: 'interrupt-second', threadTs: posted.threadTs });
  await eventually(() => runsOf(threadId)[0]?.status === 'ABORTED', 15_000, 'first run stopped');
  await new Promise((r) => setTimeout(r, 500)); // the stopped run's stream watcher notices meanwhile
  hold.release();
  await eventually(
    () => bot(posted.channel, posted.threadTs).some((m) => m.text === 're: interrupt-second'),
    30_000,
    'second run answered',
  );
  await idle(threadId);
  assert.equal(runsOf(threadId).length, 2);
  assert.ok(!bot(posted.channel, posted.threadTs).some((m) => m.text === 'never finished'));
});
