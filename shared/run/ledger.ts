// Idempotency records: what a retried step already did (a reply posted for run/step, an error
// message sent), so Step Functions or Lambda retries edit instead of posting twice.
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionalCheckFailed } from '../aws/errors.ts';

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

const recordItem = (deps: LedgerDeps, runId: string, name: string, value: unknown) => ({
  pk: `run#${runId}`,
  sk: name,
  value,
  expiresAt: Math.floor((deps.now ?? Date.now)() / 1000) + RECORD_TTL_SECONDS,
});

export async function writeRecord(deps: LedgerDeps, runId: string, name: string, value: unknown): Promise<void> {
  await deps.db.send(new PutCommand({ TableName: deps.tableName, Item: recordItem(deps, runId, name, value) }));
}

/** Writes the record unless one exists; either way returns the value that stands (the first writer's). */
export async function claimRecord<T>(deps: LedgerDeps, runId: string, name: string, value: T): Promise<T> {
  try {
    await deps.db.send(
      new PutCommand({
        TableName: deps.tableName,
        Item: recordItem(deps, runId, name, value),
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    return value;
  } catch (error) {
    if (!isConditionalCheckFailed(error)) throw error;
    const first = await readRecord<T>(deps, runId, name);
    if (first === undefined) throw new Error(`ledger record ${name} of ${runId} vanished after its claim`);
    return first;
  }
}
