// The webhooks' Chat SDK state (shared/platforms/webhook-state.ts) over the real DynamoDB adapter on
// DynamoDB Local: what it keeps writing, what it no longer writes, and how long a user profile it
// read is reused.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Adapter, Message, StateAdapter } from 'chat';
import { createDynamoDbStateAdapter } from '../../shared/platforms/chat-state.ts';
import { routeMentionsUnread, USER_MEMO_MS, webhookState } from '../../shared/platforms/webhook-state.ts';
import type { Emulator } from '../../packages/local-cloud/src/emulators.ts';
import { sharedDynamoDbLocal } from '../support/dynamo.ts';
import { createLocalTable } from '../../packages/local-cloud/src/tables.ts';

const TABLE = 'webhook-state-test';
let emulator: Emulator;
let lowLevel: DynamoDBClient;
let stored: StateAdapter;
let clock = 0;
const now = () => clock;

before(async () => {
  emulator = await sharedDynamoDbLocal();
  lowLevel = new DynamoDBClient({
    endpoint: emulator.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  await createLocalTable(lowLevel, TABLE);
  // A year ahead of real time, so DynamoDB Local's TTL sweeper never removes what a test wrote.
  clock = Date.now() + 365 * 24 * 3600 * 1000;
  stored = createDynamoDbStateAdapter({ client: DynamoDBDocumentClient.from(lowLevel), tableName: TABLE, now });
});
after(async () => {
  lowLevel?.destroy();
  await emulator?.stop();
});

test("the SDK's message dedupe, subscriptions and every other key still reach the table", async () => {
  const state = webhookState(stored, now);
  const key = `dedupe:slack:${randomUUID()}`;
  assert.equal(await state.setIfNotExists(key, true, 60_000), true);
  assert.equal(await state.setIfNotExists(key, true, 60_000), false, 'a second delivery of the message is refused');
  const thread = `slack:C1:${randomUUID()}`;
  await state.subscribe(thread);
  assert.equal(await stored.isSubscribed(thread), true);
  await state.set('teams:channelContext:19:abc', 'ctx', 60_000);
  assert.equal(await stored.get('teams:channelContext:19:abc'), 'ctx');
});

test("Slack's event-delivered markers and thread-participant lists are neither written nor read", async () => {
  const state = webhookState(stored, now);
  const marker = `slack:event-delivered:Ev${randomUUID()}`;
  await state.set(marker, true, 60_000);
  assert.equal(await stored.get(marker), null, 'nothing written');
  await stored.set(marker, true, 60_000);
  assert.equal(await state.get(marker), null, 'not read');

  const participants = `slack:thread-participants:slack:C1:${randomUUID()}`;
  await state.appendToList(participants, 'U1', { maxLength: 100 });
  assert.deepEqual(await stored.getList(participants), [], 'nothing appended');
  await stored.appendToList(participants, 'U2');
  assert.deepEqual(await state.getList(participants), [], 'not read');
});

test('a user profile is read once and reused for USER_MEMO_MS; set and delete keep the reuse current', async () => {
  const state = webhookState(stored, now);
  const key = `slack:user:U${randomUUID()}`;
  assert.equal(await state.get(key), null, 'a miss is not remembered');
  await stored.set(key, { displayName: 'Ada' });
  assert.deepEqual(await state.get(key), { displayName: 'Ada' });

  await stored.set(key, { displayName: 'Ada L.' }); // renamed, written by another instance
  assert.deepEqual(await state.get(key), { displayName: 'Ada' }, 'reused while fresh');
  clock += USER_MEMO_MS;
  assert.deepEqual(await state.get(key), { displayName: 'Ada L.' }, 'read again once stale');

  await state.set(key, { displayName: 'Ada Lovelace' });
  await stored.set(key, { displayName: 'someone else' });
  assert.deepEqual(await state.get(key), { displayName: 'Ada Lovelace' }, 'its own write is what it reuses');
  await state.delete(key);
  assert.equal(await state.get(key), null, 'a delete is not answered from memory');
});

test("a mention's subscription check is answered without a read, in its own routing only; any other message's is read", async () => {
  const reads: string[] = [];
  const counted: StateAdapter = {
    ...stored,
    isSubscribed: async (threadId) => {
      reads.push(threadId);
      return stored.isSubscribed(threadId);
    },
  };
  const state = webhookState(counted, now);
  const subscribed = `slack:C1:${randomUUID()}`;
  await stored.subscribe(subscribed);
  // What the Chat SDK does with a received message, as far as this goes: build it, mark whether it
  // mentions the bot, then ask whether its thread is subscribed to choose the handlers (chat's
  // dispatchToHandlersWithSignal); `later` asks once more, as a handler might.
  const asked: { threadId: string; answers: boolean[] }[] = [];
  const chat = {
    async processMessage(_adapter: Adapter, threadId: string, message: Message | (() => Promise<Message>)) {
      const built = typeof message === 'function' ? await message() : message;
      built.isMention = built.text.includes('<@BOT>');
      await new Promise((resolve) => setTimeout(resolve, 1));
      const answers = [await state.isSubscribed(threadId), await state.isSubscribed(threadId)];
      asked.push({ threadId, answers });
    },
  };
  routeMentionsUnread(chat);
  const message = (text: string) => async () => ({ text }) as Message;
  const adapter = {} as Adapter;
  await Promise.all([
    chat.processMessage(adapter, subscribed, message('<@BOT> hi')),
    chat.processMessage(adapter, subscribed, message('a follow-up')),
  ]);
  assert.deepEqual(asked.find((a) => a.answers[0] === false)?.answers, [false, true], "the mention's routing: new, then read");
  assert.deepEqual(asked.find((a) => a.answers[0] === true)?.answers, [true, true], 'the follow-up: read');
  assert.equal(reads.length, 3, 'only the mention was not read, and only once');
  assert.equal(await state.isSubscribed(subscribed), true, 'outside any routing: read');
  assert.equal(reads.length, 4);
});
