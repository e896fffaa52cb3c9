// Idempotency records: what a retried step already did (a reply posted for run/step, an error
// message sent), so Step Functions or Lambda retries edit instead of posting twice. Record names
// and their key are in shared/table.ts.
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionalCheckFailed } from '../aws/errors.ts';
import { ledgerKey } from '../table.ts';

export interface LedgerDeps {
  db: DynamoDBDocumentClient;
  tableName: string;
  now?: () => number;
}

const RECORD_TTL_SECONDS = 30 * 24 * 3600;

export async function readRecord<T>(deps: LedgerDeps, runId: string, name: string): Promise<T | undefined> {
  const out = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: ledgerKey(runId, name), ConsistentRead: true }));
  return out.Item?.value as T | undefined;
}

const recordItem = (deps: LedgerDeps, runId: string, name: string, value: unknown) => ({
  ...ledgerKey(runId, name),
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

/** What a post-once record keeps of a chat message: its id, to edit or delete it later. */
export interface PostedMessage {
  messageId: string;
}

/** The record of a message the Chat SDK sent. */
export const postedMessage = (sent: { id: string }): PostedMessage => ({ messageId: sent.id });

/**
 * Posts once per record, however often the step that posts is retried: a retry finds the record
 * and gets back what was posted, without posting. The record is written after the post, so a step
 * that dies between the two posts again on its retry (never nothing).
 */
export async function postOnce<T>(deps: LedgerDeps, runId: string, record: string, post: () => Promise<T>): Promise<T> {
  const earlier = await readRecord<T>(deps, runId, record);
  if (earlier !== undefined) return earlier;
  const posted = await post();
  await writeRecord(deps, runId, record, posted);
  return posted;
}
