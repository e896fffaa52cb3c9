// Bounds on work across threads: runs holding a lease at once (per channel and per deployment) and
// sandbox items at once. Each bound is a counter item in the state table, changed in the same
// transaction as what it counts (a lease taken or given up, a sandbox item created or deleted), and
// the counted item records that it holds a slot: so whichever path releases, and however often it
// is retried, a slot is given back exactly once and a counter never drifts from what it counts.
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { channelKeyOf } from './ids.ts';

const COUNTERS = 'limits';
export const deploymentRunsKey = { pk: COUNTERS, sk: 'runs' };
export const channelRunsKey = (threadId: string) => ({ pk: COUNTERS, sk: `runs#${channelKeyOf(threadId)}` });
export const sandboxesKey = { pk: COUNTERS, sk: 'sandboxes' };

/** The attribute a counted item (an actor holding a lease, a sandbox item) carries while it holds its slot. */
export const SLOT_ATTRIBUTE = 'holdsSlot';

export interface RunCaps {
  perChannel: number;
  perDeployment: number;
}

type Key = { pk: string; sk: string };

/** A transaction item taking one slot of the counter, unless `max` are taken. */
export function takeSlot(tableName: string, key: Key, max: number) {
  return {
    Update: {
      TableName: tableName,
      Key: key,
      UpdateExpression: 'ADD #count :one',
      ConditionExpression: 'attribute_not_exists(#count) OR #count < :max',
      ExpressionAttributeNames: { '#count': 'count' },
      ExpressionAttributeValues: { ':one': 1, ':max': max },
    },
  };
}

/** A transaction item giving one slot back. */
export function giveSlot(tableName: string, key: Key) {
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
export const runSlotKeys = (threadId: string): Key[] => [channelRunsKey(threadId), deploymentRunsKey];

/** How many slots of a counter are taken (operators and tests read it). */
export async function slotsTaken(deps: { db: DynamoDBDocumentClient; tableName: string }, key: Key): Promise<number> {
  const out = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: key, ConsistentRead: true }));
  return (out.Item?.count as number | undefined) ?? 0;
}
