// Teams through the same actors, state machine and sandbox as Slack, with the local Teams stand-in
// as the tenant: a channel mention starts a thread that runs a tool and answers; later messages in
// the thread are prompts of the same actor; group and personal chats are threads too; busy replies;
// `stop`, `steer …` and the Stop button (an Adaptive Card Action.Submit). Every reply is sent from
// agent-step, outside the webhook request, to the conversation's serviceUrl.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DeleteObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '../../shared/aws/dynamodb.ts';
import { gate } from '../../packages/local-cloud/src/bedrock.ts';
import { startTestStack, type TestStack } from '../support/local-stack.ts';
import { eventually } from '../support/eventually.ts';

let stack: TestStack;
before(async () => {
  stack = await startTestStack({ teams: true });
});
after(async () => {
  await stack?.stop();
});

let n = 0;
const use = (name: string, input: Record<string, unknown>) => ({ toolUseId: `tu-${name}-${++n}`, name, input });

/** Runs of a Teams conversation, oldest first (the thread id encodes the conversation id). */
const runsOf = (conversationId: string) =>
  [...stack.cloud.stepFunctions.executions.values()]
    .filter((e) => {
      const threadId = (e.input as { threadId: string }).threadId;
      return threadId.startsWith('teams:') && Buffer.from(threadId.split(':')[1]!, 'base64url').toString() === conversationId;
    })
    .sort((a, b) => a.startDate.getTime() - b.startDate.getTime());
const threadIdOf = (conversationId: string) => (runsOf(conversationId)[0]!.input as { threadId: string }).threadId;

async function actor(threadId: string) {
  const out = await documentClient(stack.cloud.clients.dynamodb).send(
    new GetCommand({ TableName: stack.cloud.names.table, Key: { pk: `actor#${threadId}`, sk: 'actor' } }),
  );
  return out.Item;
}
const idle = (conversationId: string) =>
  eventually(async () => runsOf(conversationId).length > 0 && (await actor(threadIdOf(conversationId)))?.status === 'idle', 30_000, 'idle');

/** The bot's visible text messages in a conversation (not cards, not deleted, not the placeholder). */
const botTexts = (conversationId: string) =>
  stack.teams
    .botMessages(conversationId)
    .filter((m) => !m.deleted && m.text && m.text !== '...' && !m.targeted)
    .map((m) => m.text!);
const targetedTexts = (conversationId: string) =>
  stack.teams
    .botMessages(conversationId)
    .filter((m) => m.targeted)
    .map((m) => m.text ?? '');

test('a channel mention runs a tool in the sandbox (typing shown meanwhile) and answers in the thread; a follow-up is a prompt of the same thread', async () => {
  stack.bedrock.script({ toolUses: [use('bash', { command: 'echo tool-ran-$((6*7))' })] }, { text: 'The tool said 42.' });
  const sent = await stack.teams.sendUserMessage({ text: 'run a tool please' });
  assert.equal(sent.delivery.status, 200);
  await eventually(() => botTexts(sent.conversationId).includes('The tool said 42.'), 90_000, 'answer');
  const toolResult = JSON.stringify(stack.bedrock.requests.at(-1)!.body.messages);
  assert.match(toolResult, /tool-ran-42/);
  // A typing indicator while the tool ran, before the answer.
  const activities = stack.teams.state.activities.get(sent.conversationId) ?? [];
  const typing = activities.filter((a) => a.type === 'typing' && !a.stream && !stack.teams.state.users.has(a.from.id));
  const answer = stack.teams.botMessages(sent.conversationId).find((m) => m.text === 'The tool said 42.')!;
  assert.ok(typing.length >= 1, 'typing indicator sent');
  assert.ok(typing[0]!.timestamp <= answer.timestamp, 'typing before the answer');
  await idle(sent.conversationId);

  // A message in the thread without a mention: the bot subscribed, so it is a prompt.
  stack.bedrock.script({ text: 'Follow-up answered.' });
  const followUp = await stack.teams.sendUserMessage({ conversationId: sent.conversationId, text: 'and another thing', mention: false });
  assert.equal(followUp.delivery.status, 200);
  await eventually(() => botTexts(sent.conversationId).includes('Follow-up answered.'), 30_000, 'follow-up answered');
  const runs = runsOf(sent.conversationId);
  assert.equal(runs.length, 2);
  assert.equal(new Set(runs.map((r) => (r.input as { threadId: string }).threadId)).size, 1, 'one thread actor');
  assert.match((runs[1]!.input as { prompt: { text: string } }).prompt.text, /and another thing/);
});

test('a group chat and a personal chat are each a thread of their own', async () => {
  stack.bedrock.script({ text: 'Hello, group.' });
  const group = await stack.teams.sendUserMessage({ kind: 'groupChat', text: 'hi all' });
  stack.bedrock.script({ text: 'Hello, you.' });
  await eventually(() => botTexts(group.conversationId).includes('Hello, group.'), 30_000, 'group answer');
  // In a personal chat every message is for the bot, no mention needed.
  const personal = await stack.teams.sendUserMessage({ kind: 'personal', text: 'just us' });
  assert.equal(personal.delivery.status, 200);
  await eventually(() => botTexts(personal.conversationId).includes('Hello, you.'), 30_000, 'personal answer');
  const [groupThread, personalThread] = [threadIdOf(group.conversationId), threadIdOf(personal.conversationId)];
  assert.notEqual(groupThread, personalThread);
  assert.match(personalThread, /^teams:/);
});

test('a prompt past the queue depth gets a busy reply only its author sees', async () => {
  const settingsKey = 'settings.json';
  await stack.cloud.clients.s3.send(
    new PutObjectCommand({ Bucket: stack.cloud.names.bucket, Key: settingsKey, Body: JSON.stringify({ maxQueueDepth: 1 }) }),
  );
  try {
    const hold = gate();
    stack.bedrock.script({ text: 'first answer', hold: hold.promise });
    const first = await stack.teams.sendUserMessage({ text: 'hold on' });
    await eventually(() => runsOf(first.conversationId).length === 1, 30_000, 'first run');
    await stack.teams.sendUserMessage({ conversationId: first.conversationId, text: 'queued', mention: false });
    await stack.teams.sendUserMessage({ conversationId: first.conversationId, text: 'one too many', mention: false });
    await eventually(() => targetedTexts(first.conversationId).some((t) => /busy/.test(t)), 30_000, 'busy reply');
    hold.release();
    await eventually(() => runsOf(first.conversationId).length === 2, 30_000, 'queued prompt ran');
    await idle(first.conversationId);
    assert.equal(runsOf(first.conversationId).length, 2);
  } finally {
    await stack.cloud.clients.s3.send(new DeleteObjectCommand({ Bucket: stack.cloud.names.bucket, Key: settingsKey }));
  }
});

test('stop in the thread ends a running tool; steer with nothing running says so', async () => {
  stack.bedrock.script({ toolUses: [use('bash', { command: 'sleep 300' })] });
  const sent = await stack.teams.sendUserMessage({ text: 'sleep a while' });
  await eventually(() => runsOf(sent.conversationId)[0]?.history.some((h) => h.name === 'SandboxTool'), 60_000, 'command running');
  await stack.teams.sendUserMessage({ conversationId: sent.conversationId, text: 'stop', mention: false });
  await eventually(() => runsOf(sent.conversationId)[0]?.status === 'ABORTED', 15_000, 'execution aborted');
  await eventually(() => botTexts(sent.conversationId).includes('Stopped.'), 15_000, 'Stopped.');
  await idle(sent.conversationId);
  await stack.teams.sendUserMessage({ conversationId: sent.conversationId, text: 'steer try another way', mention: false });
  await eventually(() => targetedTexts(sent.conversationId).some((t) => /Nothing is running here/.test(t)), 15_000, 'steer notice');
  assert.equal(runsOf(sent.conversationId).length, 1);
});

test('the Stop button (Adaptive Card Action.Submit) on the running reply stops the run', async () => {
  stack.bedrock.script({ toolUses: [use('bash', { command: 'sleep 300' })] });
  const sent = await stack.teams.sendUserMessage({ text: 'press the button' });
  const card = await eventually(
    () => stack.teams.botMessages(sent.conversationId).find((m) => JSON.stringify(m.attachments ?? []).includes('stop-run')),
    60_000,
    'stop card',
  );
  const content = JSON.stringify(card.attachments);
  assert.match(content, /application\/vnd\.microsoft\.card\.adaptive/);
  assert.match(content, /Action\.Submit/);
  await eventually(() => runsOf(sent.conversationId)[0]?.history.some((h) => h.name === 'SandboxTool'), 60_000, 'command running');
  // Teams sends an Action.Submit click as a message activity whose value is the action's data.
  const click = stack.teams.userActivity({
    conversationId: sent.conversationId,
    text: '',
    mention: false,
    extra: { text: undefined, replyToId: card.id, value: { actionId: 'stop-run', value: runsOf(sent.conversationId)[0]!.name } },
  });
  const delivered = await stack.teams.deliver(click);
  assert.equal(delivered.status, 200);
  await eventually(() => runsOf(sent.conversationId)[0]?.status === 'ABORTED', 15_000, 'aborted by the button');
  await eventually(() => botTexts(sent.conversationId).some((t) => t.startsWith('Stopped.')), 15_000, 'Stopped.');
  await eventually(() => stack.teams.state.find(sent.conversationId, card.id)?.deleted, 15_000, 'stop card removed');
});

test('an event file targeting a Teams channel starts a new thread there and answers in it', async () => {
  // The channel is known from an earlier mention there (the first test's); its serviceUrl was stored then.
  stack.bedrock.script({ text: 'Weekly report: all green.' });
  const channelId = '19:local-general@thread.tacv2';
  await stack.cloud.clients.s3.send(
    new PutObjectCommand({
      Bucket: stack.cloud.names.bucket,
      Key: 'events/teams-report.json',
      Body: JSON.stringify({ type: 'immediate', adapterId: 'teams', channelId, text: 'Time for the weekly report' }),
    }),
  );
  await stack.cloud.s3Notifications.poll();
  const root = await eventually(
    () => stack.teams.botMessages(channelId).find((m) => m.text === 'Time for the weekly report'),
    30_000,
    'post in the channel',
  );
  const thread = `${channelId};messageid=${root.id}`;
  await eventually(() => botTexts(thread).includes('Weekly report: all green.'), 30_000, 'answer in the new thread');
  // Memory and settings of that thread are the channel's: the data tree has one directory for the channel.
  assert.equal((runsOf(thread)[0]!.input as { threadId: string }).threadId.startsWith('teams:'), true);
});

test('an event file for a Teams channel the bot has never seen fails with a clear reason', async () => {
  await stack.cloud.clients.s3.send(
    new PutObjectCommand({
      Bucket: stack.cloud.names.bucket,
      Key: 'events/teams-unknown.json',
      Body: JSON.stringify({ type: 'immediate', adapterId: 'teams', channelId: '19:never-seen@thread.tacv2', text: 'hello?' }),
    }),
  );
  await stack.cloud.s3Notifications.poll();
  await eventually(
    () =>
      stack.errors.some((e) =>
        /No Teams conversation "19:never-seen@thread.tacv2" is known: mention the bot there once first/.test(
          String((e.error as Error)?.message ?? e.error),
        ),
      ),
    15_000,
    'the reason, in the error',
  );
  assert.equal(stack.teams.botMessages('19:never-seen@thread.tacv2').length, 0);
});

test('a reply streams into a group chat by post-and-edit, edits at least 1.5 s apart, backing off when Teams answers 429', async () => {
  stack.teams.rateLimits.update = { limit: 1, windowMs: 2500 };
  try {
    const words = Array.from({ length: 16 }, (_, i) => `word${i} `);
    stack.bedrock.script({ text: words, delayMs: 400 });
    const sent = await stack.teams.sendUserMessage({ kind: 'groupChat', text: 'stream to me' });
    const expected = words.join('').trim();
    // The first run of a group chat starts the functions it uses cold when this test runs alone.
    await eventually(() => botTexts(sent.conversationId).some((t) => t.trim() === expected), 120_000, 'whole reply');
    await idle(sent.conversationId);
    const reply = stack.teams.botMessages(sent.conversationId).find((m) => m.text?.trim() === expected)!;
    const updates = stack.teams.updates.filter((u) => u.activityId === reply.id);
    assert.ok(updates.filter((u) => u.status === 200).length >= 2, `edited while streaming: ${JSON.stringify(updates)}`);
    assert.ok(
      updates.some((u) => u.status === 429),
      'Teams refused some edits',
    );
    for (let i = 1; i < updates.length; i++) {
      assert.ok(updates[i]!.at - updates[i - 1]!.at >= 1450, `edits ${i - 1} and ${i} ${updates[i]!.at - updates[i - 1]!.at} ms apart`);
    }
    // After a 429 the next attempt waited for the Retry-After Teams gave (and at least the usual 1.5 s).
    updates.forEach((u, i) => {
      const next = updates[i + 1];
      if (u.status === 429 && next)
        assert.ok(next.at - u.at >= Math.max(u.retryAfterSeconds! * 1000, 1450) - 50, `retry ${i + 1} too soon`);
    });
    assert.equal(reply.edits, updates.filter((u) => u.status === 200).length);
  } finally {
    delete stack.teams.rateLimits.update;
  }
});

test('a reply in a personal chat streams natively: typing updates with the text so far, then one final message, never an edit', async () => {
  const words = Array.from({ length: 8 }, (_, i) => `part${i} `);
  stack.bedrock.script({ text: words, delayMs: 500 });
  const sent = await stack.teams.sendUserMessage({ kind: 'personal', text: 'stream to me privately' });
  const expected = words.join('');
  await eventually(() => botTexts(sent.conversationId).some((t) => t.trim() === expected.trim()), 90_000, 'whole reply');
  await idle(sent.conversationId);
  const reply = stack.teams.botMessages(sent.conversationId).find((m) => m.text?.trim() === expected.trim())!;
  assert.ok(reply.stream, 'sent through the streaming protocol');
  assert.equal(reply.stream.final, true, 'closed by a final message');
  assert.ok(reply.stream.updates >= 2, `updated while the model wrote: ${reply.stream.updates} update(s)`);
  assert.equal(reply.edits, 0, 'no post-and-edit');
  assert.equal(stack.teams.updates.filter((u) => u.activityId === reply.id).length, 0);
  assert.equal(botTexts(sent.conversationId).filter((t) => t.includes('part0')).length, 1, 'one message');
});

test('upload posts an image inline into Teams; a file Teams cannot take is a tool result that says so', async () => {
  const [png, pdf] = [use('upload', { path: 'chart.png', comment: 'The chart.' }), use('upload', { path: 'report.pdf' })];
  stack.bedrock.script(
    { toolUses: [use('bash', { command: "printf '\\211PNG\\r\\n\\032\\n-chart' > chart.png && printf '%%PDF-1.4' > report.pdf" })] },
    { toolUses: [png] },
    { toolUses: [pdf] },
    { text: 'Sent what Teams takes.' },
  );
  const sent = await stack.teams.sendUserMessage({ text: 'send me the chart and the report' });
  await eventually(() => botTexts(sent.conversationId).includes('Sent what Teams takes.'), 90_000, 'answer');
  const posted = stack.teams.botMessages(sent.conversationId).find((m) => m.text === 'The chart.')!;
  const [image] = posted.attachments as { contentType: string; contentUrl: string; name: string }[];
  assert.equal(image!.contentType, 'image/png');
  assert.equal(image!.name, 'chart.png');
  assert.equal(
    Buffer.from(image!.contentUrl.replace(/^data:image\/png;base64,/, ''), 'base64').toString('latin1'),
    '\x89PNG\r\n\x1a\n-chart',
  );
  const messages = JSON.stringify(stack.bedrock.requests.at(-1)!.body.messages);
  assert.match(messages, /uploaded chart\.png/);
  assert.match(messages, /report\.pdf cannot be delivered to Teams: a bot can post only PNG, JPEG or GIF images/);
});

test("a file attached in Teams is downloaded with the bot's token into the thread's attachments/", async () => {
  const cat = use('bash', { command: 'cat ../attachments/*_notes.txt' });
  stack.bedrock.script({ toolUses: [cat] }, { text: 'Read the notes.' });
  const downloadsBefore = stack.teams.state.fileDownloads.length;
  const files = [{ name: 'notes.txt', contentType: 'text/plain', data: Buffer.from('attached-in-teams 42\n') }];
  const sent = await stack.teams.sendUserMessage({ text: 'read my notes', files });
  await eventually(() => botTexts(sent.conversationId).includes('Read the notes.'), 90_000, 'answer');
  // The prompt named the saved file; the tool read it in the sandbox.
  const firstRequest = JSON.stringify(stack.bedrock.requests.at(-2)!.body.messages);
  assert.match(firstRequest, /notes\.txt: \/workspace\/data\/teams\/.+\/attachments\/\d+_notes\.txt \(text\/plain, 21 bytes\)/);
  assert.match(JSON.stringify(stack.bedrock.requests.at(-1)!.body.messages), /attached-in-teams 42/);
  // Teams serves the file only to the bot's token, and the bot sent it.
  assert.deepEqual(
    stack.teams.state.fileDownloads.slice(downloadsBefore).map((d) => d.authorized),
    [true],
  );
});

test('search_channel in Teams without Graph permissions is a tool error that says which permissions are missing', async () => {
  stack.bedrock.script({ toolUses: [use('search_channel', { query: 'deploy' })] }, { text: 'Could not search.' });
  const sent = await stack.teams.sendUserMessage({ text: 'search the channel for deploy' });
  await eventually(() => botTexts(sent.conversationId).includes('Could not search.'), 60_000, 'answer');
  const toolResult = JSON.stringify(stack.bedrock.requests.at(-1)!.body.messages);
  assert.match(
    toolResult,
    /search_channel cannot read this Teams conversation's history: that needs Microsoft Graph application permissions \(ChannelMessage\.Read\.All/,
  );
});

test('a Teams approval card: the held call waits; a click (Action.Submit) by someone else is refused to them alone; the requester approves and it runs', async () => {
  const settingsKey = 'settings.json';
  const rule = { tool: 'bash', match: 'teams-approve-me', approvers: 'requester' };
  await stack.cloud.clients.s3.send(
    new PutObjectCommand({ Bucket: stack.cloud.names.bucket, Key: settingsKey, Body: JSON.stringify({ approvals: [rule] }) }),
  );
  try {
    const call = use('bash', { command: 'echo teams-approve-me-ran' });
    stack.bedrock.script({ toolUses: [call] }, { text: 'ran it' });
    const sent = await stack.teams.sendUserMessage({ text: 'run the held command' });
    const card = await eventually(
      () => stack.teams.botMessages(sent.conversationId).find((m) => JSON.stringify(m.attachments ?? []).includes('approve-tool-call')),
      60_000,
      'approval card',
    );
    assert.match(JSON.stringify(card.attachments), /Action\.Submit/);
    assert.match(JSON.stringify(card.attachments), /teams-approve-me-ran/);
    await eventually(() => runsOf(sent.conversationId)[0]?.history.at(-1)?.name === 'AwaitApproval', 30_000, 'waiting');
    const approvalId = JSON.stringify(card.attachments).match(/"actionId\\?":\\?"approve-tool-call\\?",\\?"value\\?":\\?"([^"\\]+)/)?.[1];
    assert.ok(approvalId, 'the card carries the approval id');
    const click = (user?: { id: string; name: string; aadObjectId: string }) =>
      stack.teams.deliver(
        stack.teams.userActivity({
          conversationId: sent.conversationId,
          text: '',
          mention: false,
          ...(user ? { user } : {}),
          extra: { text: undefined, replyToId: card.id, value: { actionId: 'approve-tool-call', value: approvalId } },
        }),
      );
    const other = { id: '29:1other-user', name: 'Other User', aadObjectId: '00000000-0000-4000-8000-000000000002' };
    assert.equal((await click(other)).status, 200);
    await eventually(() => targetedTexts(sent.conversationId).some((t) => /can't decide this one/.test(t)), 15_000, 'refused');
    assert.equal(runsOf(sent.conversationId)[0]!.status, 'RUNNING');
    assert.equal((await click()).status, 200);
    const ended = await stack.cloud.stepFunctions.waitForExecution(runsOf(sent.conversationId)[0]!.executionArn, 60_000);
    assert.equal(ended.status, 'SUCCEEDED');
    await eventually(() => botTexts(sent.conversationId).includes('ran it'), 15_000, 'answer');
    const results = stack.bedrock.requests.flatMap((r) =>
      (r.body.messages ?? []).flatMap((m) =>
        (m.content ?? []).flatMap((b) => (b.toolResult?.toolUseId === call.toolUseId ? [b.toolResult] : [])),
      ),
    );
    assert.match(JSON.stringify(results[0]), /teams-approve-me-ran/);
    await eventually(
      () => /Approved by/.test(JSON.stringify(stack.teams.state.find(sent.conversationId, card.id))),
      15_000,
      'card shows the decision',
    );
    await idle(sent.conversationId);
  } finally {
    await stack.cloud.clients.s3.send(new DeleteObjectCommand({ Bucket: stack.cloud.names.bucket, Key: settingsKey }));
  }
});
