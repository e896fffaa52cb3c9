// A Slack conversation through the whole local cloud: signed webhook -> API Gateway stand-in ->
// webhook Lambda (Chat SDK) -> SQS FIFO -> dispatch -> Step Functions (synthesized ASL) ->
// agent-step Lambda -> Bedrock (protocol fake) -> reply streamed into the Slack stand-in.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { DEFAULT_SETTINGS } from '../../infra/settings.ts';
import { documentClient } from '../../shared/aws/dynamodb.ts';
import { dataKeys } from '../../shared/ids.ts';
import { gate } from '../../packages/local-cloud/src/bedrock.ts';
import { startTestStack, type TestStack } from '../support/local-stack.ts';
import { eventually } from '../support/eventually.ts';

let stack: TestStack;
before(async () => {
  stack = await startTestStack();
});
after(async () => {
  await stack?.stop();
});

// Bedrock's answer to the first call of a third-party model by a role without Marketplace permissions.
const MARKETPLACE_DENIED =
  'Model access is denied due to IAM user or service role is not authorized to perform the required AWS Marketplace actions (aws-marketplace:ViewSubscriptions, aws-marketplace:Subscribe) to enable access to this model. Your AWS Marketplace subscription for this model cannot be completed at this time. If you recently fixed this issue, try again after 2 minutes.';

const LONG_REPLY = Array.from({ length: 40 }, (_, i) => `Line ${i + 1} of a reply long enough to stream in pieces.\n`);

function botReplies(channel: string, threadTs: string) {
  return stack.slack.messages.thread(channel, threadTs).filter((m) => m.bot_id && !m.local.deleted);
}

async function replyDone(channel: string, threadTs: string, count = 1, timeoutMs = 20_000) {
  return stack.slack.waitFor(() => {
    const replies = botReplies(channel, threadTs);
    const open = replies.some((m) => m.local.stream?.state === 'streaming' || m.text === '...');
    return replies.length >= count && !open ? replies : undefined;
  }, timeoutMs);
}

async function actor(threadId: string) {
  const db = documentClient(stack.cloud.clients.dynamodb);
  const out = await db.send(new GetCommand({ TableName: stack.cloud.names.table, Key: { pk: `actor#${threadId}`, sk: 'actor' } }));
  return out.Item;
}

async function settledIdle(threadId: string) {
  return eventually(async () => (await actor(threadId))?.status === 'idle', 10_000, `${threadId} idle`);
}

test('a mention is answered in its thread, streamed while the model streams', async () => {
  stack.bedrock.script({ text: LONG_REPLY, delayMs: 5 });
  const posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> tell me a long story' });
  assert.equal(posted.status, 200);
  const [reply] = await replyDone(posted.channel, posted.threadTs);
  assert.ok(reply);
  assert.equal(reply.text.trim(), LONG_REPLY.join('').trim());
  // Native Slack streaming: the text arrived in several appends while the model was streaming.
  assert.ok((reply.local.stream?.appends.length ?? 0) >= 2, `streamed in ${reply.local.stream?.appends.length} appends`);
  // The model saw the user's words, attributed to the author.
  const request = stack.bedrock.requests.at(-1)!;
  assert.match(JSON.stringify(request.body.messages), /tell me a long story/);
  assert.ok(request.body.system?.length, 'a system prompt was sent');
  const threadId = `slack:${posted.channel}:${posted.threadTs}`;
  await settledIdle(threadId);
  // Context and log are saved under the thread's prefix of the data tree.
  const keys = dataKeys(threadId);
  const read = async (key: string) =>
    await (
      await stack.cloud.clients.s3.send(new GetObjectCommand({ Bucket: stack.cloud.names.bucket, Key: key }))
    ).Body!.transformToString();
  const context = (await read(keys.context))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.deepEqual(
    context.map((e) => e.role),
    ['user', 'assistant'],
  );
  const log = (await read(keys.log))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.deepEqual(
    log.map((e) => e.isBot),
    [false, true],
  );
  assert.equal(log[1].messageId, reply.ts);
});

test('the bot keeps answering in a thread it joined, with the earlier exchange in context', async () => {
  stack.bedrock.script({ text: 'First answer.' }, { text: 'Second answer.' });
  const first = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> remember the word kumquat' });
  await replyDone(first.channel, first.threadTs);
  const threadId = `slack:${first.channel}:${first.threadTs}`;
  await settledIdle(threadId);
  await stack.slack.postUserMessage({ text: 'what was the word?', threadTs: first.threadTs });
  const replies = await replyDone(first.channel, first.threadTs, 2);
  assert.deepEqual(
    replies.map((r) => r.text),
    ['First answer.', 'Second answer.'],
  );
  const messages = stack.bedrock.requests.at(-1)!.body.messages!;
  assert.equal(messages.length, 3);
  assert.match(JSON.stringify(messages[0]), /kumquat/);
  assert.match(JSON.stringify(messages[1]), /First answer/);
});

test('two prompts in one thread are answered in order and never overlap', async () => {
  const hold = gate();
  stack.bedrock.script({ text: 'Answer one.', hold: hold.promise }, { text: 'Answer two.' });
  const first = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> alpha-one' });
  await stack.slack.waitFor(() => stack.bedrock.requests.some((r) => JSON.stringify(r.body.messages).includes('alpha-one')), 10_000);
  await stack.slack.postUserMessage({ text: 'beta-two', threadTs: first.threadTs });
  // While the first run holds the model, the second prompt waits in the actor's queue.
  const threadId = `slack:${first.channel}:${first.threadTs}`;
  await eventually(async () => ((await actor(threadId))?.queue?.length ?? 0) === 1, 10_000, 'second prompt queued');
  const callsWhileHeld = stack.bedrock.requests.length;
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(stack.bedrock.requests.length, callsWhileHeld, 'no model call for the queued prompt while the first runs');
  hold.release();
  const replies = await replyDone(first.channel, first.threadTs, 2);
  assert.deepEqual(
    replies.map((r) => r.text),
    ['Answer one.', 'Answer two.'],
  );
  const runs = [...stack.cloud.stepFunctions.executions.values()].filter((e) => (e.input as { threadId: string }).threadId === threadId);
  assert.equal(runs.length, 2);
  const [a, b] = runs.sort((x, y) => x.startDate.getTime() - y.startDate.getTime());
  await stack.cloud.stepFunctions.waitForExecution(b!.executionArn);
  // The lease passes on as the first run finishes, after its reply is complete and its context saved.
  const firstReplied = replies[0]!.local.versions.at(-1)?.at ?? replies[0]!.local.createdAt;
  assert.ok(firstReplied <= b!.startDate.getTime(), 'the second run started after the first one finished its work');
  assert.equal((a!.output as { loop: { released: string } }).loop.released, 'next', 'the first run handed the thread to the second');
  const firstModelDone = stack.bedrock.requests.findIndex((r) => JSON.stringify(r.body.messages).includes('beta-two'));
  assert.ok(firstModelDone > 0, 'the second prompt reached the model after the first');
});

test('prompts in two threads run in parallel', async () => {
  const hold = gate();
  stack.bedrock.script({ text: 'Slow thread answer.', hold: hold.promise });
  const slow = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> slow-thread' });
  await stack.slack.waitFor(() => stack.bedrock.requests.some((r) => JSON.stringify(r.body.messages).includes('slow-thread')), 10_000);
  stack.bedrock.script({ text: 'Fast thread answer.' });
  const fast = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> fast' });
  const [fastReply] = await replyDone(fast.channel, fast.threadTs);
  assert.equal(fastReply!.text, 'Fast thread answer.');
  assert.equal(
    botReplies(slow.channel, slow.threadTs).filter((m) => m.local.stream?.state === 'stopped').length,
    0,
    'the slow thread is still running',
  );
  hold.release();
  const [slowReply] = await replyDone(slow.channel, slow.threadTs);
  assert.equal(slowReply!.text, 'Slow thread answer.');
});

test('a Bedrock throttle is retried and the answer still arrives', async () => {
  const before = stack.bedrock.requests.length;
  stack.bedrock.script({ error: { type: 'ThrottlingException' } }, { error: { type: 'ThrottlingException' } }, { text: 'Made it.' });
  const posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> are you busy?' });
  const [reply] = await replyDone(posted.channel, posted.threadTs);
  assert.equal(reply!.text, 'Made it.');
  assert.equal(stack.bedrock.requests.length - before, 3);
});

test("Bedrock's first-use Marketplace denial leaves what to do in the thread, and a free lease", async () => {
  stack.bedrock.script({ error: { type: 'AccessDeniedException', message: MARKETPLACE_DENIED } });
  const posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> hello?' });
  const [reply] = await replyDone(posted.channel, posted.threadTs);
  assert.match(reply!.text, /subscribes an AWS account to a third-party model through AWS Marketplace on its first call/);
  assert.match(reply!.text, /`aws-marketplace:Subscribe` and `aws-marketplace:ViewSubscriptions`/);
  assert.match(reply!.text, /npm run doctor/);
  assert.doesNotMatch(reply!.text, /xoxb|secret/i);
  const threadId = `slack:${posted.channel}:${posted.threadTs}`;
  await settledIdle(threadId);
  // The thread stays usable.
  stack.bedrock.script({ text: 'Back again.' });
  await stack.slack.postUserMessage({ text: 'try again', threadTs: posted.threadTs });
  const replies = await replyDone(posted.channel, posted.threadTs, 2);
  assert.equal(replies[1]!.text, 'Back again.');
});

test('a stream that breaks mid-answer keeps the partial text and explains the failure', async () => {
  stack.bedrock.script({ text: 'Partial answer', streamError: { type: 'modelStreamErrorException', message: 'boom' } });
  const posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> break please' });
  const replies = await replyDone(posted.channel, posted.threadTs, 2);
  assert.equal(replies[0]!.text, 'Partial answer');
  assert.match(replies[1]!.text, /something went wrong/i);
  await settledIdle(`slack:${posted.channel}:${posted.threadTs}`);
});

test('memory at each level reaches the system prompt, read fresh for every run', async () => {
  const { PutObjectCommand, DeleteObjectCommand } = await import('@aws-sdk/client-s3');
  const put = (Key: string, Body: string) =>
    stack.cloud.clients.s3.send(new PutObjectCommand({ Bucket: stack.cloud.names.bucket, Key, Body }));
  const systemOf = (i: number) => (stack.bedrock.requests.at(i)!.body.system ?? []).map((b) => b.text ?? '').join('\n');
  stack.bedrock.script({ text: 'one' }, { text: 'two' });
  const empty = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> anything remembered?' });
  await replyDone(empty.channel, empty.threadTs);
  assert.match(systemOf(-1), /## Memory\n\(no memory yet\)/);
  await put('MEMORY.md', 'The team ships on Tuesdays.');
  await put('slack/MEMORY.md', 'Use threads, not DMs.');
  await put(`slack/${empty.channel}/MEMORY.md`, 'This channel is about the billing service.');
  await put(`slack/C0OTHER/MEMORY.md`, 'Another channel: must not appear.');
  const posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> and now?' });
  await replyDone(posted.channel, posted.threadTs);
  const system = systemOf(-1);
  assert.match(system, /### Global Memory\nThe team ships on Tuesdays\./);
  assert.match(system, /### Transport Memory \(slack\)\nUse threads, not DMs\./);
  assert.match(system, /### Channel Memory\nThis channel is about the billing service\./);
  assert.doesNotMatch(system, /Another channel/);
  assert.ok(
    system.indexOf('Global Memory') < system.indexOf('Transport Memory') &&
      system.indexOf('Transport Memory') < system.indexOf('Channel Memory'),
  );
  for (const key of ['MEMORY.md', 'slack/MEMORY.md', `slack/${empty.channel}/MEMORY.md`, 'slack/C0OTHER/MEMORY.md']) {
    await stack.cloud.clients.s3.send(new DeleteObjectCommand({ Bucket: stack.cloud.names.bucket, Key: key }));
  }
});

test('cache points follow the stable system prompt, the tools and the history; usage is recorded per step', async () => {
  stack.bedrock.script({
    text: 'cached answer',
    usage: { inputTokens: 1200, outputTokens: 40, cacheReadInputTokens: 1000, cacheWriteInputTokens: 150 },
  });
  const posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> cache me' });
  await replyDone(posted.channel, posted.threadTs);
  const body = stack.bedrock.requests.at(-1)!.body;
  const system = body.system ?? [];
  assert.equal(system.length, 3);
  assert.ok(system[0]!.text?.includes('## How you work'), 'stable part first');
  assert.deepEqual(system[1], { cachePoint: { type: 'default' } });
  assert.match(system[2]!.text ?? '', /Current time: .*\n.*run: run-/, 'volatile part (time, run id) last');
  assert.deepEqual(body.toolConfig?.tools?.at(-1), { cachePoint: { type: 'default' } });
  assert.deepEqual(body.messages?.at(-1)?.content?.at(-1), { cachePoint: { type: 'default' } });
  const threadId = `slack:${posted.channel}:${posted.threadTs}`;
  await settledIdle(threadId);
  const key = dataKeys(threadId).context;
  const context = (
    await (
      await stack.cloud.clients.s3.send(new GetObjectCommand({ Bucket: stack.cloud.names.bucket, Key: key }))
    ).Body!.transformToString()
  )
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  // Priced with the default model's list price: 1200 × $3 + 40 × $15 + 1000 × $0.30 + 150 × $3.75 per million.
  assert.deepEqual(context.at(-1).meta.usage, {
    inputTokens: 1200,
    outputTokens: 40,
    cacheReadInputTokens: 1000,
    cacheWriteInputTokens: 150,
    costUsd: 0.005063,
  });
});

test('showCost: the run ends with its tokens and cost at the price settings.json gives the model', async () => {
  const settings = { showCost: true, prices: { [DEFAULT_SETTINGS.modelId]: { input: 10, output: 100, cacheRead: 1, cacheWrite: 12.5 } } };
  await stack.cloud.clients.s3.send(
    new PutObjectCommand({ Bucket: stack.cloud.names.bucket, Key: 'settings.json', Body: JSON.stringify(settings) }),
  );
  try {
    stack.bedrock.script({ text: 'priced answer', usage: { inputTokens: 2000, outputTokens: 500, cacheReadInputTokens: 10_000 } });
    const posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> what does this cost' });
    // 2000 × $10 + 500 × $100 + 10,000 × $1 per million = $0.08
    const footer = await eventually(
      () => botReplies(posted.channel, posted.threadTs).find((m) => m.text?.startsWith('Cost of this run')),
      20_000,
      'the cost footer',
    );
    assert.equal(footer.text, 'Cost of this run: $0.080 (2.0k tokens in, 500 out, 10k from cache)');
  } finally {
    await stack.cloud.clients.s3.send(new DeleteObjectCommand({ Bucket: stack.cloud.names.bucket, Key: 'settings.json' }));
  }
});

test('messages posted while the agent was idle are backfilled in order, once, into log and context', async () => {
  stack.bedrock.script({ text: 'Started.' });
  const first = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> start a thread' });
  await replyDone(first.channel, first.threadTs);
  const threadId = `slack:${first.channel}:${first.threadTs}`;
  await settledIdle(threadId);
  // Three messages the bot is not told about (no events delivered), from two people.
  for (const [user, text] of [
    ['U0ALICE', 'idle one'],
    ['U0BOB', 'idle two'],
    ['U0ALICE', 'idle three'],
  ] as const) {
    await stack.slack.postUserMessage({ text, threadTs: first.threadTs, user, events: [] });
  }
  stack.bedrock.script({ text: 'Caught up.' }, { text: 'Still caught up.' });
  await stack.slack.postUserMessage({ text: 'what did I miss?', threadTs: first.threadTs });
  await replyDone(first.channel, first.threadTs, 2);
  const texts = (stack.bedrock.requests.at(-1)!.body.messages ?? []).flatMap((m) =>
    (m.content ?? []).flatMap((b) => (b.text ? [b.text] : [])),
  );
  const order = ['idle one', 'idle two', 'idle three', 'what did I miss?'].map((t) => texts.findIndex((x) => x.includes(t)));
  assert.ok(
    order.every((i, k) => i >= 0 && (k === 0 || i > order[k - 1]!)),
    `in order: ${JSON.stringify(texts)}`,
  );
  await settledIdle(threadId);
  // Another run later adds nothing twice.
  await stack.slack.postUserMessage({ text: 'anything else?', threadTs: first.threadTs });
  await replyDone(first.channel, first.threadTs, 3);
  const again = JSON.stringify(stack.bedrock.requests.at(-1)!.body.messages);
  assert.equal(again.split('idle two').length - 1, 1, 'no duplicate in the context');
  await settledIdle(threadId);
  const log = (
    await (
      await stack.cloud.clients.s3.send(new GetObjectCommand({ Bucket: stack.cloud.names.bucket, Key: dataKeys(threadId).log }))
    ).Body!.transformToString()
  )
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  const ids = log.map((e: { messageId: string }) => e.messageId);
  assert.equal(new Set(ids).size, ids.length, 'no duplicate in the log');
  assert.deepEqual(
    log.filter((e: { isBot: boolean }) => !e.isBot).map((e: { text: string }) => e.text.replace('@bot ', '')),
    ['start a thread', 'idle one', 'idle two', 'idle three', 'what did I miss?', 'anything else?'],
  );
  assert.ok(
    log.some((e: { isBot: boolean; text: string }) => e.isBot && e.text === 'Caught up.'),
    'bot replies are logged',
  );
});

test('skills reach the system prompt by scope and trigger; a malformed one is skipped', async () => {
  const { PutObjectCommand } = await import('@aws-sdk/client-s3');
  const { readFileSync, readdirSync, statSync } = await import('node:fs');
  const { join } = await import('node:path');
  const root = new URL('../fixtures/skills/', import.meta.url).pathname;
  const upload = async (dir: string, prefix: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) await upload(path, `${prefix}${name}/`);
      else
        await stack.cloud.clients.s3.send(
          new PutObjectCommand({ Bucket: stack.cloud.names.bucket, Key: `${prefix}${name}`, Body: readFileSync(path) }),
        );
    }
  };
  await upload(root, 'skills/');
  // A channel-level skill with the name of a global one overrides it for that channel only.
  await stack.cloud.clients.s3.send(
    new PutObjectCommand({
      Bucket: stack.cloud.names.bucket,
      Key: 'slack/C0SKILLS/skills/release-notes/SKILL.md',
      Body: '---\nname: release-notes\ndescription: Channel-specific release notes for the billing team.\n---\nUse the billing template.\n',
    }),
  );
  const systemOf = () => (stack.bedrock.requests.at(-1)!.body.system ?? []).map((b) => b.text ?? '').join('\n');
  stack.bedrock.script({ text: 'a' }, { text: 'b' });
  const plain = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> write the release notes' });
  await replyDone(plain.channel, plain.threadTs);
  let system = systemOf();
  assert.match(system, /### release-notes/);
  assert.doesNotMatch(system, /billing template/);
  assert.doesNotMatch(system, /### sql-review/, 'manual skills wait to be asked for');
  assert.doesNotMatch(system, /deploy-checklist/, 'the malformed skill is skipped');
  const channel = await stack.slack.postUserMessage({ channel: 'C0SKILLS', text: '<@U0LOCALBOT> use skill: sql-review on this query' });
  await replyDone(channel.channel, channel.threadTs);
  system = systemOf();
  assert.match(system, /Use the billing template\./, 'the channel skill overrides the global one');
  assert.match(system, /### sql-review/);
});

/** A small window, so a few long messages pass the threshold; the model summarises with `summary`. */
async function compactSoon(summary: string) {
  await stack.cloud.clients.s3.send(
    new PutObjectCommand({
      Bucket: stack.cloud.names.bucket,
      Key: 'settings.json',
      Body: JSON.stringify({
        sandbox: { startEarly: false },
        compaction: { contextWindowTokens: 9000, reservedOutputTokens: 0, keepRecentTokens: 400 },
      }),
    }),
  );
  stack.bedrock.setDefault((req) =>
    req.operation === 'converse' ? { text: summary } : { text: `answer ${stack.bedrock.requests.length}` },
  );
}

test('a long conversation is compacted: summary first, recent messages verbatim, the full context archived, the run goes on', async () => {
  await compactSoon('SUMMARY: the user shared three long notes about the migration.');
  const filler = (n: number) => `note ${n}: ` + 'the migration plan has many steps and details. '.repeat(200);
  const first = await stack.slack.postUserMessage({ text: `<@U0LOCALBOT> ${filler(1)}` });
  await replyDone(first.channel, first.threadTs);
  for (let i = 2; i <= 4; i++) {
    await stack.slack.postUserMessage({ text: filler(i), threadTs: first.threadTs });
    await replyDone(first.channel, first.threadTs, i);
  }
  await stack.slack.postUserMessage({ text: 'so what is the plan?', threadTs: first.threadTs });
  await replyDone(first.channel, first.threadTs, 5);
  const summaries = stack.bedrock.requests.filter((r) => r.operation === 'converse');
  assert.ok(summaries.length >= 1, 'the model was asked for a summary');
  const last = stack.bedrock.requests.filter((r) => r.operation === 'converse-stream').at(-1)!;
  const texts = (last.body.messages ?? []).flatMap((m) => (m.content ?? []).flatMap((b) => (b.text ? [b.text] : [])));
  assert.match(texts[0]!, /^Previously in this thread \(summary of \d+ earlier messages\):/);
  assert.match(texts[0]!, /SUMMARY: the user shared three long notes/);
  assert.ok(
    texts.some((t) => t.includes('so what is the plan?')),
    'the newest message is verbatim',
  );
  assert.ok(!texts.some((t) => t.includes('note 1:')), 'the oldest note was summarised away');
  const threadId = `slack:${first.channel}:${first.threadTs}`;
  const archive = await stack.cloud.clients.s3.send(
    new ListObjectsV2Command({ Bucket: stack.cloud.names.bucket, Prefix: `${dataKeys(threadId).threadDir}/context-archive/` }),
  );
  assert.ok((archive.Contents?.length ?? 0) >= 1, 'the full pre-compaction context is kept');
  await settledIdle(threadId);
  await stack.cloud.clients.s3.send(new DeleteObjectCommand({ Bucket: stack.cloud.names.bucket, Key: 'settings.json' }));
});

test('memory_search finds a fact from a compacted part of the thread', async () => {
  // The summary leaves the fact out: only the archive still has it.
  await compactSoon('SUMMARY: two long notes about the migration.');
  const filler = 'the migration plan has many steps and details. '.repeat(300);
  const token = `ghp_${'a1B2c3D4e5'.repeat(3)}f6G7h8`;
  const first = await stack.slack.postUserMessage({
    channel: 'C0RECALL',
    text: `<@U0LOCALBOT> note: the release codename is BLUE-HERON-42 and the deploy token is ${token}. ${filler}`,
  });
  await replyDone(first.channel, first.threadTs);
  await stack.slack.postUserMessage({ channel: first.channel, text: `more: ${filler}`, threadTs: first.threadTs });
  await replyDone(first.channel, first.threadTs, 2);
  const threadId = `slack:${first.channel}:${first.threadTs}`;
  const archived = await stack.cloud.clients.s3.send(
    new ListObjectsV2Command({ Bucket: stack.cloud.names.bucket, Prefix: `${dataKeys(threadId).threadDir}/context-archive/` }),
  );
  assert.ok((archived.Contents?.length ?? 0) >= 1, 'the thread was compacted');

  const streamed = (req: { operation: string }) => req.operation === 'converse-stream';
  stack.bedrock.script(
    { takenBy: streamed, toolUses: [{ toolUseId: 'tu-recall', name: 'memory_search', input: { query: 'release codename' } }] },
    { takenBy: streamed, text: 'It is BLUE-HERON-42.' },
  );
  await stack.slack.postUserMessage({ channel: first.channel, text: 'what was the release codename?', threadTs: first.threadTs });
  // The run's first reply is a placeholder until the tool call is done: wait for the answer itself.
  await stack.slack.waitFor(() => botReplies(first.channel, first.threadTs).some((m) => m.text === 'It is BLUE-HERON-42.'), 60_000);
  const asked = stack.bedrock.requests.filter(streamed).at(-1)!;
  const blocks = (asked.body.messages ?? []).flatMap((m) => m.content ?? []);
  assert.ok(!blocks.some((b) => b.text?.includes('BLUE-HERON-42')), 'the fact is no longer in the live context: it was compacted away');
  const result = blocks.find((b) => b.toolResult?.toolUseId === 'tu-recall')?.toolResult;
  const text = (result?.content ?? []).map((c) => c.text ?? '').join('');
  assert.equal(result?.status, 'success', text);
  assert.match(text, /\[thread [^\]\n]*archived context [^\]\n]*\]\n[^\n]*the release codename is BLUE-HERON-42/);
  // The archive keeps what was said verbatim; what the model reads of it has the secrets filtered out.
  assert.ok(!text.includes(token), text);
  assert.match(text, /deploy token is \[redacted GitHub token\]/);
  await settledIdle(threadId);
  await stack.cloud.clients.s3.send(new DeleteObjectCommand({ Bucket: stack.cloud.names.bucket, Key: 'settings.json' }));
});

test('attached files reach the prompt: listed with where they are, or why they could not be fetched', async () => {
  // The Chat SDK downloads attachments only from public HTTPS hosts (an SSRF guard), so from the
  // local Slack stand-in (loopback, plain HTTP) the download is refused: the agent is told which
  // file and why. The download-and-store path itself is covered in test/unit/attachments.test.ts.
  const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
  stack.bedrock.script({ text: 'I could not open them.' });
  const posted = await stack.slack.postUserMessage({
    text: '<@U0LOCALBOT> what are these?',
    files: [
      { name: 'pixel.png', content: png, mimetype: 'image/png' },
      { name: 'data.csv', content: 'a,b\n1,2\n', mimetype: 'text/csv' },
    ],
  });
  await replyDone(posted.channel, posted.threadTs);
  const prompt = stack.bedrock.requests.at(-1)!.body.messages!.at(-1)!;
  const text = prompt.content!.map((b) => b.text ?? '').join('\n');
  assert.match(
    text,
    /Attached files:\n- pixel\.png could not be downloaded: Refusing to fetch an internal attachment URL\n- data\.csv could not be downloaded/,
  );
  await settledIdle(`slack:${posted.channel}:${posted.threadTs}`);
});

test('a context line that cannot be read is quarantined: the thread is told once and goes on answering', async () => {
  stack.bedrock.script({ text: 'Noted: the code word is marmalade.' }, { text: 'It was marmalade.' }, { text: 'Still here.' });
  const first = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> the code word is marmalade' });
  await replyDone(first.channel, first.threadTs);
  const threadId = `slack:${first.channel}:${first.threadTs}`;
  await settledIdle(threadId);
  // A hand edit gone wrong: one line cut short, one that is JSON but not a context entry.
  const keys = dataKeys(threadId);
  const s3 = stack.cloud.clients.s3;
  const bucket = stack.cloud.names.bucket;
  const read = async (key: string) => (await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body!.transformToString();
  const good = await read(keys.context);
  const broken = ['{"role":"user","content":[{"text":"cut sh', '{"role":"narrator","note":"not an entry"}'];
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: keys.context, Body: `${good}${broken.join('\n')}\n` }));

  await stack.slack.postUserMessage({ text: 'what was the code word?', threadTs: first.threadTs });
  await replyDone(first.channel, first.threadTs, 3);
  await settledIdle(threadId);
  const notice = /2 lines of this thread's saved history could not be read/;
  const texts = () => botReplies(first.channel, first.threadTs).map((m) => m.text);
  assert.equal(texts().filter((t) => notice.test(t)).length, 1, texts().join('\n---\n'));
  assert.ok(texts().includes('It was marmalade.'), texts().join('\n---\n'));
  // The model still had the readable history, without the broken lines.
  const messages = JSON.stringify(stack.bedrock.requests.at(-1)!.body.messages);
  assert.match(messages, /marmalade/);
  assert.doesNotMatch(messages, /narrator|cut sh/);
  // The broken lines are kept verbatim, by the run that found them; the context no longer holds them.
  const quarantineDir = `${keys.threadDir}/context-quarantine/`;
  const listed = await stack.cloud.clients.s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: quarantineDir }));
  assert.equal(listed.Contents?.length, 1, 'one quarantine file');
  assert.equal(await read(listed.Contents![0]!.Key!), `${broken.join('\n')}\n`);
  assert.doesNotMatch(await read(keys.context), /narrator|cut sh/);

  // The next run reads a clean context: no second notice.
  await stack.slack.postUserMessage({ text: 'are you still there?', threadTs: first.threadTs });
  await replyDone(first.channel, first.threadTs, 4);
  assert.equal(texts().filter((t) => notice.test(t)).length, 1);
  assert.ok(texts().includes('Still here.'));
});

test("agents: a channel's default agent answers with its instructions and tools; /agent switches a thread for good; an invalid AGENT.md gets an error file", async () => {
  const s3 = stack.cloud.clients.s3;
  const bucket = stack.cloud.names.bucket;
  const put = (key: string, body: string) => s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
  await put(
    'agents/reviewer/AGENT.md',
    '---\nname: reviewer\ndescription: Reviews changes and explains risks\ntools: [read, search_channel]\nmaxModelSteps: 5\n---\nYou are Reviewer. Point out risks first.\n',
  );
  await put(
    'slack/C0AGENTS/agents/helper/AGENT.md',
    '---\nname: helper\ndescription: Answers quick questions\n---\nYou are Helper. Keep it short.\n',
  );
  await put('agents/broken/AGENT.md', '---\nname: broken\ndescription: x\ncolour: blue\n---\nBody.\n');
  await put('settings.json', JSON.stringify({ channels: { 'slack:C0AGENTS': { agent: 'reviewer' } } }));
  const toolNames = (request: (typeof stack.bedrock.requests)[number]) =>
    (request.body.toolConfig?.tools ?? []).flatMap((t) => (t.toolSpec?.name ? [t.toolSpec.name] : []));
  const systemText = (request: (typeof stack.bedrock.requests)[number]) => JSON.stringify(request.body.system);
  try {
    // The channel's default agent.
    stack.bedrock.script({ text: 'reviewed' });
    const first = await stack.slack.postUserMessage({ channel: 'C0AGENTS', text: '<@U0LOCALBOT> look at this change' });
    await replyDone(first.channel, first.threadTs);
    const reviewer = stack.bedrock.requests.at(-1)!;
    assert.match(systemText(reviewer), /You are the agent \\"reviewer\\"[^]*Point out risks first/);
    assert.deepEqual(toolNames(reviewer), ['read', 'search_channel']);
    await settledIdle(`slack:${first.channel}:${first.threadTs}`);

    // `/agent helper` starts a thread with another agent, and the thread keeps it.
    stack.bedrock.script({ text: 'helped' }, { text: 'still helping' });
    const second = await stack.slack.postUserMessage({ channel: 'C0AGENTS', text: '<@U0LOCALBOT> /agent helper what is 2+2?' });
    await replyDone(second.channel, second.threadTs);
    const helper = stack.bedrock.requests.at(-1)!;
    assert.match(systemText(helper), /Keep it short/);
    assert.doesNotMatch(systemText(helper), /Point out risks/);
    assert.ok(toolNames(helper).includes('bash'), 'no tools list: every tool');
    assert.match(JSON.stringify(helper.body.messages!.at(-1)), /what is 2\+2\?/);
    assert.doesNotMatch(JSON.stringify(helper.body.messages!.at(-1)), /\/agent/);
    const threadId = `slack:${second.channel}:${second.threadTs}`;
    await settledIdle(threadId);
    await stack.slack.postUserMessage({ channel: 'C0AGENTS', text: 'and 3+3?', threadTs: second.threadTs });
    await replyDone(second.channel, second.threadTs, 2);
    assert.match(systemText(stack.bedrock.requests.at(-1)!), /Keep it short/, 'the thread kept its agent');
    await settledIdle(threadId);

    // An invalid definition: the thread is told why, an error file lies beside it, the default answers.
    stack.bedrock.script({ text: 'default answer' });
    const third = await stack.slack.postUserMessage({ channel: 'C0AGENTS', text: '<@U0LOCALBOT> /agent broken hello' });
    const replies = await replyDone(third.channel, third.threadTs, 2);
    assert.ok(
      replies.some((r) => /Agent agents\/broken\/AGENT\.md was not loaded because .*colour.*default agent instead/s.test(r.text)),
      replies.map((r) => r.text).join('\n'),
    );
    const errorFile = JSON.parse(
      await (await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'agents/broken/AGENT.error.json' }))).Body!.transformToString(),
    );
    assert.match(errorFile.error, /colour/);
    await settledIdle(`slack:${third.channel}:${third.threadTs}`);

    // `agents` lists what the channel can use.
    const asked = await stack.slack.postUserMessage({ channel: 'C0AGENTS', text: '<@U0LOCALBOT> agents' });
    const listing = await eventually(
      () =>
        [...stack.slack.ephemeral, ...botReplies(asked.channel, asked.threadTs)].find((m) => /Agents you can use here/.test(m.text ?? '')),
      20_000,
      'the agents listing',
    ).catch((error: Error) => {
      const seen = [...stack.slack.ephemeral.slice(-3), ...botReplies(asked.channel, asked.threadTs)].map((m) => m.text);
      throw new Error(`${error.message}; seen: ${JSON.stringify(seen)}`);
    });
    assert.match(listing.text!, /`helper`.*this channel’s own/);
    assert.match(listing.text!, /`reviewer` \(answers here by default\)/);
    assert.match(listing.text!, /broken.*was not loaded/);
  } finally {
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'settings.json' }));
  }
});
