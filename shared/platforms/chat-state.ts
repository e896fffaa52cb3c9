// A Chat SDK StateAdapter backed by the project's single DynamoDB table.
//
// Layout: every item lives under its own partition key `chat#[<keyPrefix>#]<kind>#<id>` with the
// kind as sort key, so chat state never collides with other items in the table:
//   kv     { value }                      set/get/setIfNotExists/delete (dedupe keys, thread state)
//   lock   { token, lockExpiresAtMs }     per-thread locks
//   sub    {}                             thread subscriptions
//   list   { items: string[] }            appendToList/getList (message history)
//   queue  { items: string[] }            enqueue/dequeue (concurrency strategies)
//
// Values are stored as JSON strings, never as native DynamoDB maps: JSON round-trips exactly what
// the other adapters (redis, pg) return — empty strings, numbers beyond DynamoDB's 38 digits,
// `undefined` dropped, class instances through their toJSON (the SDK enqueues Message instances
// and rehydrates the plain JSON on dequeue) — whatever marshalling options the caller's document
// client was built with.
//
// Expiry: `expiresAt` (TABLE_KEYS.ttlAttribute) is epoch seconds, rounded up. DynamoDB TTL deletes
// lazily (and DynamoDB Local never does), so every read and every conditional write treats an
// item whose expiresAt is not in the future as absent. Locks also keep millisecond precision
// because the SDK reasons about lock lifetimes in ms.
import { randomUUID } from 'node:crypto';
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Lock, QueueEntry, StateAdapter } from 'chat';
import { chatStateKey, TABLE_KEYS, type ChatStateKind as Kind } from '../table.ts';
import { isConditionalCheckFailed } from '../aws/errors.ts';
import { retryOnConflict, TRY_AGAIN } from '../aws/retry.ts';

export interface DynamoDbStateAdapterOptions {
  client: DynamoDBDocumentClient;
  tableName: string;
  /** Namespaces every key, e.g. to let two bots or environments share one table. */
  keyPrefix?: string;
  /** Clock in epoch milliseconds; injectable so tests can move time. Defaults to Date.now. */
  now?: () => number;
}

type Item = Record<string, unknown>;

interface Context {
  client: DynamoDBDocumentClient;
  tableName: string;
  now: () => number;
  key(kind: Kind, id: string): Item;
}

// Expression aliases. Always aliased: the key names come from TABLE_KEYS, and names such as
// `value` and `items` are DynamoDB reserved words.
const PK = '#pk';
const EXP = '#exp';
const ITEMS = '#items';
const BASE_NAMES = { [PK]: TABLE_KEYS.partitionKey, [EXP]: TABLE_KEYS.ttlAttribute };

/** Condition fragment: the item is missing or expired, i.e. free to be (re)created. */
const ABSENT = `attribute_not_exists(${PK}) OR ${EXP} <= :now`;
/** Condition fragment: the item is missing or still live (has no expiry or expires later). */
const NOT_EXPIRED = `attribute_not_exists(${PK}) OR attribute_not_exists(${EXP}) OR ${EXP} > :now`;

/** Like Redis, the queue outlives its newest entry and lives at least this long. */
const QUEUE_MIN_TTL_MS = 60_000;
/** Keeps a trim's REMOVE expression well under DynamoDB's 4 KB expression limit. */
const MAX_REMOVES_PER_UPDATE = 100;

export function createDynamoDbStateAdapter(options: DynamoDbStateAdapterOptions): StateAdapter {
  const ctx: Context = {
    client: options.client,
    tableName: options.tableName,
    now: options.now ?? Date.now,
    key: (kind, id) => chatStateKey(kind, id, options.keyPrefix),
  };
  return {
    // The document client talks plain HTTPS and is owned by the caller: nothing to open or close.
    connect: async () => {},
    disconnect: async () => {},

    get: (key) => getValue(ctx, key),
    set: (key, value, ttlMs) => setValue(ctx, key, value, ttlMs),
    setIfNotExists: (key, value, ttlMs) => setValueIfAbsent(ctx, key, value, ttlMs),
    delete: (key) => deleteItem(ctx, ctx.key('kv', key)),

    acquireLock: (threadId, ttlMs) => acquireLock(ctx, threadId, ttlMs),
    extendLock: (lock, ttlMs) => extendLock(ctx, lock, ttlMs),
    releaseLock: (lock) => releaseLock(ctx, lock),
    forceReleaseLock: (threadId) => deleteItem(ctx, ctx.key('lock', threadId)),

    subscribe: (threadId) => putItem(ctx, ctx.key('sub', threadId)),
    unsubscribe: (threadId) => deleteItem(ctx, ctx.key('sub', threadId)),
    isSubscribed: async (threadId) => (await readLive(ctx, ctx.key('sub', threadId))) !== undefined,

    appendToList: (key, value, opts) => appendToList(ctx, key, value, opts),
    getList: async (key) => (await readList(ctx, ctx.key('list', key))).map((s) => decode(s)),

    enqueue: (threadId, entry, maxSize) => enqueue(ctx, threadId, entry, maxSize),
    dequeue: (threadId) => dequeue(ctx, threadId),
    queueDepth: async (threadId) => (await readList(ctx, ctx.key('queue', threadId))).length,
  };
}

// ---------------------------------------------------------------------------------------------
// Key-value

async function getValue<T>(ctx: Context, key: string): Promise<T | null> {
  const item = await readLive(ctx, ctx.key('kv', key));
  return item === undefined ? null : decode<T>(item.value);
}

async function setValue(ctx: Context, key: string, value: unknown, ttlMs?: number): Promise<void> {
  await putItem(ctx, { ...ctx.key('kv', key), value: encode(value), ...expiry(ctx, ttlMs) });
}

async function setValueIfAbsent(ctx: Context, key: string, value: unknown, ttlMs?: number): Promise<boolean> {
  const item = { ...ctx.key('kv', key), value: encode(value), ...expiry(ctx, ttlMs) };
  return succeeds(() => putItem(ctx, item, ABSENT, { ':now': nowSeconds(ctx) }));
}

// ---------------------------------------------------------------------------------------------
// Locks: a random token per acquisition; every change is a conditional write on that token, so a
// holder whose lock expired or was force-released can neither extend nor release its successor's.

const TOKEN_NAME = { '#token': 'token' };
const LOCK_EXP_NAME = { '#lockExp': 'lockExpiresAtMs' };

async function acquireLock(ctx: Context, threadId: string, ttlMs: number): Promise<Lock | null> {
  const now = ctx.now();
  const lock: Lock = { threadId, token: randomUUID(), expiresAt: now + ttlMs };
  const item = {
    ...ctx.key('lock', threadId),
    token: lock.token,
    lockExpiresAtMs: lock.expiresAt,
    [TABLE_KEYS.ttlAttribute]: toEpochSeconds(lock.expiresAt),
  };
  // A lock that has run out of time is free even if its item still exists.
  const acquired = await succeeds(() =>
    ctx.client.send(
      new PutCommand({
        TableName: ctx.tableName,
        Item: item,
        ConditionExpression: `attribute_not_exists(${PK}) OR #lockExp <= :nowMs`,
        ExpressionAttributeNames: { [PK]: TABLE_KEYS.partitionKey, ...LOCK_EXP_NAME },
        ExpressionAttributeValues: { ':nowMs': now },
      }),
    ),
  );
  return acquired ? lock : null;
}

async function extendLock(ctx: Context, lock: Lock, ttlMs: number): Promise<boolean> {
  const now = ctx.now();
  // `#token = :token` fails on a missing item, so this never creates a lock.
  return succeeds(() =>
    ctx.client.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: ctx.key('lock', lock.threadId),
        UpdateExpression: `SET #lockExp = :newExpMs, ${EXP} = :newExp`,
        ConditionExpression: '#token = :token AND #lockExp > :nowMs',
        ExpressionAttributeNames: { ...TOKEN_NAME, ...LOCK_EXP_NAME, [EXP]: TABLE_KEYS.ttlAttribute },
        ExpressionAttributeValues: {
          ':token': lock.token,
          ':nowMs': now,
          ':newExpMs': now + ttlMs,
          ':newExp': toEpochSeconds(now + ttlMs),
        },
      }),
    ),
  );
}

async function releaseLock(ctx: Context, lock: Lock): Promise<void> {
  // A mismatched token means someone else holds the lock now: releasing is then a no-op.
  await succeeds(() =>
    ctx.client.send(
      new DeleteCommand({
        TableName: ctx.tableName,
        Key: ctx.key('lock', lock.threadId),
        ConditionExpression: '#token = :token',
        ExpressionAttributeNames: TOKEN_NAME,
        ExpressionAttributeValues: { ':token': lock.token },
      }),
    ),
  );
}

// ---------------------------------------------------------------------------------------------
// Lists and queues.
//
// Design choice: ONE item per list holding a DynamoDB list of JSON strings, rather than one item
// per entry. Appends are a single `list_append` update — DynamoDB serialises updates to one item,
// so concurrent appends never lose entries and commit order is insertion order. The list-wide TTL
// refresh the SDK asks for ("refreshes TTL") is one attribute on the same write; with an item per
// entry it would mean rewriting every entry on each append, or leaving old entries to TTL out from
// under a live list. getList and dequeue are a single request each. The cost is DynamoDB's 400 KB
// item limit: fine for the SDK's bounded lists (history capped at maxLength, queues at maxSize),
// but a list that outgrows it makes appendToList throw.

interface AppendOptions {
  maxLength?: number;
  /** Epoch seconds; undefined keeps the current expiry (as Redis RPUSH does). */
  expiresAt?: number;
}

async function appendToList(ctx: Context, key: string, value: unknown, options?: { maxLength?: number; ttlMs?: number }): Promise<void> {
  const ttl = expiry(ctx, options?.ttlMs)[TABLE_KEYS.ttlAttribute];
  await appendBounded(ctx, ctx.key('list', key), encode(value), { maxLength: options?.maxLength, expiresAt: ttl });
}

// Matches the memory and Redis adapters: a full queue drops its OLDEST entries and the new one is
// always kept (the SDK itself checks queueDepth first when configured with onQueueFull
// "drop-newest"). Entry expiry is left to the SDK, which discards stale entries on dequeue; the
// item's own TTL only garbage-collects a queue whose newest entry has gone stale.
async function enqueue(ctx: Context, threadId: string, entry: QueueEntry, maxSize: number): Promise<number> {
  const expiresAt = toEpochSeconds(Math.max(entry.expiresAt, ctx.now() + QUEUE_MIN_TTL_MS));
  return appendBounded(ctx, ctx.key('queue', threadId), encode(entry), {
    maxLength: maxSize > 0 ? maxSize : undefined,
    expiresAt,
  });
}

// Pops the head in one conditional update: DynamoDB applies the two REMOVEs of two concurrent
// dequeues one after the other, so each returns a different entry. UPDATED_OLD returns the list as
// it was before the removal, whose first element is the one just removed.
async function dequeue(ctx: Context, threadId: string): Promise<QueueEntry | null> {
  try {
    const result = await ctx.client.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: ctx.key('queue', threadId),
        UpdateExpression: `REMOVE ${ITEMS}[0]`,
        ConditionExpression: `size(${ITEMS}) > :zero AND ${EXP} > :now`,
        ExpressionAttributeNames: { [ITEMS]: 'items', [EXP]: TABLE_KEYS.ttlAttribute },
        ExpressionAttributeValues: { ':zero': 0, ':now': nowSeconds(ctx) },
        ReturnValues: 'UPDATED_OLD',
      }),
    );
    const head = asStringList(result.Attributes?.items)[0];
    return head === undefined ? null : decode<QueueEntry>(head);
  } catch (error) {
    if (isConditionalCheckFailed(error)) return null; // missing, empty or expired
    throw error;
  }
}

/** Appends, then trims to maxLength keeping the newest. Returns the length after the trim. */
async function appendBounded(ctx: Context, key: Item, encoded: string, options: AppendOptions): Promise<number> {
  // An append only tries again when a concurrent writer revives an expired list.
  return retryOnConflict(`appendToList on ${String(key[TABLE_KEYS.partitionKey])}`, async () => {
    const length = await appendToLiveList(ctx, key, encoded, options.expiresAt);
    if (length === undefined) {
      // The stored list has expired: start a new one in its place rather than append to it.
      if (await replaceExpiredList(ctx, key, encoded, options.expiresAt)) return 1;
      return TRY_AGAIN; // someone revived it in between: append to theirs
    }
    const { maxLength } = options;
    if (!maxLength || length <= maxLength) return length;
    await trimFront(ctx, key, length, maxLength);
    return maxLength;
  });
}

/** Returns the new length, or undefined when the existing list has expired. */
async function appendToLiveList(ctx: Context, key: Item, encoded: string, expiresAt: number | undefined): Promise<number | undefined> {
  const setExpiry = expiresAt === undefined ? '' : `, ${EXP} = :exp`;
  try {
    const result = await ctx.client.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: key,
        UpdateExpression: `SET ${ITEMS} = list_append(if_not_exists(${ITEMS}, :empty), :new)${setExpiry}`,
        ConditionExpression: NOT_EXPIRED,
        ExpressionAttributeNames: { ...BASE_NAMES, [ITEMS]: 'items' },
        ExpressionAttributeValues: {
          ':empty': [],
          ':new': [encoded],
          ':now': nowSeconds(ctx),
          ...(expiresAt === undefined ? {} : { ':exp': expiresAt }),
        },
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    return asStringList(result.Attributes?.items).length;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return undefined;
    throw error;
  }
}

async function replaceExpiredList(ctx: Context, key: Item, encoded: string, expiresAt: number | undefined): Promise<boolean> {
  const item = { ...key, items: [encoded], ...(expiresAt === undefined ? {} : { [TABLE_KEYS.ttlAttribute]: expiresAt }) };
  return succeeds(() => putItem(ctx, item, `${EXP} <= :now`, { ':now': nowSeconds(ctx) }));
}

// Removes the oldest entries by index, conditioned on the list still having the length we saw.
// Removal by index is content-independent, so whenever the condition holds, the result is exactly
// the newest maxLength entries. If it fails, a concurrent append changed the list after us; that
// appender observed the newer length and trims for both of us, so giving up loses nothing.
async function trimFront(ctx: Context, key: Item, observedLength: number, maxLength: number): Promise<void> {
  let length = observedLength;
  while (length > maxLength) {
    const count = Math.min(length - maxLength, MAX_REMOVES_PER_UPDATE);
    const paths = Array.from({ length: count }, (_, i) => `${ITEMS}[${i}]`).join(', ');
    const trimmed = await succeeds(() =>
      ctx.client.send(
        new UpdateCommand({
          TableName: ctx.tableName,
          Key: key,
          UpdateExpression: `REMOVE ${paths}`,
          ConditionExpression: `size(${ITEMS}) = :length`,
          ExpressionAttributeNames: { [ITEMS]: 'items' },
          ExpressionAttributeValues: { ':length': length },
        }),
      ),
    );
    if (!trimmed) return;
    length -= count;
  }
}

async function readList(ctx: Context, key: Item): Promise<string[]> {
  const item = await readLive(ctx, key);
  return item === undefined ? [] : asStringList(item.items);
}

// ---------------------------------------------------------------------------------------------
// Plumbing

/** Strongly consistent read that treats an expired item as absent. */
async function readLive(ctx: Context, key: Item): Promise<Item | undefined> {
  const { Item: item } = await ctx.client.send(new GetCommand({ TableName: ctx.tableName, Key: key, ConsistentRead: true }));
  if (item === undefined) return undefined;
  const expiresAt = item[TABLE_KEYS.ttlAttribute];
  return typeof expiresAt === 'number' && expiresAt * 1000 <= ctx.now() ? undefined : item;
}

async function putItem(ctx: Context, item: Item, condition?: string, values?: Item): Promise<void> {
  await ctx.client.send(
    new PutCommand({
      TableName: ctx.tableName,
      Item: item,
      ...(condition && { ConditionExpression: condition, ExpressionAttributeNames: namesIn(condition) }),
      ...(values && { ExpressionAttributeValues: values }),
    }),
  );
}

async function deleteItem(ctx: Context, key: Item): Promise<void> {
  await ctx.client.send(new DeleteCommand({ TableName: ctx.tableName, Key: key }));
}

/** DynamoDB rejects unused ExpressionAttributeNames, so pass only the aliases a condition uses. */
function namesIn(expression: string): Record<string, string> {
  return Object.fromEntries(Object.entries(BASE_NAMES).filter(([alias]) => expression.includes(alias)));
}

/** Runs a conditional write; false when its condition did not hold, other errors propagate. */
async function succeeds(write: () => Promise<unknown>): Promise<boolean> {
  try {
    await write();
    return true;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return false;
    throw error;
  }
}

function expiry(ctx: Context, ttlMs: number | undefined): { [TABLE_KEYS.ttlAttribute]?: number } {
  // Like the other adapters, a missing or zero ttlMs means "never expires".
  return ttlMs ? { [TABLE_KEYS.ttlAttribute]: toEpochSeconds(ctx.now() + ttlMs) } : {};
}

/** Rounded up, so an item never expires before the time it was asked to live until. */
function toEpochSeconds(ms: number): number {
  return Math.ceil(ms / 1000);
}

/** Fractional on purpose: `expiresAt <= now/1000` is exactly "expired at or before now". */
function nowSeconds(ctx: Context): number {
  return ctx.now() / 1000;
}

function encode(value: unknown): string {
  // JSON.stringify(undefined) is undefined; store null so get() returns null like a missing key.
  return JSON.stringify(value) ?? 'null';
}

function decode<T>(stored: unknown): T {
  return JSON.parse(String(stored)) as T;
}

function asStringList(value: unknown): string[] {
  return Array.isArray(value) ? value.map(String) : [];
}
