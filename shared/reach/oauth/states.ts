// A Connect link's `state`: a random value whose item binds it to one person, thread and server. The
// start of the flow takes it once (its PKCE verifier and OAuth client then kept in the item, sealed,
// never sent to the browser); the callback deletes it on condition, so a replayed or forged `state`,
// or one older than ten minutes, is refused.
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { OAuthClientInformationMixed } from '@modelcontextprotocol/sdk/shared/auth.js';
import { oauthStateKey } from '../../table.ts';
import { open, seal } from './sealed.ts';
import type { ConnectBinding } from './records.ts';
import type { TokenStoreDeps } from './tokens.ts';

/** What the start of the flow keeps for the callback. */
export interface FlowSecrets {
  codeVerifier: string;
  client: OAuthClientInformationMixed;
}

/** A refusal of a `state`, said to the browser as it is. */
export class StateRefused extends Error {
  override name = 'StateRefused';
}

const REFUSED = 'This Connect link is unknown, already used or expired. Ask again in the thread for a new one.';

const flowContext = (state: string, binding: ConnectBinding) => ({
  purpose: 'mcp-oauth-flow',
  state,
  person: binding.person,
  server: binding.server,
});

type StateItem = ConnectBinding & { expiresAtMs: number; startedAt?: number; sealed?: string };
const isBinding = (item: Record<string, unknown> | undefined): item is Record<string, unknown> & StateItem =>
  typeof item?.person === 'string' && typeof item.server === 'string' && typeof item.expiresAtMs === 'number';

/** The binding of a `state` not yet started and not expired. */
export async function stateToStart(deps: Pick<TokenStoreDeps, 'db' | 'tableName'>, state: string, now: number): Promise<ConnectBinding> {
  const out = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: oauthStateKey(state), ConsistentRead: true }));
  const item = out.Item;
  if (!isBinding(item) || item.startedAt !== undefined || item.expiresAtMs <= now) throw new StateRefused(REFUSED);
  return bindingOf(item);
}

const bindingOf = (item: StateItem): ConnectBinding => ({
  person: item.person,
  threadId: item.threadId,
  server: item.server,
  serverUrl: item.serverUrl,
  ...(item.oauthClient ? { oauthClient: item.oauthClient } : {}),
});

const refusedIfConditionFailed = (error: unknown): never => {
  if (error instanceof ConditionalCheckFailedException) throw new StateRefused(REFUSED);
  throw error;
};

/** Takes the `state` (once) and keeps the flow's verifier and client with it, sealed. */
export async function startState(
  deps: TokenStoreDeps,
  state: string,
  binding: ConnectBinding,
  secrets: FlowSecrets,
  now: number,
): Promise<void> {
  const sealed = await seal(deps, secrets, flowContext(state, binding));
  await deps.db
    .send(
      new UpdateCommand({
        TableName: deps.tableName,
        Key: oauthStateKey(state),
        UpdateExpression: 'SET startedAt = :now, sealed = :sealed',
        ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(startedAt) AND expiresAtMs > :now',
        ExpressionAttributeValues: { ':now': now, ':sealed': sealed },
      }),
    )
    .catch(refusedIfConditionFailed);
}

/** Ends the `state` (deleted on condition: one callback wins) and gives back its binding and the flow's secrets. */
export async function finishState(
  deps: TokenStoreDeps,
  state: string,
  now: number,
): Promise<{ binding: ConnectBinding; secrets: FlowSecrets }> {
  const out = await deps.db
    .send(
      new DeleteCommand({
        TableName: deps.tableName,
        Key: oauthStateKey(state),
        ConditionExpression: 'attribute_exists(startedAt) AND expiresAtMs > :now',
        ExpressionAttributeValues: { ':now': now },
        ReturnValues: 'ALL_OLD',
      }),
    )
    .catch(refusedIfConditionFailed);
  const item = out.Attributes;
  if (!isBinding(item) || typeof item.sealed !== 'string') throw new StateRefused(REFUSED);
  const binding = bindingOf(item);
  return { binding, secrets: await open<FlowSecrets>(deps, item.sealed, flowContext(state, binding)) };
}
