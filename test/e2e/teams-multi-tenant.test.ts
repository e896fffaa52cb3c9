// A multi-tenant Teams bot (TEAMS_MULTI_TENANT, the teamsMultiTenant deployment setting): activities
// from any tenant are accepted and answered, with every other check of the token unchanged.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startTestStack, type TestStack } from '../support/local-stack.ts';
import { inboxDepth } from '../support/inbox.ts';

const fixtures = JSON.parse(readFileSync(new URL('../fixtures/chat-sdk-replay/teams.json', import.meta.url), 'utf8'));
const OTHER_TENANT = 'ffffffff-0000-0000-0000-000000000000';

let stack: TestStack;
before(async () => {
  stack = await startTestStack({ teams: true, env: { TEAMS_MULTI_TENANT: 'true' } });
});
after(async () => {
  await stack?.stop();
});

/** The recorded channel mention as a new thread from another tenant, served by the stand-in's serviceUrl. */
function mentionFromOtherTenant(id: string, text: string) {
  const activity = structuredClone(fixtures.mention);
  activity.id = id;
  activity.text = `<at>${fixtures.botName}</at> ${text}`;
  activity.serviceUrl = stack.teams.serviceUrl;
  activity.conversation.id = `19:d441d38c655c47a085215b2726e76927@thread.tacv2;messageid=${id}`;
  activity.conversation.tenantId = OTHER_TENANT;
  activity.channelData.tenant.id = OTHER_TENANT;
  return activity as { serviceUrl: string; conversation: { id: string } };
}

const post = async (activity: unknown, token: string) =>
  fetch(stack.cloud.teamsMessagesUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(activity),
  });

test('an activity from another tenant is answered in its thread', async () => {
  stack.bedrock.script({ text: 'Hello, other tenant.' });
  const activity = mentionFromOtherTenant('1767224999001', 'hello from elsewhere');
  const token = await stack.teams.signToken({ serviceUrl: activity.serviceUrl });
  assert.equal((await post(activity, token)).status, 200);
  await stack.teams.waitFor(() => stack.teams.botMessages(activity.conversation.id).find((m) => m.text === 'Hello, other tenant.'), 60_000);
});

test('multi-tenant still refuses a token for another app, with nothing enqueued', async () => {
  const activity = mentionFromOtherTenant('1767224999002', 'not for you');
  const token = await stack.teams.signToken({ serviceUrl: activity.serviceUrl, audience: '99999999-0000-0000-0000-000000000000' });
  assert.equal((await post(activity, token)).status, 401);
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal(await inboxDepth(stack), 0);
  assert.equal(stack.teams.botMessages(activity.conversation.id).length, 0);
});
