// The outbound client-credentials token against the Teams stand-in's token endpoint: one request per
// scope while the token is fresh, a new one shortly before it expires, concurrent callers sharing one
// request, and a refusal that says why without the secret.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTeamsStandIn, type TeamsStandIn } from '../../packages/local-cloud/src/teams/index.ts';
import { clientCredentialsTokens, defaultTokenUrl, TOKEN_RENEW_BEFORE_MS } from '../../shared/platforms/teams/token.ts';

const APP_ID = '11111111-2222-3333-4444-555555555555';
const PASSWORD = 'unit-test-password';
const BOT_SCOPE = 'https://api.botframework.com/.default';

let teams: TeamsStandIn;
before(async () => {
  teams = await startTeamsStandIn({ appId: APP_ID, appPassword: PASSWORD, tokenLifetimeSeconds: 3600 });
});
after(async () => {
  await teams?.close();
});

test('a token is reused until shortly before it expires, then renewed', async () => {
  const clock = { ms: Date.UTC(2026, 10, 24, 9) };
  const tokens = clientCredentialsTokens({ tokenUrl: teams.tokenUrl, appId: APP_ID, appPassword: PASSWORD, now: () => clock.ms });
  const before = teams.state.tokenRequests.length;
  const first = await tokens(BOT_SCOPE);
  clock.ms += 3600_000 - TOKEN_RENEW_BEFORE_MS - 1000;
  assert.equal(await tokens(BOT_SCOPE), first, 'fresh: the same token');
  assert.equal(teams.state.tokenRequests.length, before + 1);
  clock.ms += 2000;
  const renewed = await tokens(BOT_SCOPE);
  assert.notEqual(renewed, first, 'within five minutes of expiry: a new token');
  assert.equal(teams.state.tokenRequests.length, before + 2);
});

test('concurrent callers share one request; each scope has its own token', async () => {
  const tokens = clientCredentialsTokens({ tokenUrl: teams.tokenUrl, appId: APP_ID, appPassword: PASSWORD });
  const before = teams.state.tokenRequests.length;
  const many = await Promise.all(Array.from({ length: 10 }, () => tokens(BOT_SCOPE)));
  assert.equal(new Set(many).size, 1);
  const graph = await tokens(['https://graph.microsoft.com/.default']);
  assert.notEqual(graph, many[0]);
  assert.deepEqual(
    teams.state.tokenRequests.slice(before).map((r) => r.scope),
    [BOT_SCOPE, 'https://graph.microsoft.com/.default'],
  );
});

test('wrong credentials: the error says the endpoint refused them, never the secret; nothing is cached', async () => {
  const tokens = clientCredentialsTokens({ tokenUrl: teams.tokenUrl, appId: APP_ID, appPassword: 'wrong-secret' });
  await assert.rejects(tokens(BOT_SCOPE), (error: Error) => {
    assert.match(error.message, /refused the app's credentials \(401\).*Invalid client secret/);
    assert.doesNotMatch(error.message, /wrong-secret/);
    return true;
  });
  await assert.rejects(tokens(BOT_SCOPE), /refused/);
});

test("the default token endpoint is the app's tenant, or Microsoft's Bot Framework tenant for a multi-tenant app", () => {
  assert.equal(
    defaultTokenUrl('a1b2c3d4-e5f6-7890-abcd-ef1234567890'),
    'https://login.microsoftonline.com/a1b2c3d4-e5f6-7890-abcd-ef1234567890/oauth2/v2.0/token',
  );
  assert.equal(defaultTokenUrl(undefined), 'https://login.microsoftonline.com/botframework.com/oauth2/v2.0/token');
});
