// The deployment-wide pause flag: one item in the state table. Dispatch, and every release of a
// thread's lease, read it before starting a run. Apart from the kill switch so that what only reads
// it (the webhook's bundle among them) carries no more than DynamoDB.
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { getItems } from '../aws/dynamodb.ts';
import { pauseKey, type TableKey } from '../table.ts';

export type TableDeps = { db: DynamoDBDocumentClient; tableName: string };

export interface PauseState {
  paused: boolean;
  by?: string;
  at?: number;
}

export async function pauseState(deps: TableDeps): Promise<PauseState> {
  const out = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: pauseKey, ConsistentRead: true }));
  return out.Item ? { paused: true, by: out.Item.by as string, at: out.Item.at as number } : { paused: false };
}

export const isPaused = async (deps: TableDeps): Promise<boolean> => (await pauseState(deps)).paused;

/** The item at `key` and whether the deployment is paused, read together (one round trip, strongly consistent). */
export async function withPauseFlag(
  deps: TableDeps,
  key: TableKey,
): Promise<{ item: Record<string, unknown> | undefined; paused: boolean }> {
  const [item, pause] = await getItems(deps, [key, pauseKey]);
  return { item, paused: pause !== undefined };
}

/** Pause: no new run starts until resume. `by` says who (an operator, or an admin's qualified id). */
export async function pause(deps: TableDeps, by: string, now = Date.now()): Promise<void> {
  await deps.db.send(new PutCommand({ TableName: deps.tableName, Item: { ...pauseKey, by, at: now } }));
}
