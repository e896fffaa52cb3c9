// The OAuth flow for MCP servers against a real DynamoDB Local, the local KMS stand-in and a small
// OAuth authorization server in front of a real MCP server: a Connect `state` is bound to its person,
// thread and server, works once and for ten minutes; the tokens open only under their person, server
// and URL; an access token near its expiry is refreshed before use.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { KMSClient } from '@aws-sdk/client-kms';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { startLocalKms, type LocalKms } from '../../packages/local-cloud/src/kms.ts';
import { accessTokenFor, beginConnect, finishConnect, type ConnectFlowDeps } from '../../shared/reach/oauth/flow.ts';
import { createState, deleteConnection, STATE_LIFETIME_MS } from '../../shared/reach/oauth/records.ts';
import { StateRefused } from '../../shared/reach/oauth/states.ts';
import { loadConnection } from '../../shared/reach/oauth/tokens.ts';
import { oauthStateKey, oauthTokensKey } from '../../shared/table.ts';
import { oauthRoute } from '../../shared/reach/oauth/routes.ts';
import { createLogger } from '../../shared/observability/log.ts';
import { LOCAL_CREDENTIALS, tableForFile } from '../support/dynamo.ts';
import { startTestMcpServer, type TestMcpServer } from '../support/mcp-server.ts';
import { startTestOAuthServer, type TestOAuthServer } from '../support/oauth-server.ts';

const KEY = 'arn:aws:kms:local:000000000000:key/11111111-2222-3333-4444-555555555555';
const REDIRECT = 'https://api.example.com/oauth/callback';
const table = tableForFile();
let kms: LocalKms;
let oauth: TestOAuthServer;
let mcp: TestMcpServer;
const secrets = new Map<string, string>();
/** The tests' clock: from now, since DynamoDB Local's TTL deletes items whose expiresAt passed. */
let clock = Date.now();

before(async () => {
  kms = await startLocalKms([KEY]);
  oauth = await startTestOAuthServer();
  mcp = await startTestMcpServer({ name: 'orders', oauth, register: () => undefined });
});
after(async () => {
  await mcp?.close();
  await oauth?.close();
  await kms?.close();
});

const deps = (): ConnectFlowDeps => ({
  ...table(),
  kms: new KMSClient({ endpoint: kms.endpoint, region: 'local', credentials: LOCAL_CREDENTIALS }),
  keyId: KEY,
  redirectUrl: REDIRECT,
  readSecret: async (name) => secrets.get(name) ?? Promise.reject(new Error(`no secret ${name}`)),
  now: () => clock,
});
const binding = (person: string) => ({ person, threadId: 'slack:C0:1.2', server: 'orders', serverUrl: mcp.url });

/** The browser at the authorize endpoint: where it is sent back to (the callback URL with code and state). */
async function authorize(at: URL): Promise<URL> {
  const response = await fetch(at, { redirect: 'manual' });
  assert.equal(response.status, 302, await response.text());
  return new URL(response.headers.get('location')!);
}

async function connect(person: string, oauthClient?: string): Promise<{ state: string; back: URL }> {
  oauth.signedInAs = person;
  const state = await createState(deps(), { ...binding(person), ...(oauthClient ? { oauthClient } : {}) }, clock);
  const at = await beginConnect(deps(), state);
  assert.equal(at.origin, oauth.url);
  assert.equal(at.searchParams.get('state'), state);
  assert.equal(at.searchParams.get('code_challenge_method'), 'S256');
  assert.equal(at.searchParams.get('redirect_uri'), REDIRECT);
  const back = await authorize(at);
  await finishConnect(deps(), back.searchParams.get('state')!, back.searchParams.get('code')!);
  return { state, back };
}

test('a Connect flow: discovery from the server, registration, PKCE, the code exchanged, and the person calls as themselves', async () => {
  const registrations = oauth.counts.registrations;
  await connect('slack:U0ALICE');
  assert.equal(oauth.counts.registrations, registrations + 1, 'dynamic client registration (no oauthClient)');
  const token = await accessTokenFor(deps(), binding('slack:U0ALICE'));
  assert.equal(oauth.userOf(token!), 'slack:U0ALICE');
  const item = await table().db.send(new GetCommand({ TableName: table().tableName, Key: oauthTokensKey('slack:U0ALICE', 'orders') }));
  assert.ok(!JSON.stringify(item.Item).includes(token!), 'the token is stored sealed');
  assert.equal(await accessTokenFor(deps(), binding('slack:U0BOB')), undefined, 'another person has not connected');
});

test('a state works once: a replayed callback, a second start and a forged state are refused', async () => {
  const { state, back } = await connect('slack:U0CAROL');
  await assert.rejects(finishConnect(deps(), state, back.searchParams.get('code')!), StateRefused);
  await assert.rejects(beginConnect(deps(), state), StateRefused);
  await assert.rejects(beginConnect(deps(), 'forged-state-value'), StateRefused);
  await assert.rejects(finishConnect(deps(), 'forged-state-value', 'code'), StateRefused);
  // A started state: a second start is refused (one browser wins), the callback still works once.
  const fresh = await createState(deps(), binding('slack:U0CAROL'), clock);
  const at = await beginConnect(deps(), fresh);
  await assert.rejects(beginConnect(deps(), fresh), StateRefused);
  const again = await authorize(at);
  await finishConnect(deps(), fresh, again.searchParams.get('code')!);
  const item = await table().db.send(new GetCommand({ TableName: table().tableName, Key: oauthStateKey(fresh) }));
  assert.equal(item.Item, undefined, 'the state is gone once used');
});

test('a state expires after ten minutes, before its start and between start and callback', async () => {
  const unstarted = await createState(deps(), binding('slack:U0DAN'), clock);
  clock += STATE_LIFETIME_MS + 1;
  await assert.rejects(beginConnect(deps(), unstarted), StateRefused);
  oauth.signedInAs = 'slack:U0DAN';
  const started = await createState(deps(), binding('slack:U0DAN'), clock);
  const back = await authorize(await beginConnect(deps(), started));
  clock += STATE_LIFETIME_MS + 1;
  await assert.rejects(finishConnect(deps(), started, back.searchParams.get('code')!), StateRefused);
  assert.equal(await accessTokenFor(deps(), binding('slack:U0DAN')), undefined);
});

test('sealed tokens open only for their person, server and URL: copied to another person they do not open', async () => {
  await connect('slack:U0ERIN');
  const { Item } = await table().db.send(new GetCommand({ TableName: table().tableName, Key: oauthTokensKey('slack:U0ERIN', 'orders') }));
  await table().db.send(
    new PutCommand({ TableName: table().tableName, Item: { ...Item, ...oauthTokensKey('slack:U0MALLORY', 'orders') } }),
  );
  await assert.rejects(loadConnection(deps(), binding('slack:U0MALLORY')), { name: 'InvalidCiphertextException' });
  await table().db.send(new PutCommand({ TableName: table().tableName, Item: { ...Item, ...oauthTokensKey('slack:U0ERIN', 'billing') } }));
  await assert.rejects(loadConnection(deps(), { ...binding('slack:U0ERIN'), server: 'billing' }), { name: 'InvalidCiphertextException' });
  // The operator pointed the server elsewhere: the old tokens are not sent there.
  assert.equal(await loadConnection(deps(), { ...binding('slack:U0ERIN'), serverUrl: 'https://elsewhere.example.com/mcp' }), undefined);
  assert.equal(await deleteConnection(deps(), 'slack:U0ERIN', 'orders'), true);
  assert.equal(await accessTokenFor(deps(), binding('slack:U0ERIN')), undefined, 'disconnected');
  assert.equal(await deleteConnection(deps(), 'slack:U0ERIN', 'orders'), false);
});

test('an access token about to expire is refreshed before use, and the refreshed one is kept', async () => {
  oauth.expiresIn = 120;
  await connect('slack:U0FRAN');
  oauth.expiresIn = 3600;
  const refreshes = oauth.counts.refreshes;
  const first = await accessTokenFor(deps(), binding('slack:U0FRAN'));
  assert.equal(oauth.counts.refreshes, refreshes + 1, 'two minutes left: refreshed');
  assert.equal(oauth.userOf(first!), 'slack:U0FRAN');
  const second = await accessTokenFor(deps(), binding('slack:U0FRAN'));
  assert.equal(second, first, 'the refreshed token was stored');
  assert.equal(oauth.counts.refreshes, refreshes + 1);
});

test("an operator's client from its secret is used as it is: no registration", async () => {
  const registered = await fetch(`${oauth.url}/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: [REDIRECT], client_name: 'the operator' }),
  });
  const client = (await registered.json()) as { client_id: string; client_secret: string };
  secrets.set('orders-client', JSON.stringify({ client_id: client.client_id, client_secret: client.client_secret }));
  const registrations = oauth.counts.registrations;
  await connect('slack:U0GIL', '${secret:orders-client}');
  assert.equal(oauth.counts.registrations, registrations);
  assert.equal(oauth.userOf((await accessTokenFor(deps(), binding('slack:U0GIL')))!), 'slack:U0GIL');
  secrets.set('orders-client', 'not json');
  await assert.rejects(connect('slack:U0GIL', '${secret:orders-client}'), /must hold JSON with client_id/);
});

test('the routes: the browser is sent on with the PKCE challenge only, and told plainly when a link has no state, the provider refused, or the state is not good', async () => {
  const route = (path: string, query: Record<string, string>) =>
    oauthRoute({ ...deps(), logger: createLogger({ level: 'silent' }) }, { path, query, origin: 'https://api.example.com' });
  oauth.signedInAs = 'slack:U0HAL';
  const state = await createState(deps(), binding('slack:U0HAL'), clock);
  const start = await route('/oauth/start', { state });
  assert.equal(start.statusCode, 302);
  const to = new URL(start.headers.location!);
  assert.equal(to.searchParams.get('redirect_uri'), 'https://api.example.com/oauth/callback', 'the callback on the host the browser used');
  assert.ok(!start.headers.location!.includes('code_verifier'));
  assert.equal((await route('/oauth/start', {})).statusCode, 400);
  const denied = await route('/oauth/callback', { state, error: 'access_denied' });
  assert.equal(denied.statusCode, 400);
  assert.match(denied.body, /did not approve the connection \(access_denied\)/);
  const forged = await route('/oauth/callback', { state: 'forged', code: 'x' });
  assert.equal(forged.statusCode, 400);
  assert.match(forged.body, /unknown, already used or expired/);
  assert.equal(forged.headers['cache-control'], 'no-store');
});
