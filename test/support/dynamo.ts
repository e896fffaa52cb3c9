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

// The unit tests run in one process, and every file's `before` runs first: a DynamoDB Local per file
// was a dozen JVMs started at once (each seconds of CPU and hundreds of MB). They share one instead,
// each file with tables of its own; the last file to let go of it stops it.
let shared: { emulator: Promise<Emulator>; users: number } | undefined;
let tables = 0;

/** The process's DynamoDB Local, started by its first user; `stop` lets go of it (stopped once nobody holds it). */
export async function sharedDynamoDbLocal(): Promise<Emulator> {
  shared ??= { emulator: startDynamoDbLocal(), users: 0 };
  const held = shared;
  held.users++;
  const emulator = await held.emulator;
  let released = false;
  return {
    endpoint: emulator.endpoint,
    async stop() {
      if (released) return;
      released = true;
      if (--held.users > 0) return;
      if (shared === held) shared = undefined;
      await emulator.stop();
    },
  };
}

/** A new table named after `tableName` (a number makes it the caller's own) on the shared DynamoDB Local. */
export async function startTestTable(tableName = 'test-table'): Promise<TestTable> {
  const emulator = await sharedDynamoDbLocal();
  const raw = new DynamoDBClient({ endpoint: emulator.endpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS });
  const name = `${tableName}-${++tables}`;
  await createLocalTable(raw, name);
  return { db: documentClient(raw), raw, tableName: name, emulator };
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
