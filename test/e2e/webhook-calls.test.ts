// What one mention costs the Slack webhook in AWS calls, read from the local cloud's record of every
// call each function's role makes. Slack delivers a mention twice (`message` and `app_mention`), and
// both deliveries sit inside Slack's 3-second ack: each call counted here is a DynamoDB or SQS round
// trip on AWS. Counts, not timings: the bench (section 3) has the milliseconds.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestStack, type TestStack } from '../support/local-stack.ts';
import { eventually } from '../support/eventually.ts';
import { threadOf, threadProbes } from '../support/threads.ts';

let stack: TestStack;
before(async () => {
  stack = await startTestStack();
});
after(async () => {
  await stack?.stop();
});
const { runsOf, idle } = threadProbes(() => stack);

/** A function's AWS calls while `act` runs, as "service operation" → count (the webhook's unless told). */
async function webhookCallsDuring(act: () => Promise<unknown>, fn: 'webhook' | 'dispatch' = 'webhook'): Promise<Record<string, number>> {
  const role = stack.cloud.functionRoles[fn];
  const from = stack.cloud.awsCalls.length;
  await act();
  const counts: Record<string, number> = {};
  for (const call of stack.cloud.awsCalls.slice(from).filter((c) => c.caller === role)) {
    const name = `${call.service} ${call.operation}`;
    counts[name] = (counts[name] ?? 0) + 1;
  }
  return counts;
}

const total = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);

test('a mention (both deliveries) costs the warm webhook one dedupe write each, the subscription, the prompt and the recent-thread mark', async () => {
  // A first mention warms the function (its secret read, the user's profile): the count is per mention.
  const warmUp = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> warm up' });
  await eventually(() => runsOf(threadOf(warmUp)).length === 1, 30_000, 'the warm-up run');
  await idle(threadOf(warmUp));

  let posted!: Awaited<ReturnType<TestStack['slack']['postUserMessage']>>;
  const calls = await webhookCallsDuring(async () => {
    posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> count my calls' });
  });
  assert.equal(posted.deliveries.length, 2, 'Slack delivered message and app_mention');
  assert.ok(
    posted.deliveries.every((d) => d.status === 200),
    'both acked',
  );
  assert.deepEqual(calls, {
    // Each delivery's dedupe write (the second one's condition fails), the thread's subscription, and
    // the caller's most recent thread in the channel (what a slash command there acts on). Whether
    // the thread is subscribed is not read for a mention: it is a prompt either way.
    'dynamodb PutItem': 4,
    // The prompt, to the FIFO inbox.
    'sqs SendMessage': 1,
  });
  assert.ok(total(calls) <= 6);

  // Both deliveries made one prompt: one run.
  const threadId = threadOf(posted);
  await eventually(() => runsOf(threadId).length > 0, 30_000, 'a run');
  await idle(threadId);
  assert.equal(runsOf(threadId).length, 1);
});

test('a reply without a mention in a subscribed thread is still a prompt, for its dedupe write, the subscription read, the recent-thread mark and the enqueue; a mention there is one without the read', async () => {
  const first = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> start a thread' });
  const threadId = threadOf(first);
  await eventually(() => runsOf(threadId).length === 1, 30_000, 'a run');
  await idle(threadId);

  const calls = await webhookCallsDuring(() => stack.slack.postUserMessage({ text: 'and a follow-up', threadTs: first.threadTs }));
  assert.deepEqual(calls, { 'dynamodb PutItem': 2, 'dynamodb GetItem': 1, 'sqs SendMessage': 1 });
  await eventually(() => runsOf(threadId).length === 2, 30_000, 'the follow-up ran');
  await idle(threadId);
  // Both deliveries' dedupe writes, the subscription written again (as for a new mention), the recent-thread mark.
  const mention = await webhookCallsDuring(() =>
    stack.slack.postUserMessage({ text: '<@U0LOCALBOT> once more', threadTs: first.threadTs }),
  );
  assert.deepEqual(mention, { 'dynamodb PutItem': 4, 'sqs SendMessage': 1 });
  await eventually(() => runsOf(threadId).length === 3, 30_000, 'the mention ran');
});

test("dispatch admits a thread's first message without reading the thread; a later message reads it with the pause flag", async () => {
  let first!: Awaited<ReturnType<TestStack['slack']['postUserMessage']>>;
  const opening = await webhookCallsDuring(async () => {
    first = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> a new thread' });
    await eventually(() => runsOf(threadOf(first)).length === 1, 30_000, 'a run');
  }, 'dispatch');
  const threadId = threadOf(first);
  await idle(threadId);
  assert.equal(opening['dynamodb BatchGetItem'], undefined, 'no read of the thread before its admission');
  assert.equal(opening['dynamodb TransactWriteItems'], 1, 'the admission, which checks the thread is new and not paused');

  const following = await webhookCallsDuring(async () => {
    await stack.slack.postUserMessage({ text: 'and then', threadTs: first.threadTs });
    await eventually(() => runsOf(threadId).length === 2, 30_000, 'the follow-up ran');
  }, 'dispatch');
  await idle(threadId);
  assert.equal(following['dynamodb BatchGetItem'], 1, 'the thread and the pause flag, read together');
  assert.equal(following['dynamodb TransactWriteItems'], 1);
});
