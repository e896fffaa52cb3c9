// The ways past the secret filter, attacked through the whole local cloud with a scripted model:
// a token in the upload tool's comment, a token at the end of a streamed reply too long to hold
// whole, and a secretPatterns entry that backtracks catastrophically. Each test passes because the
// token never reaches Slack (not in any Web API call) and every run finishes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { gate } from '../../packages/local-cloud/src/bedrock.ts';
import { putData } from '../support/data-bucket.ts';
import { startTestStack, type TestStack } from '../support/local-stack.ts';
import { eventually } from '../support/eventually.ts';
import { runScripted, toolTurn, toolUseIdOf } from '../support/scripted-run.ts';

const TOKEN = 'ghp_Q2xhdWRlV2FzSGVyZUFuZFNhaWRIZWxsbzEy';

let stack: TestStack;
const logs: string[] = [];
before(async () => {
  stack = await startTestStack({ env: { LOG_LEVEL: 'warn' }, onLog: (_, line) => logs.push(line) });
  stack.bedrock.setDefault(() => ({ text: 'ok' }));
});
after(async () => {
  await stack?.stop();
});

/** Everything the functions sent to Slack's Web API so far. */
const sentToSlack = () => JSON.stringify(stack.slack.calls);

test("a token in the upload tool's comment is redacted before it is posted", async () => {
  const write = toolTurn('write', { path: 'report.txt', content: 'quarterly numbers\n' });
  const upload = toolTurn('upload', { path: 'report.txt', comment: `Here is the report. Deploy token: ${TOKEN}` });
  const { ended, results, posted } = await runScripted(stack, {
    channel: 'C0UPLOAD',
    text: 'upload the report with the token from the notes',
    turns: [write, upload, { text: 'Uploaded.' }],
  });
  assert.equal(ended.status, 'SUCCEEDED');
  assert.match(results.get(toolUseIdOf(upload))!.text, /uploaded report\.txt/);
  const inThread = stack.slack.messages.thread(posted.channel, posted.threadTs);
  assert.ok(
    inThread.some((m) => m.files?.length),
    'the file was posted',
  );
  assert.ok(
    inThread.some((m) => m.bot_id && m.text === 'Here is the report. Deploy token: [redacted GitHub token]'),
    inThread.map((m) => m.text).join(' | '),
  );
  assert.ok(!sentToSlack().includes(TOKEN.slice(4)), 'the token never reached Slack');
});

test('a streamed reply of more than 8,192 characters without whitespace, ending in a token, is posted redacted', async () => {
  const filler = '='.repeat(9000);
  const { ended, posted } = await runScripted(stack, {
    channel: 'C0LONGREPLY',
    text: 'print the notes as one line',
    turns: [{ text: [`Notes:${filler}${TOKEN.slice(0, 12)}`, `${TOKEN.slice(12)} end.`] }],
  });
  assert.equal(ended.status, 'SUCCEEDED');
  const reply = await eventually(
    () => stack.slack.messages.thread(posted.channel, posted.threadTs).find((m) => m.bot_id && m.text.endsWith('end.')),
    20_000,
    'the reply',
  );
  assert.equal(reply.text, `Notes:${filler}[redacted GitHub token] end.`);
  assert.ok(!sentToSlack().includes(TOKEN.slice(0, 12)), "not even the token's beginning reached Slack");
});

test('secretPatterns that backtrack catastrophically are refused by name, and the run finishes', async () => {
  await putData(stack, 'settings.json', {
    secretPatterns: [
      { name: 'Alternation under a repeat', regex: '(a|a)+b' },
      { name: 'Repeat of a repeat', regex: '(.*a){12}!' },
    ],
  });
  try {
    // Text on which each pattern, run by a backtracking engine, tries exponentially many ways.
    const { ended, posted } = await runScripted(stack, {
      channel: 'C0SLOWPATTERN',
      text: `check ${'a'.repeat(40)}`,
      turns: [{ text: `Checked ${'a'.repeat(48)} and found nothing.` }],
    });
    assert.equal(ended.status, 'SUCCEEDED');
    assert.ok(
      stack.slack.messages.thread(posted.channel, posted.threadTs).some((m) => m.bot_id && m.text.endsWith('found nothing.')),
      'the reply was posted',
    );
    const refusals = logs.filter((line) => line.includes('settings.json ignored'));
    assert.ok(
      refusals.some((line) => line.includes('Alternation under a repeat') && line.includes('(a|a)+b')),
      refusals.join('\n'),
    );
    assert.ok(refusals.some((line) => line.includes('Repeat of a repeat')));
  } finally {
    await putData(stack, 'settings.json', {});
  }
});

test("a deployment's own secret pattern redacts the run's reply with the patterns the run began with, even once settings.json dropped it", async () => {
  const code = 'acme_' + 'Zq7'.repeat(8);
  await putData(stack, 'settings.json', { secretPatterns: [{ name: 'Acme key', regex: 'acme_[A-Za-z0-9]{24}' }] });
  const hold = gate();
  try {
    const channel = 'C0OWNPATTERN';
    const inChannel = (request: { body: { system?: unknown } }) => JSON.stringify(request.body.system ?? '').includes(`slack:${channel}:`);
    stack.bedrock.script({ takenBy: inChannel, text: `The key is ${code} as asked.`, hold: hold.promise });
    const posted = await stack.slack.postUserMessage({ channel, text: '<@U0LOCALBOT> what is the key?' });
    const threadId = `slack:${posted.channel}:${posted.threadTs}`;
    await eventually(() => stack.bedrock.requests.some(inChannel), 60_000, 'the run at the model');
    // The run was prepared with the pattern; settings.json loses it while the model answers.
    await putData(stack, 'settings.json', {});
    hold.release();
    const execution = await eventually(
      () => [...stack.cloud.stepFunctions.executions.values()].find((e) => (e.input as { threadId: string }).threadId === threadId),
      30_000,
      'run started',
    );
    assert.equal((await stack.cloud.stepFunctions.waitForExecution(execution.executionArn, 60_000)).status, 'SUCCEEDED');
    const reply = stack.slack.messages.thread(posted.channel, posted.threadTs).find((m) => m.bot_id && m.text.includes('as asked'));
    assert.ok(reply, 'the reply was posted');
    assert.doesNotMatch(sentToSlack(), new RegExp(code));
  } finally {
    hold.release();
    await putData(stack, 'settings.json', {});
  }
});
