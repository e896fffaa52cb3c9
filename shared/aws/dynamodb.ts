// The DynamoDB document client. Endpoints and credentials come from the standard chain
// (AWS_ENDPOINT_URL_DYNAMODB locally), so the same code talks to AWS or to the local cloud. Each
// AWS client has its own module so that a function's bundle carries only the clients it imports.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { TableKey } from '../table.ts';
import { once } from '../support/lazy.ts';

export function documentClient(client = new DynamoDBClient({})): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: true },
  });
}

export const dbClient = once(() => documentClient());

/** Every item of one partition (strongly consistent), page after page. */
export async function queryPartition(
  deps: { db: DynamoDBDocumentClient; tableName: string },
  pk: string,
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const out = await deps.db.send(
      new QueryCommand({
        TableName: deps.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': pk },
        ExclusiveStartKey: startKey,
        ConsistentRead: true,
      }),
    );
    items.push(...(out.Items ?? []));
    startKey = out.LastEvaluatedKey;
  } while (startKey);
  return items;
}

/** A throttled BatchGetItem hands back the keys it did not read: they are asked for again this many times. */
const BATCH_GET_ATTEMPTS = 5;

/**
 * The items at `keys` of one table (undefined where there is none), strongly consistent, in one
 * round trip (BatchGetItem: up to 100 keys; unlike TransactGetItems, it is never cancelled by a
 * transaction writing the same item at the time).
 */
export async function getItems(
  deps: { db: DynamoDBDocumentClient; tableName: string },
  keys: readonly TableKey[],
): Promise<(Record<string, unknown> | undefined)[]> {
  const found = new Map<string, Record<string, unknown>>();
  const id = (key: { pk?: unknown; sk?: unknown }) => `${String(key.pk)}\u0000${String(key.sk)}`;
  let unread: Record<string, unknown>[] = [...keys];
  for (let attempt = 0; unread.length > 0; attempt++) {
    if (attempt >= BATCH_GET_ATTEMPTS) throw new Error(`DynamoDB left ${unread.length} key(s) unread after ${attempt} attempts`);
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 20 * 2 ** attempt));
    const out = await deps.db.send(new BatchGetCommand({ RequestItems: { [deps.tableName]: { Keys: unread, ConsistentRead: true } } }));
    for (const item of out.Responses?.[deps.tableName] ?? []) found.set(id(item), item);
    unread = out.UnprocessedKeys?.[deps.tableName]?.Keys ?? [];
  }
  return keys.map((key) => found.get(id(key)));
}
