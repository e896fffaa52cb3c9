// The DynamoDB StateAdapter against a real DynamoDB Local, including the Chat SDK driving it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { Chat, Message, parseMarkdown, type Adapter, type MessageContext, type QueueEntry, type StateAdapter } from 'chat';
import { createDynamoDbStateAdapter } from '../../shared/platforms/chat-state.ts';
import { TABLE_KEYS } from '../../shared/table.ts';
import type { Emulator } from '../../packages/local-cloud/src/emulators.ts';
import { sharedDynamoDbLocal } from '../support/dynamo.ts';
import { createLocalTable } from '../../packages/local-cloud/src/tables.ts';

const TABLE = 'chat-state-test';

let emulator: Emulator;
let lowLevel: DynamoDBClient;
let client: DynamoDBDocumentClient;

before(async () => {
  emulator = await sharedDynamoDbLocal();
  lowLevel = new DynamoDBClient({
    endpoint: emulator.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  await createLocalTable(lowLevel, TABLE);
  await createLocalTable(lowLevel, TABLE); // idempotent
  client = DynamoDBDocumentClient.from(lowLevel);
});

after(async () => {
  lowLevel?.destroy();
  await emulator?.stop();
});

// DynamoDB Local runs a TTL sweeper on the real clock (items past their expiresAt vanish within
// seconds), while the adapter judges expiry by the injected clock. The test clock therefore starts
// a year ahead of real time: nothing a test writes can expire for real while the test runs.
const YEAR_MS = 365 * 24 * 3600 * 1000;
const aheadOfRealTime = (ms = 0) => Math.floor(Date.now() / 1000) * 1000 + YEAR_MS + ms;

/** A fresh adapter in its own key namespace, with a clock the test moves by hand. */
function setup(): { state: StateAdapter; clock: { ms: number }; prefix: string } {
  const clock = { ms: aheadOfRealTime() };
  const prefix = `t-${randomUUID()}`;
  const state = createDynamoDbStateAdapter({ client, tableName: TABLE, keyPrefix: prefix, now: () => clock.ms });
  return { state, clock, prefix };
}

async function rawItem(pk: string, sk: string): Promise<Record<string, unknown> | undefined> {
  const result = await client.send(new GetCommand({ TableName: TABLE, Key: { [TABLE_KEYS.partitionKey]: pk, [TABLE_KEYS.sortKey]: sk } }));
  return result.Item;
}

function entry(id: string, clockMs: number): QueueEntry {
  // Queue entries are typed as Message but only their JSON form is stored.
  return { enqueuedAt: clockMs, expiresAt: clockMs + 90_000, message: { id } as unknown as Message };
}

const idOf = (e: QueueEntry | null): string | undefined => e?.message.id;

// ---------------------------------------------------------------------------------------------
// Key-value

test('get/set round-trip JSON values exactly; missing and deleted keys read as null', async () => {
  const { state } = setup();
  const values: unknown[] = [
    '',
    0,
    -1.5,
    12345678901234567890123456789012345678901234567890,
    true,
    null,
    [],
    {},
    'unicode ✓ \u0000',
    { a: '', b: [1, '', null, { c: '' }], d: { e: undefined, f: [] }, g: new Date(0) },
  ];
  for (const [i, value] of values.entries()) {
    await state.set(`k${i}`, value);
    assert.deepEqual(await state.get(`k${i}`), JSON.parse(JSON.stringify(value)), `value #${i}`);
  }
  assert.equal(await state.get('missing'), null);
  await state.set('k0', 'overwritten');
  assert.equal(await state.get('k0'), 'overwritten');
  await state.delete('k0');
  assert.equal(await state.get('k0'), null);
  await state.delete('never-existed');
});

test('set stores expiresAt in epoch seconds rounded up, and nothing without a TTL', async () => {
  const { state, clock, prefix } = setup();
  clock.ms = aheadOfRealTime(250);
  const setAt = clock.ms;
  await state.set('ttl', 1, 1500);
  await state.set('forever', 2);
  const withTtl = await rawItem(`chat#${prefix}#kv#ttl`, 'kv');
  assert.equal(withTtl?.[TABLE_KEYS.ttlAttribute], Math.ceil((setAt + 1500) / 1000));
  const withoutTtl = await rawItem(`chat#${prefix}#kv#forever`, 'kv');
  assert.ok(withoutTtl);
  assert.equal(TABLE_KEYS.ttlAttribute in withoutTtl, false);
});

test('expired keys read as absent and can be set again by setIfNotExists', async () => {
  const { state, clock } = setup();
  await state.set('dedupe', true, 1000);
  assert.equal(await state.get('dedupe'), true);
  assert.equal(await state.setIfNotExists('dedupe', 'again', 1000), false, 'live key is kept');

  clock.ms += 2000;
  assert.equal(await state.get('dedupe'), null, 'expired key reads as absent');
  assert.equal(await state.setIfNotExists('dedupe', 'fresh', 60_000), true, 'expired key can be taken');
  assert.equal(await state.get('dedupe'), 'fresh');
  assert.equal(await state.setIfNotExists('dedupe', 'third', 60_000), false);
  assert.equal(await state.get('dedupe'), 'fresh');
});

test('setIfNotExists: a key without TTL never expires; a missing key is created', async () => {
  const { state, clock } = setup();
  assert.equal(await state.setIfNotExists('new', { n: 1 }), true);
  clock.ms += 365 * 24 * 3600 * 1000;
  assert.equal(await state.setIfNotExists('new', { n: 2 }), false);
  assert.deepEqual(await state.get('new'), { n: 1 });
});

test('setIfNotExists: exactly one of many concurrent callers wins', async () => {
  const { state } = setup();
  const results = await Promise.all(Array.from({ length: 10 }, (_, i) => state.setIfNotExists('race', i, 60_000)));
  assert.equal(results.filter(Boolean).length, 1);
});

// ---------------------------------------------------------------------------------------------
// Locks

test('acquireLock returns a token-bearing lock and blocks a second acquirer', async () => {
  const { state, clock } = setup();
  const lock = await state.acquireLock('thread-1', 30_000);
  assert.ok(lock);
  assert.equal(lock.threadId, 'thread-1');
  assert.equal(lock.expiresAt, clock.ms + 30_000);
  assert.ok(lock.token.length >= 16);
  assert.equal(await state.acquireLock('thread-1', 30_000), null);
  assert.ok(await state.acquireLock('thread-2', 30_000), 'locks are per thread');
});

test('lock contention: of two simultaneous acquireLock calls exactly one wins', async () => {
  const { state } = setup();
  for (let i = 0; i < 10; i++) {
    const [a, b] = await Promise.all([state.acquireLock(`t${i}`, 30_000), state.acquireLock(`t${i}`, 30_000)]);
    assert.equal([a, b].filter((lock) => lock !== null).length, 1, `round ${i}`);
  }
});

test('a lock expired by time can be taken; the stale holder can neither extend nor release it', async () => {
  const { state, clock } = setup();
  const stale = await state.acquireLock('t', 1000);
  assert.ok(stale);
  clock.ms += 1001;
  assert.equal(await state.extendLock(stale, 30_000), false, 'an expired lock is not extended');

  const fresh = await state.acquireLock('t', 30_000);
  assert.ok(fresh, 'an expired lock can be acquired');
  assert.notEqual(fresh.token, stale.token);
  assert.equal(await state.extendLock(stale, 30_000), false, 'stale token');
  await state.releaseLock(stale);
  assert.equal(await state.acquireLock('t', 30_000), null, 'stale release was a no-op');
  assert.equal(await state.extendLock(fresh, 30_000), true);
});

test('extendLock extends only a lock held with that token and never creates one', async () => {
  const { state, clock, prefix } = setup();
  const lock = await state.acquireLock('t', 1000);
  assert.ok(lock);
  clock.ms += 800;
  assert.equal(await state.extendLock(lock, 1000), true);
  clock.ms += 800; // past the original expiry, within the extended one
  assert.equal(await state.acquireLock('t', 1000), null, 'still held after extension');
  assert.equal(await state.extendLock({ ...lock, token: 'wrong' }, 1000), false, 'wrong token');

  const never = { threadId: 'never-locked', token: 'x', expiresAt: clock.ms + 1000 };
  assert.equal(await state.extendLock(never, 1000), false);
  assert.equal(await rawItem(`chat#${prefix}#lock#never-locked`, 'lock'), undefined, 'nothing created');
});

test('releaseLock with a wrong token is a no-op; with the right token frees the lock', async () => {
  const { state } = setup();
  const lock = await state.acquireLock('t', 30_000);
  assert.ok(lock);
  await state.releaseLock({ ...lock, token: 'wrong' });
  assert.equal(await state.acquireLock('t', 30_000), null);
  await state.releaseLock(lock);
  assert.ok(await state.acquireLock('t', 30_000));
});

test('forceReleaseLock frees a lock regardless of its token', async () => {
  const { state } = setup();
  const old = await state.acquireLock('t', 30_000);
  assert.ok(old);
  await state.forceReleaseLock('t');
  const next = await state.acquireLock('t', 30_000);
  assert.ok(next);
  await state.releaseLock(old); // the old holder's release is now a no-op
  assert.equal(await state.acquireLock('t', 30_000), null);
  await state.forceReleaseLock('unlocked-thread');
});

// ---------------------------------------------------------------------------------------------
// Subscriptions

test('subscribe / isSubscribed / unsubscribe', async () => {
  const { state } = setup();
  assert.equal(await state.isSubscribed('slack:C1:1.2'), false);
  await state.subscribe('slack:C1:1.2');
  await state.subscribe('slack:C1:1.2');
  assert.equal(await state.isSubscribed('slack:C1:1.2'), true);
  assert.equal(await state.isSubscribed('slack:C1:9.9'), false);
  await state.unsubscribe('slack:C1:1.2');
  assert.equal(await state.isSubscribed('slack:C1:1.2'), false);
  await state.unsubscribe('slack:C1:1.2');
});

// ---------------------------------------------------------------------------------------------
// Lists

test('getList returns values in insertion order, or [] for a missing list', async () => {
  const { state } = setup();
  assert.deepEqual(await state.getList('missing'), []);
  await state.appendToList('l', 'a');
  await state.appendToList('l', { b: ['', null] });
  await state.appendToList('l', 3);
  assert.deepEqual(await state.getList('l'), ['a', { b: ['', null] }, 3]);
});

test('50 concurrent appendToList calls lose nothing', async () => {
  const { state } = setup();
  await Promise.all(Array.from({ length: 50 }, (_, i) => state.appendToList('l', i, { ttlMs: 60_000 })));
  const list = await state.getList<number>('l');
  assert.deepEqual(
    [...list].sort((a, b) => a - b),
    Array.from({ length: 50 }, (_, i) => i),
  );
});

test('trimming keeps the newest entries', async () => {
  const { state } = setup();
  for (let i = 1; i <= 15; i++) await state.appendToList('l', i, { maxLength: 10 });
  assert.deepEqual(await state.getList('l'), [6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);

  // Shrinking to one entry, as the SDK's user-history delete does with its tombstone.
  await state.appendToList('l', 'tombstone', { maxLength: 1 });
  assert.deepEqual(await state.getList('l'), ['tombstone']);
});

test('trimming more entries than one update can remove at once', async () => {
  const { state } = setup();
  await Promise.all(Array.from({ length: 250 }, (_, i) => state.appendToList('big', i)));
  await state.appendToList('big', 'last', { maxLength: 2 });
  const list = await state.getList('big');
  assert.equal(list.length, 2);
  assert.equal(list[1], 'last');
});

test('concurrent appends with maxLength end with exactly maxLength distinct entries', async () => {
  const { state } = setup();
  await Promise.all(Array.from({ length: 30 }, (_, i) => state.appendToList('l', i, { maxLength: 10 })));
  const list = await state.getList('l');
  assert.equal(list.length, 10);
  assert.equal(new Set(list).size, 10);
});

test('appendToList refreshes the TTL; an expired list reads as [] and restarts on append', async () => {
  const { state, clock, prefix } = setup();
  await state.appendToList('l', 'a', { ttlMs: 10_000 });
  clock.ms += 8000;
  await state.appendToList('l', 'b', { ttlMs: 10_000 });
  const item = await rawItem(`chat#${prefix}#list#l`, 'list');
  assert.equal(item?.[TABLE_KEYS.ttlAttribute], Math.ceil((clock.ms + 10_000) / 1000));
  clock.ms += 8000; // 16 s after 'a', 8 s after the refresh
  assert.deepEqual(await state.getList('l'), ['a', 'b']);

  clock.ms += 20_000;
  assert.deepEqual(await state.getList('l'), []);
  await state.appendToList('l', 'c');
  assert.deepEqual(await state.getList('l'), ['c']);
});

// ---------------------------------------------------------------------------------------------
// Queue

test('enqueue returns the depth; dequeue pops FIFO; an empty queue yields null', async () => {
  const { state, clock } = setup();
  assert.equal(await state.dequeue('t'), null);
  assert.equal(await state.queueDepth('t'), 0);
  assert.equal(await state.enqueue('t', entry('m1', clock.ms), 10), 1);
  assert.equal(await state.enqueue('t', entry('m2', clock.ms), 10), 2);
  assert.equal(await state.enqueue('t', entry('m3', clock.ms), 10), 3);
  assert.equal(await state.queueDepth('t'), 3);
  assert.equal(idOf(await state.dequeue('t')), 'm1');
  assert.equal(idOf(await state.dequeue('t')), 'm2');
  assert.equal(await state.queueDepth('t'), 1);
  assert.equal(idOf(await state.dequeue('t')), 'm3');
  assert.equal(await state.dequeue('t'), null);
  assert.equal(await state.queueDepth('t'), 0);
  assert.equal(await state.queueDepth('other'), 0, 'queues are per thread');
});

test('a full queue drops its oldest entries, like the memory adapter', async () => {
  const { state, clock } = setup();
  const depths = [];
  for (let i = 1; i <= 5; i++) depths.push(await state.enqueue('t', entry(`m${i}`, clock.ms), 3));
  assert.deepEqual(depths, [1, 2, 3, 3, 3]);
  const popped = [await state.dequeue('t'), await state.dequeue('t'), await state.dequeue('t')].map(idOf);
  assert.deepEqual(popped, ['m3', 'm4', 'm5']);
  assert.equal(await state.dequeue('t'), null);
});

test('20 concurrent dequeues of 20 entries return each entry exactly once', async () => {
  const { state, clock } = setup();
  for (let i = 0; i < 20; i++) await state.enqueue('t', entry(`m${i}`, clock.ms), 100);
  const popped = await Promise.all(Array.from({ length: 20 }, () => state.dequeue('t')));
  const ids = popped.map(idOf);
  assert.ok(ids.every((id) => id !== undefined));
  assert.equal(new Set(ids).size, 20);
  assert.equal(await state.dequeue('t'), null);
});

test('queue entries store a Message through its JSON form, which the SDK rehydrates', async () => {
  const { state, clock } = setup();
  const message = chatMessage('m1', 'test:C1:T1', 'hello *there*');
  await state.enqueue('t', { enqueuedAt: clock.ms, expiresAt: clock.ms + 1000, message }, 10);
  const popped = await state.dequeue('t');
  assert.ok(popped);
  assert.deepEqual(popped.message, JSON.parse(JSON.stringify(message)));
  const revived = Message.fromJSON(popped.message as unknown as Parameters<typeof Message.fromJSON>[0]);
  assert.equal(revived.text, 'hello *there*');
  assert.equal(revived.metadata.dateSent.getTime(), message.metadata.dateSent.getTime());
});

test('a queue whose entries have all gone stale reads as empty and restarts', async () => {
  const { state, clock } = setup();
  await state.enqueue('t', { ...entry('old', clock.ms), expiresAt: clock.ms + 1000 }, 10);
  clock.ms += 120_000; // past the entry and the queue's minimum lifetime
  assert.equal(await state.queueDepth('t'), 0);
  assert.equal(await state.dequeue('t'), null);
  assert.equal(await state.enqueue('t', entry('new', clock.ms), 10), 1);
  assert.equal(idOf(await state.dequeue('t')), 'new');
});

// ---------------------------------------------------------------------------------------------
// Key layout

test('keys are namespaced under chat# and by keyPrefix', async () => {
  const noPrefix = createDynamoDbStateAdapter({ client, tableName: TABLE });
  const key = `layout-${randomUUID()}`;
  await noPrefix.set(key, 'v');
  await noPrefix.subscribe(key);
  await noPrefix.appendToList(key, 'v');
  await noPrefix.enqueue(key, entry('m', Date.now()), 10);
  const lock = await noPrefix.acquireLock(key, 30_000);
  assert.ok(lock);
  for (const kind of ['kv', 'sub', 'list', 'queue', 'lock']) {
    assert.ok(await rawItem(`chat#${kind}#${key}`, kind), `${kind} item`);
  }

  const a = setup().state;
  const b = setup().state;
  await a.set('shared', 'a');
  assert.equal(await b.get('shared'), null);
  assert.ok(await a.acquireLock('shared', 30_000));
  assert.ok(await b.acquireLock('shared', 30_000));
});

// ---------------------------------------------------------------------------------------------
// The Chat SDK end to end over this adapter (no platform adapter: a minimal stub stands in for
// one, since Chat.processMessage accepts any Adapter).

function chatMessage(id: string, threadId: string, text: string): Message {
  return new Message({
    id,
    threadId,
    text,
    formatted: parseMarkdown(text),
    raw: { id },
    author: { userId: 'U1', userName: 'alice', fullName: 'Alice', isBot: false, isMe: false },
    metadata: { dateSent: new Date('2025-01-01T00:00:00Z'), edited: false },
    attachments: [],
  });
}

function stubAdapter(): Adapter {
  return {
    name: 'test',
    userName: 'bot',
    persistThreadHistory: true,
    channelIdFromThreadId: (threadId: string) => threadId.split(':').slice(0, 2).join(':'),
  } as unknown as Adapter;
}

test('Chat SDK: dedupe, mention, subscription, thread state, history and queueing', async () => {
  const { state } = setup();
  const chat = new Chat({ adapters: {}, state, userName: 'bot', logger: 'silent', concurrency: 'queue' });
  await chat.initialize();
  const adapter = stubAdapter();
  const threadId = 'test:C1:T1';
  const calls: { handler: string; id: string; skipped: string[]; count?: unknown }[] = [];
  let enteredSlow!: () => void;
  const slowEntered = new Promise<void>((resolve) => (enteredSlow = resolve));
  let releaseSlow!: () => void;
  const slowReleased = new Promise<void>((resolve) => (releaseSlow = resolve));

  chat.onNewMention(async (thread, message) => {
    calls.push({ handler: 'mention', id: message.id, skipped: [] });
    await thread.subscribe();
    await thread.setState({ count: 1 });
  });
  chat.onSubscribedMessage(async (thread, message, context?: MessageContext) => {
    const current = (await thread.state) as { count: number } | null;
    calls.push({ handler: 'subscribed', id: message.id, skipped: context?.skipped.map((m) => m.id) ?? [], count: current?.count });
    if (message.id === 'm3') {
      enteredSlow();
      await slowReleased;
    }
  });

  await chat.processMessage(adapter, threadId, chatMessage('m1', threadId, '@bot hello'));
  await chat.processMessage(adapter, threadId, chatMessage('m1', threadId, '@bot hello')); // duplicate
  assert.equal(await state.isSubscribed(threadId), true);
  await chat.processMessage(adapter, threadId, chatMessage('m2', threadId, 'follow-up'));

  // m3 holds the thread lock; m4 and m5 arrive meanwhile and are queued, then drained together.
  const slow = chat.processMessage(adapter, threadId, chatMessage('m3', threadId, 'slow one'));
  await slowEntered;
  await chat.processMessage(adapter, threadId, chatMessage('m4', threadId, 'queued 1'));
  await chat.processMessage(adapter, threadId, chatMessage('m5', threadId, 'queued 2'));
  assert.equal(await state.queueDepth(threadId), 2);
  releaseSlow();
  await slow;

  assert.deepEqual(calls, [
    { handler: 'mention', id: 'm1', skipped: [] },
    { handler: 'subscribed', id: 'm2', skipped: [], count: 1 },
    { handler: 'subscribed', id: 'm3', skipped: [], count: 1 },
    { handler: 'subscribed', id: 'm5', skipped: ['m4'], count: 1 },
  ]);
  assert.equal(await state.queueDepth(threadId), 0);
  assert.ok(await state.acquireLock(threadId, 1000), 'the SDK released the thread lock');
  const history = await state.getList<{ id: string }>(`msg-history:${threadId}`);
  assert.deepEqual(
    history.map((m) => m.id),
    ['m1', 'm2', 'm3', 'm4', 'm5'],
  );
  await chat.shutdown();
});
