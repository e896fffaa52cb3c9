// Creates the project's single table in DynamoDB Local, with the same key schema the CDK stack
// deploys (see shared/table.ts), so local runs and tests exercise the real data layout.
import {
  CreateTableCommand,
  DescribeTimeToLiveCommand,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { TABLE_KEYS } from '../../../shared/table.ts';

const ACTIVE_WAIT_SECONDS = 30;

/** Creates the table if it is missing and waits until it is ACTIVE. Safe to call repeatedly. */
export async function createLocalTable(client: DynamoDBClient, tableName: string): Promise<void> {
  await createIfMissing(client, tableName);
  // waitUntilTableExists polls DescribeTable until TableStatus is ACTIVE.
  await waitUntilTableExists({ client, maxWaitTime: ACTIVE_WAIT_SECONDS }, { TableName: tableName });
  await enableTtl(client, tableName);
}

async function createIfMissing(client: DynamoDBClient, tableName: string): Promise<void> {
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [
          { AttributeName: TABLE_KEYS.partitionKey, AttributeType: 'S' },
          { AttributeName: TABLE_KEYS.sortKey, AttributeType: 'S' },
        ],
        KeySchema: [
          { AttributeName: TABLE_KEYS.partitionKey, KeyType: 'HASH' },
          { AttributeName: TABLE_KEYS.sortKey, KeyType: 'RANGE' },
        ],
      }),
    );
  } catch (error) {
    // Another caller (or an earlier run against the same emulator) created it first.
    if ((error as Error).name !== 'ResourceInUseException') throw error;
  }
}

// Mirrors the deployed table's TTL setting. Readers never rely on it (TTL deletes lazily), but
// keeping the configuration identical avoids surprises. Checked first because enabling TTL on a
// table that already has it is an error.
async function enableTtl(client: DynamoDBClient, tableName: string): Promise<void> {
  const current = await client.send(new DescribeTimeToLiveCommand({ TableName: tableName }));
  const status = current.TimeToLiveDescription?.TimeToLiveStatus;
  if (status === 'ENABLED' || status === 'ENABLING') return;
  await client.send(
    new UpdateTimeToLiveCommand({
      TableName: tableName,
      TimeToLiveSpecification: { AttributeName: TABLE_KEYS.ttlAttribute, Enabled: true },
    }),
  );
}
