// A real DynamoDB Local with the project's table, for tests that exercise conditional writes.
import { after, before } from 'node:test';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { startDynamoDbLocal, type Emulator } from '../../packages/local-cloud/src/emulators.ts';
import { createLocalTable } from '../../packages/local-cloud/src/tables.ts';
import { documentClient } from '../../shared/aws/dynamodb.ts';

export const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' };

export interface TestTable {
  db: DynamoDBDocumentClient;
  raw: DynamoDBClient;
  tableName: string;
  emulator: Emulator;
}

export async function startTestTable(tableName = 'test-table'): Promise<TestTable> {
  const emulator = await startDynamoDbLocal();
  const raw = new DynamoDBClient({ endpoint: emulator.endpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS });
  await createLocalTable(raw, tableName);
  return { db: documentClient(raw), raw, tableName, emulator };
}

/** A table for every test of the file: started before the first, stopped after the last. */
export function tableForFile(): () => TestTable {
  let table: TestTable | undefined;
  before(async () => {
    table = await startTestTable();
  });
  after(async () => {
    table?.raw.destroy();
    await table?.emulator.stop();
  });
  return () => table!;
}
