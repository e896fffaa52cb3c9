// The OAuth items agent-step and the commands write without the tokens key: a new Connect `state`
// (bound to a person, thread and server) and the removal of a person's tokens (`disconnect`). Apart
// from the rest of shared/reach/oauth/, so those functions do not load the KMS client.
import { randomBytes } from 'node:crypto';
import { DeleteCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { oauthStateKey, oauthTokensKey } from '../../table.ts';

export interface TableDeps {
  db: DynamoDBDocumentClient;
  tableName: string;
}

/** How long a Connect link works. */
export const STATE_LIFETIME_MS = 10 * 60 * 1000;

export interface ConnectBinding {
  /** `adapter:userId`. */
  person: string;
  threadId: string;
  server: string;
  serverUrl: string;
  /** The server's `oauthClient` (`${secret:NAME}`), when the operator gave one. */
  oauthClient?: string;
}

const ttlOf = (expiresAtMs: number) => Math.ceil(expiresAtMs / 1000);

/** A new `state` for `binding`, valid for ten minutes. */
export async function createState(deps: TableDeps, binding: ConnectBinding, now: number): Promise<string> {
  const state = randomBytes(32).toString('base64url');
  const expiresAtMs = now + STATE_LIFETIME_MS;
  await deps.db.send(
    new PutCommand({
      TableName: deps.tableName,
      Item: { ...oauthStateKey(state), ...binding, expiresAtMs, expiresAt: ttlOf(expiresAtMs) },
      ConditionExpression: 'attribute_not_exists(pk)',
    }),
  );
  return state;
}

/** Forgets the person's connection; whether there was one. */
export async function deleteConnection(deps: TableDeps, person: string, server: string): Promise<boolean> {
  const out = await deps.db.send(
    new DeleteCommand({ TableName: deps.tableName, Key: oauthTokensKey(person, server), ReturnValues: 'ALL_OLD' }),
  );
  return out.Attributes !== undefined;
}
