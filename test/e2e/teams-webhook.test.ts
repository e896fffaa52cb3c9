// The webhook's contract with Teams, driven with recorded Teams activities through the local API
// Gateway stand-in: Bot Framework token validation before anything else (missing, forged, expired,
// wrong audience, wrong serviceUrl, other tenant: 401 and nothing enqueued), and a redelivered
// activity answered once, by a reply sent from agent-step to the activity's serviceUrl.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createSigningKey } from '../../packages/local-cloud/src/teams/index.ts';
import { startTestStack, TEAMS_APP_ID, type TestStack } from '../support/local-stack.ts';
import { eventually } from '../support/eventually.ts';
import { inboxDepth } from '../support/inbox.ts';

const fixtures = JSON.parse(readFileSync(new URL('../fixtures/chat-sdk-replay/teams.json', import.meta.url), 'utf8'));

let stack: TestStack;
before(async () => {
  stack = await startTestStack({ teams: true });
});
after(async () => {
  await stack?.stop();
});

let sequence = 0;
/** The recorded channel mention as a new thread (fresh ids), served by the stand-in's serviceUrl. */
function freshMention(text = 'Hey') {
  sequence++;
  const id = String(1767224924615 + sequence * 1000);
  const activity = structuredClone(fixtures.mention);
  activity.id = id;
  activity.text = `<at>${fixtures.botName}</at> ${text}`;
  activity.serviceUrl = stack.teams.serviceUrl;
  activity.conversation.id = `19:d441d38c655c47a085215b2726e76927@thread.tacv2;messageid=${id}`;
  return activity as { id: string; serviceUrl: string; conversation: { id: string; tenantId: string }; [k: string]: unknown };
}

async function post(activity: unknown, token?: string) {
  return fetch(stack.cloud.teamsMessagesUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(activity),
  });
}

const runsFor = (conversationId: string) =>
  [...stack.cloud.stepFunctions.executions.values()].filter((e) => {
    const threadId = (e.input as { threadId: string }).threadId;
    return threadId.startsWith('teams:') && Buffer.from(threadId.split(':')[1]!, 'base64url').toString() === conversationId;
  });

async function assertNothingHappened(conversationId: string) {
  await new Promise((r) => setTimeout(r, 1500)); // longer than the poller's wait: anything enqueued would have run
  assert.equal(await inboxDepth(stack), 0);
  assert.equal(runsFor(conversationId).length, 0);
  assert.equal(stack.teams.botMessages(conversationId).length, 0);
}

test('a recorded channel mention is answered in its thread once, even when Teams redelivers it', async () => {
  stack.bedrock.script({ text: 'Hello from the agent.' });
  const activity = freshMention();
  const token = await stack.teams.signToken({ serviceUrl: activity.serviceUrl });
  assert.equal((await post(activity, token)).status, 200);
  // Teams redelivers an activity whose acknowledgement it did not see.
  assert.equal((await post(activity, token)).status, 200);

  const conversationId = activity.conversation.id;
  const replies = await stack.teams.waitFor(() => {
    const found = stack.teams.botMessages(conversationId).filter((m) => m.text && m.text !== '...');
    return found.length ? found : undefined;
    // The first request of the file also starts every function cold.
  }, 60_000);
  await eventually(
    () => runsFor(conversationId).length > 0 && runsFor(conversationId).every((e) => e.status !== 'RUNNING'),
    10_000,
    'run finished',
  );
  await new Promise((r) => setTimeout(r, 1000));
  assert.equal(runsFor(conversationId).length, 1, 'one run');
  assert.equal(replies[0]!.text, 'Hello from the agent.');
  assert.equal(stack.teams.botMessages(conversationId).filter((m) => !m.deleted && m.text).length, 1, 'one reply');
  // Outbound calls used one client-credentials token, not one per call.
  assert.equal(new Set(stack.teams.state.tokenRequests.map((r) => r.scope)).size, stack.teams.state.tokenRequests.length);
});

test('a request without a token gets 401 and enqueues nothing', async () => {
  const activity = freshMention();
  const response = await post(activity);
  assert.equal(response.status, 401);
  await assertNothingHappened(activity.conversation.id);
});

test('a token signed with a key the metadata does not publish gets 401', async () => {
  const activity = freshMention();
  const published = stack.teams.state; // the stand-in publishes one key; this one has another
  assert.ok(published);
  const forger = await createSigningKey();
  const forged = await stack.teams.signToken({ serviceUrl: activity.serviceUrl }, forger);
  assert.equal((await post(activity, forged)).status, 401);
  // The same key id as the published key, but a different private key: the signature fails.
  const sameKid = { ...forger, kid: (await (await fetch(`${stack.teams.url}/keys`)).json()).keys[0].kid };
  const impostor = await stack.teams.signToken({ serviceUrl: activity.serviceUrl }, sameKid);
  assert.equal((await post(activity, impostor)).status, 401);
  // A well-signed token whose payload was altered after signing.
  const good = await stack.teams.signToken({ serviceUrl: activity.serviceUrl });
  const [header, , signature] = good.split('.');
  const payload = Buffer.from(
    JSON.stringify({ aud: TEAMS_APP_ID, iss: stack.teams.url, serviceurl: activity.serviceUrl, exp: 9999999999 }),
  ).toString('base64url');
  assert.equal((await post(activity, `${header}.${payload}.${signature}`)).status, 401);
  await assertNothingHappened(activity.conversation.id);
});

test('an expired token gets 401; one within the five minutes of clock skew is accepted', async () => {
  const activity = freshMention();
  const now = Math.floor(Date.now() / 1000);
  const expired = await stack.teams.signToken({ serviceUrl: activity.serviceUrl, issuedAt: now - 3600 - 6 * 60, expiresIn: 3600 });
  assert.equal((await post(activity, expired)).status, 401);
  await assertNothingHappened(activity.conversation.id);

  stack.bedrock.script({ text: 'Within the skew.' });
  const skewed = freshMention();
  const late = await stack.teams.signToken({ serviceUrl: skewed.serviceUrl, issuedAt: now - 3600 - 2 * 60, expiresIn: 3600 });
  assert.equal((await post(skewed, late)).status, 200);
  await stack.teams.waitFor(() => stack.teams.botMessages(skewed.conversation.id).find((m) => m.text === 'Within the skew.'), 20_000);
});

test('a token for another app (wrong audience) or another issuer gets 401', async () => {
  const activity = freshMention();
  const otherApp = await stack.teams.signToken({ serviceUrl: activity.serviceUrl, audience: '99999999-0000-0000-0000-000000000000' });
  assert.equal((await post(activity, otherApp)).status, 401);
  const otherIssuer = await stack.teams.signToken({ serviceUrl: activity.serviceUrl, issuer: 'https://sts.example.com/' });
  assert.equal((await post(activity, otherIssuer)).status, 401);
  await assertNothingHappened(activity.conversation.id);
});

test("a token whose serviceurl is not the activity's gets 401: replies cannot be redirected", async () => {
  const activity = freshMention();
  const token = await stack.teams.signToken({ serviceUrl: 'https://smba.trafficmanager.net/emea/' });
  assert.equal((await post(activity, token)).status, 401);
  await assertNothingHappened(activity.conversation.id);
});

test('single-tenant by default: an activity from another tenant gets 401', async () => {
  const activity = freshMention();
  activity.conversation.tenantId = 'ffffffff-0000-0000-0000-000000000000';
  (activity.channelData as { tenant: { id: string } }).tenant.id = 'ffffffff-0000-0000-0000-000000000000';
  const token = await stack.teams.signToken({ serviceUrl: activity.serviceUrl });
  assert.equal((await post(activity, token)).status, 401);
  await assertNothingHappened(activity.conversation.id);
});

const recorded = (path: string) => JSON.parse(readFileSync(new URL(`../fixtures/chat-sdk-replay/${path}`, import.meta.url), 'utf8'));

test('a recorded personal chat message (no mention) is answered in the personal chat', async () => {
  stack.bedrock.script({ text: 'Answered in private.' });
  const activity = structuredClone(recorded('dm/teams.json').dmMessage);
  activity.serviceUrl = stack.teams.serviceUrl;
  activity.conversation.id = `a:recorded-personal-${Date.now()}`;
  const token = await stack.teams.signToken({ serviceUrl: activity.serviceUrl });
  assert.equal((await post(activity, token)).status, 200);
  await stack.teams.waitFor(() => stack.teams.botMessages(activity.conversation.id).find((m) => m.text === 'Answered in private.'), 30_000);
  assert.match((runsFor(activity.conversation.id)[0]!.input as { threadId: string }).threadId, /^teams:/);
});

test('a recorded Action.Submit click on the Stop button with nothing running tells the clicker so', async () => {
  const activity = structuredClone(recorded('actions-reactions/teams.json').action);
  activity.serviceUrl = stack.teams.serviceUrl;
  activity.conversation.id = `19:d441d38c655c47a085215b2726e76927@thread.tacv2;messageid=${Date.now()}`;
  activity.value = { actionId: 'stop-run', value: 'run-none' };
  const token = await stack.teams.signToken({ serviceUrl: activity.serviceUrl });
  assert.equal((await post(activity, token)).status, 200);
  const notice = await stack.teams.waitFor(
    () => stack.teams.botMessages(activity.conversation.id).find((m) => /Nothing is running/.test(m.text ?? '')),
    15_000,
  );
  assert.equal(notice.targeted, true, 'only the clicker sees it');
  assert.equal(runsFor(activity.conversation.id).length, 0);
});

// The same button as an Adaptive Card Action.Execute: Teams sends an invoke and waits for its
// answer in the response (an empty message activity result), not for a message.
test('an Adaptive Card invoke of the Stop button is answered with the invoke result and tells the clicker nothing is running', async () => {
  const activity = structuredClone(recorded('actions-reactions/teams.json').action);
  activity.type = 'invoke';
  activity.name = 'adaptiveCard/action';
  activity.serviceUrl = stack.teams.serviceUrl;
  activity.conversation.id = `19:d441d38c655c47a085215b2726e76927@thread.tacv2;messageid=${Date.now()}`;
  activity.value = { action: { type: 'Action.Execute', data: { actionId: 'stop-run', value: 'run-none' } } };
  const token = await stack.teams.signToken({ serviceUrl: activity.serviceUrl });
  const response = await post(activity, token);
  assert.equal(response.status, 200);
  assert.deepEqual(await response.json(), { statusCode: 200, type: 'application/vnd.microsoft.activity.message', value: '' });
  const notice = await stack.teams.waitFor(
    () => stack.teams.botMessages(activity.conversation.id).find((m) => /Nothing is running/.test(m.text ?? '')),
    15_000,
  );
  assert.equal(notice.targeted, true, 'only the clicker sees it');
  assert.equal(runsFor(activity.conversation.id).length, 0);
});
