// Idempotency records: what a retried step already did (a reply posted for run/step, an error
// message sent), so Step Functions or Lambda retries edit instead of posting twice.
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export interface LedgerDeps {
  db: DynamoDBDocumentClient;
  tableName: string;
  now?: () => number;
}

const RECORD_TTL_SECONDS = 30 * 24 * 3600;

export async function readRecord<T>(deps: LedgerDeps, runId: string, name: string): Promise<T | undefined> {
  const out = await deps.db.send(
    new GetCommand({ TableName: deps.tableName, Key: { pk: `run#${runId}`, sk: name }, ConsistentRead: true }),
  );
  return out.Item?.value as T | undefined;
}

export async function writeRecord(deps: LedgerDeps, runId: string, name: string, value: unknown): Promise<void> {
  const now = (deps.now ?? Date.now)();
  await deps.db.send(
    new PutCommand({
      TableName: deps.tableName,
      Item: { pk: `run#${runId}`, sk: name, value, expiresAt: Math.floor(now / 1000) + RECORD_TTL_SECONDS },
    }),
  );
}
