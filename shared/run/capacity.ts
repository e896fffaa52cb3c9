// Bounds on work across threads: runs holding a lease at once (per channel and per deployment) and
// sandbox items at once. Each bound is a counter item in the state table, changed in the same
// transaction as what it counts (a lease taken or given up, a sandbox item created or deleted), and
// the counted item records that it holds a slot: so whichever path releases, and however often it
// is retried, a slot is given back exactly once and a counter never drifts from what it counts.
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { queryPartition } from '../aws/dynamodb.ts';
import { channelKeyOf } from '../ids.ts';
import { channelRunsKeyOf, deploymentRunsKey, SLOT_HOLDERS, slotHolderKey, type TableKey } from '../table.ts';

/** The run counter of a thread's channel. */
export const channelRunsKey = (threadId: string) => channelRunsKeyOf(channelKeyOf(threadId));

/** The attribute a counted item (an actor holding a lease, a sandbox item) carries while it holds its slot. */
export const SLOT_ATTRIBUTE = 'holdsSlot';

export interface RunCaps {
  perChannel: number;
  perDeployment: number;
}

/** A transaction item taking one slot of the counter, unless `max` are taken; `expiresAt` (epoch s) for a counter that goes away. */
export function takeSlot(tableName: string, key: TableKey, max: number, expiresAt?: number) {
  return {
    Update: {
      TableName: tableName,
      Key: key,
      UpdateExpression: `ADD #count :one${expiresAt === undefined ? '' : ' SET expiresAt = :expires'}`,
      ConditionExpression: 'attribute_not_exists(#count) OR #count < :max',
      ExpressionAttributeNames: { '#count': 'count' },
      ExpressionAttributeValues: { ':one': 1, ':max': max, ...(expiresAt === undefined ? {} : { ':expires': expiresAt }) },
    },
  };
}

/** A transaction item giving one slot back. */
export function giveSlot(tableName: string, key: TableKey) {
  return {
    Update: {
      TableName: tableName,
      Key: key,
      UpdateExpression: 'ADD #count :minusOne',
      ExpressionAttributeNames: { '#count': 'count' },
      ExpressionAttributeValues: { ':minusOne': -1 },
    },
  };
}

/** The run slots a thread's lease holds: its channel's and the deployment's. */
export const runSlotKeys = (threadId: string): TableKey[] => [channelRunsKey(threadId), deploymentRunsKey];

// Which threads hold run slots, so a slot whose release was lost can be found without the thread's
// next prompt (see reclaimStaleSlots in control.ts).

/** Taking an idle thread's run slots: the channel's (item 0), the deployment's (item 1), and the holder record. */
export function takeRunSlots(tableName: string, threadId: string, caps: RunCaps, now: number) {
  const [channel, deployment] = runSlotKeys(threadId);
  return [
    takeSlot(tableName, channel!, caps.perChannel),
    takeSlot(tableName, deployment!, caps.perDeployment),
    { Put: { TableName: tableName, Item: { ...slotHolderKey(threadId), channel: channelKeyOf(threadId), at: now } } },
  ];
}

/** Giving a thread's run slots back, with its holder record. */
export function giveRunSlots(tableName: string, threadId: string) {
  return [
    ...runSlotKeys(threadId).map((key) => giveSlot(tableName, key)),
    { Delete: { TableName: tableName, Key: slotHolderKey(threadId) } },
  ];
}

/** Threads holding run slots (of one channel, `adapter:channel`, or all), with when they took them. */
export async function slotHolders(
  deps: { db: DynamoDBDocumentClient; tableName: string },
  channelKey?: string,
): Promise<{ threadId: string; at: number }[]> {
  return (await queryPartition(deps, SLOT_HOLDERS))
    .filter((item) => !channelKey || item.channel === channelKey)
    .map((item) => ({ threadId: item.sk as string, at: item.at as number }));
}

/** How many slots of a counter are taken (operators and tests read it). */
export async function slotsTaken(deps: { db: DynamoDBDocumentClient; tableName: string }, key: TableKey): Promise<number> {
  const out = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: key, ConsistentRead: true }));
  return (out.Item?.count as number | undefined) ?? 0;
}
