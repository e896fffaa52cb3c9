// Slack and Teams through the same inbox, actors and state machine at once: 25 Teams channel
// threads and 25 Slack threads, each sent its prompts back to back, all at the same time. Every
// thread runs its prompts in the order they were sent, one at a time, and answers each in order
// in its own thread.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestStack, type TestStack } from '../support/local-stack.ts';
import { eventually } from '../support/eventually.ts';
import { putData } from '../support/data-bucket.ts';

let stack: TestStack;
before(async () => {
  stack = await startTestStack({ teams: true });
});
after(async () => {
  await stack?.stop();
});

const THREADS = 25;
const PROMPTS = 3;

const runsOf = (threadId: string) =>
  [...stack.cloud.stepFunctions.executions.values()]
    .filter((e) => (e.input as { threadId: string }).threadId === threadId)
    .sort((a, b) => a.startDate.getTime() - b.startDate.getTime());
/** The thread id of a Teams conversation's runs (its id is encoded in the thread id). */
const teamsThreadOf = (conversationId: string) =>
  [...stack.cloud.stepFunctions.executions.values()]
    .map((e) => (e.input as { threadId: string }).threadId)
    .find((id) => id.startsWith('teams:') && Buffer.from(id.split(':')[1]!, 'base64url').toString() === conversationId);

/** `replies`: the bot's answers in the thread, with when each was complete there. */
function assertInOrder(label: string, threadId: string, expected: string[], replies: { text: string; at: number }[]) {
  const runs = runsOf(threadId);
  assert.deepEqual(
    runs.map((e) => /load-\w+-\d+-\d+/.exec((e.input as { prompt: { text: string } }).prompt.text)?.[0]),
    expected,
    `${label}: runs in order`,
  );
  for (let i = 1; i < runs.length; i++) {
    // The lease passes on as a run finishes, after its reply is in the thread and its context saved.
    assert.ok(replies[i - 1]!.at <= runs[i]!.startDate.getTime(), `${label}: run ${i} started before run ${i - 1} finished its work`);
  }
  assert.deepEqual(
    replies.map((r) => r.text),
    expected.map((p) => `re: ${p}`),
    `${label}: answers in order`,
  );
}

test(`${THREADS} Teams threads and ${THREADS} Slack threads at once, ${PROMPTS} prompts each: every thread in order, runs never overlapping`, async () => {
  // Plain conversations: no sandbox for each of the threads.
  // The machinery at scale, not the run limits (test/e2e/capacity.test.ts): 100 threads run at once.
  await putData(stack, 'settings.json', {
    sandbox: { startEarly: false },
    limits: { maxConcurrentRunsPerChannel: 1000, maxConcurrentRuns: 1000 },
  });
  stack.bedrock.setDefault((req) => {
    const last = JSON.stringify(req.body.messages?.at(-1) ?? '');
    return { text: `re: ${/load-\w+-\d+-\d+/.exec(last)?.[0] ?? '?'}`, delayMs: 1 };
  });
  const prompt = (platform: string, t: number, i: number) => `load-${platform}-${t}-${i}`;
  const [teams, slack] = await Promise.all([
    Promise.all(Array.from({ length: THREADS }, (_, t) => stack.teams.sendUserMessage({ text: prompt('teams', t, 0) }))),
    Promise.all(Array.from({ length: THREADS }, (_, t) => stack.slack.postUserMessage({ text: `<@U0LOCALBOT> ${prompt('slack', t, 0)}` }))),
  ]);
  await Promise.all([
    ...teams.map(async (sent, t) => {
      for (let i = 1; i < PROMPTS; i++)
        await stack.teams.sendUserMessage({ conversationId: sent.conversationId, text: prompt('teams', t, i), mention: false });
    }),
    ...slack.map(async (posted, t) => {
      for (let i = 1; i < PROMPTS; i++) await stack.slack.postUserMessage({ text: prompt('slack', t, i), threadTs: posted.threadTs });
    }),
  ]);
  const slackThread = (posted: { channel: string; threadTs: string }) => `slack:${posted.channel}:${posted.threadTs}`;
  const done = (threadId: string | undefined) =>
    threadId !== undefined && runsOf(threadId).length === PROMPTS && runsOf(threadId).every((e) => e.status === 'SUCCEEDED');
  await eventually(
    () => teams.every((s) => done(teamsThreadOf(s.conversationId))) && slack.every((p) => done(slackThread(p))),
    480_000,
    `all ${2 * THREADS * PROMPTS} runs`,
  );
  const expected = (platform: string, t: number) => Array.from({ length: PROMPTS }, (_, i) => prompt(platform, t, i));
  for (const [t, sent] of teams.entries()) {
    const replies = stack.teams
      .botMessages(sent.conversationId)
      .filter((m) => !m.deleted && m.text?.startsWith('re: '))
      .map((m) => ({ text: m.text!, at: Date.parse(m.timestamp) }));
    assertInOrder(`teams thread ${t}`, teamsThreadOf(sent.conversationId)!, expected('teams', t), replies);
  }
  for (const [t, posted] of slack.entries()) {
    const replies = stack.slack.messages
      .thread(posted.channel, posted.threadTs)
      .filter((m) => m.bot_id && m.text?.startsWith('re: '))
      .map((m) => ({ text: m.text, at: m.local.versions.at(-1)?.at ?? m.local.createdAt }));
    assertInOrder(`slack thread ${t}`, slackThread(posted), expected('slack', t), replies);
  }
});
