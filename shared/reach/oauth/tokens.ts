// A person's connection to an OAuth MCP server: the tokens and the OAuth client they were issued to,
// sealed with the tokens key under a context naming the person, the server and its URL (a server
// whose URL the operator changed is not sent the old server's tokens: they no longer open).
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { OAuthClientInformationMixed, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { oauthTokensKey } from '../../table.ts';
import { open, seal, type SealDeps } from './sealed.ts';

export interface TokenStoreDeps extends SealDeps {
  db: DynamoDBDocumentClient;
  tableName: string;
}

export interface Connection {
  tokens: OAuthTokens;
  /** When the tokens were issued (epoch ms): with `expires_in`, when the access token expires. */
  obtainedAt: number;
  client: OAuthClientInformationMixed;
  /** The redirect URI the tokens were obtained with. */
  redirectUrl: string;
}

/** What a sealed connection is bound to. */
export const tokensContext = (person: string, server: string, serverUrl: string) => ({
  purpose: 'mcp-oauth-tokens',
  person,
  server,
  serverUrl,
});

/** When the access token expires (epoch ms), or undefined when the server did not say. */
export const expiresAtOf = (connection: Connection): number | undefined =>
  connection.tokens.expires_in === undefined ? undefined : connection.obtainedAt + connection.tokens.expires_in * 1000;

export async function saveConnection(
  deps: TokenStoreDeps,
  at: { person: string; server: string; serverUrl: string },
  connection: Connection,
): Promise<void> {
  const sealed = await seal(deps, connection, tokensContext(at.person, at.server, at.serverUrl));
  await deps.db.send(
    new PutCommand({
      TableName: deps.tableName,
      Item: { ...oauthTokensKey(at.person, at.server), serverUrl: at.serverUrl, sealed, savedAt: connection.obtainedAt },
    }),
  );
}

/** The person's connection to the server at `serverUrl`; undefined when they have none (or one made for another URL). */
export async function loadConnection(
  deps: TokenStoreDeps,
  at: { person: string; server: string; serverUrl: string },
): Promise<Connection | undefined> {
  const out = await deps.db.send(
    new GetCommand({ TableName: deps.tableName, Key: oauthTokensKey(at.person, at.server), ConsistentRead: true }),
  );
  const item = out.Item as { serverUrl?: string; sealed?: string } | undefined;
  if (!item?.sealed || item.serverUrl !== at.serverUrl) return undefined;
  return open<Connection>(deps, item.sealed, tokensContext(at.person, at.server, at.serverUrl));
}
