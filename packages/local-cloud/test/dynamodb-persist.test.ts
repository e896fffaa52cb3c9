// `npm start -- --persist`: DynamoDB Local started with a dbPath keeps the table and its items in
// that directory, and a later start with the same path finds them; without one, nothing is kept.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '../../../shared/aws/dynamodb.ts';
import { startDynamoDbLocal } from '../src/emulators.ts';
import { createLocalTable } from '../src/tables.ts';
import { persistedTableDir } from '../src/start.ts';

const TABLE = 'persist-test';
const KEY = { pk: 'actor#slack:C1:1.1', sk: 'actor' };

async function withTable<T>(dbPath: string | undefined, work: (db: ReturnType<typeof documentClient>) => Promise<T>): Promise<T> {
  const emulator = await startDynamoDbLocal(undefined, dbPath ? { dbPath } : {});
  const raw = new DynamoDBClient({
    endpoint: emulator.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    await createLocalTable(raw, TABLE);
    return await work(documentClient(raw));
  } finally {
    raw.destroy();
    await emulator.stop();
  }
}

test('with a dbPath, an item written before a restart is there after it; in memory, it is gone', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'threadwork-persist-'));
  try {
    await withTable(dir, (db) => db.send(new PutCommand({ TableName: TABLE, Item: { ...KEY, status: 'idle' } })));
    const after = await withTable(dir, (db) => db.send(new GetCommand({ TableName: TABLE, Key: KEY, ConsistentRead: true })));
    assert.deepEqual(after.Item, { ...KEY, status: 'idle' });
    const inMemory = await withTable(undefined, (db) => db.send(new GetCommand({ TableName: TABLE, Key: KEY, ConsistentRead: true })));
    assert.equal(inMemory.Item, undefined);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('each stack file has its own persisted table directory', () => {
  assert.equal(persistedTableDir('/x/.local/stack.json'), '/x/.local/stack-state/dynamodb');
  assert.notEqual(persistedTableDir('/x/.local/second.json'), persistedTableDir('/x/.local/stack.json'));
});
