// The DynamoDB document client. Endpoints and credentials come from the standard chain
// (AWS_ENDPOINT_URL_DYNAMODB locally), so the same code talks to AWS or to the local cloud. Each
// AWS client has its own module so that a function's bundle carries only the clients it imports.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
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
