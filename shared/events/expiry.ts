// The agent's periodic event files run out. Each keeps firing for `agentPeriodicEventDays` after a
// person's run saved it, or after a person last wrote in one of its threads (the thread whose run
// wrote it, and each thread its firings ran in); with nobody around it stops, so an agent cannot
// leave work running forever. An operator's periodic files never run out.
//
// The agent keeps at most `maxAgentPeriodicEventsPerChannel` of them in force in a channel.
//
// Items of the state table: `event-expiry` / the file's key holds `runsUntil` (epoch ms); one item per
// thread of a file, `event-threads#<threadId>` / the file's key, lets dispatch find the files a
// person's message renews; `event-periodic` / the channel's events folder holds the set of its files
// in force, taken on condition that the set has room, so files saved at once cannot all get in.
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionalCheckFailed } from '../aws/errors.ts';
import { queryPartition } from '../aws/dynamodb.ts';
import { forChat } from '../support/display.ts';
import { eventExpiryKey, eventThreadKey, eventThreadsPartition, periodicInForceKey } from '../table.ts';

export type ExpiryDeps = { db: DynamoDBDocumentClient; tableName: string };

const DAY_MS = 86_400_000;
/** Records outlive what they describe a while, then DynamoDB's TTL removes them. */
const ttlAfter = (ms: number) => Math.ceil(ms / 1000) + 30 * 86_400;

export interface Expiry {
  runsUntil: number;
}

export async function expiryOf(deps: ExpiryDeps, key: string): Promise<Expiry | undefined> {
  const out = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: eventExpiryKey(key), ConsistentRead: true }));
  return typeof out.Item?.runsUntil === 'number' ? { runsUntil: out.Item.runsUntil } : undefined;
}

export async function setExpiry(deps: ExpiryDeps, key: string, runsUntil: number): Promise<void> {
  await deps.db.send(
    new PutCommand({ TableName: deps.tableName, Item: { ...eventExpiryKey(key), runsUntil, expiresAt: ttlAfter(runsUntil) } }),
  );
}

/**
 * A new version of an agent's periodic file: saved by a person's own run (`renew`), its days start
 * again; saved by any other run, it keeps the date it had (a run an event started cannot renew what
 * started it), or gets its days for a file new to the channel. Returns when it stops.
 */
export async function startExpiry(deps: ExpiryDeps, key: string, renew: boolean, days: number, nowMs: number): Promise<number> {
  const runsUntil = nowMs + days * DAY_MS;
  if (renew) {
    await setExpiry(deps, key, runsUntil);
    return runsUntil;
  }
  try {
    await deps.db.send(
      new PutCommand({
        TableName: deps.tableName,
        Item: { ...eventExpiryKey(key), runsUntil, expiresAt: ttlAfter(runsUntil) },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    return runsUntil;
  } catch (error) {
    if (!isConditionalCheckFailed(error)) throw error;
    return (await expiryOf(deps, key))?.runsUntil ?? runsUntil;
  }
}

/** The file is gone, or is an operator's now: it no longer runs out. */
export async function endExpiry(deps: ExpiryDeps, key: string): Promise<void> {
  await deps.db.send(new DeleteCommand({ TableName: deps.tableName, Key: eventExpiryKey(key) }));
}

/** A thread of the file's: a person writing there renews it. */
export async function linkThread(deps: ExpiryDeps, threadId: string, key: string, runsUntil: number): Promise<void> {
  await deps.db.send(
    new PutCommand({ TableName: deps.tableName, Item: { ...eventThreadKey(threadId, key), expiresAt: ttlAfter(runsUntil) } }),
  );
}

/**
 * A person wrote in `threadId`: every file of the agent's that this thread belongs to, and that has
 * not stopped yet, runs `days` from now. Returns the files renewed.
 */
export async function renewForThread(deps: ExpiryDeps, threadId: string, days: number, nowMs: number): Promise<string[]> {
  const runsUntil = nowMs + days * DAY_MS;
  const renewed: string[] = [];
  for (const item of await queryPartition(deps, eventThreadsPartition(threadId))) {
    const key = item.sk as string;
    try {
      await deps.db.send(
        new UpdateCommand({
          TableName: deps.tableName,
          Key: eventExpiryKey(key),
          UpdateExpression: 'SET runsUntil = :until, expiresAt = :ttl',
          ConditionExpression: 'runsUntil > :now AND runsUntil < :until',
          ExpressionAttributeValues: { ':until': runsUntil, ':ttl': ttlAfter(runsUntil), ':now': nowMs },
        }),
      );
      await linkThread(deps, threadId, key, runsUntil);
      renewed.push(key);
    } catch (error) {
      // Stopped already, gone, or an operator's now: a reply does not bring it back.
      if (!isConditionalCheckFailed(error)) throw error;
    }
  }
  return renewed;
}

async function addInForce(deps: ExpiryDeps, folder: string, key: string, max: number): Promise<boolean> {
  try {
    await deps.db.send(
      new UpdateCommand({
        TableName: deps.tableName,
        Key: periodicInForceKey(folder),
        UpdateExpression: 'ADD #keys :key',
        ConditionExpression: 'attribute_not_exists(#keys) OR size(#keys) < :max OR contains(#keys, :one)',
        ExpressionAttributeNames: { '#keys': 'keys' },
        ExpressionAttributeValues: { ':key': new Set([key]), ':one': key, ':max': max },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return false;
    throw error;
  }
}

/**
 * Puts an agent's periodic file among its channel folder's files in force, unless `max` are there
 * already: then returns how many. Members whose file has run out or is gone (a removal whose
 * notification was lost) are dropped first, so the set cannot stay full of files that fire nothing.
 * The file's own expiry record must exist before: another file's admission checks it.
 */
export async function admitPeriodic(
  deps: ExpiryDeps,
  folder: string,
  key: string,
  max: number,
  nowMs: number,
): Promise<number | undefined> {
  if (max <= 0) return 0;
  if (await addInForce(deps, folder, key, max)) return undefined;
  const out = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: periodicInForceKey(folder), ConsistentRead: true }));
  const members = [...((out.Item?.keys as Set<string> | undefined) ?? [])];
  const stale: string[] = [];
  for (const member of members) {
    if (member !== key && !(((await expiryOf(deps, member))?.runsUntil ?? 0) > nowMs)) stale.push(member);
  }
  for (const member of stale) await dropPeriodic(deps, folder, member);
  if (stale.length > 0 && (await addInForce(deps, folder, key, max))) return undefined;
  return members.length - stale.length;
}

/** The file no longer counts among its folder's files in force (removed, refused, run out, an operator's). */
export async function dropPeriodic(deps: ExpiryDeps, folder: string, key: string): Promise<void> {
  await deps.db.send(
    new UpdateCommand({
      TableName: deps.tableName,
      Key: periodicInForceKey(folder),
      UpdateExpression: 'DELETE #keys :key',
      ExpressionAttributeNames: { '#keys': 'keys' },
      ExpressionAttributeValues: { ':key': new Set([key]) },
    }),
  );
}

const utc = (ms: number) => `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;

/** What the thread that wrote an agent's periodic file is told: how long it runs and what keeps it going. */
export function expiryNotice(file: { key: string; schedule: string; timezone: string }, runsUntil: number, days: number): string {
  return (
    `Scheduled \`${forChat(file.key)}\` (\`${forChat(file.schedule)}\`, ${forChat(file.timezone)}). A periodic task I set up myself stops after ${days} days ` +
    `unless someone replies in this thread or in one it starts: each reply keeps it going ${days} days more ` +
    `(now until ${utc(runsUntil)}). Delete the file to stop it sooner.`
  );
}

/** Why an agent's periodic file no longer fires (its error file). */
export function expiredText(key: string, runsUntil: number, days: number): string {
  return (
    `${key}: stopped: this periodic event file, which the agent wrote, ran until ${utc(runsUntil)}: ${days} days without a person ` +
    `replying in one of its threads (agentPeriodicEventDays in settings.json). Nothing fires from it any more; ` +
    `a person's request to save it again runs it for another ${days} days`
  );
}
