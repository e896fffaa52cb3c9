// The webhook's contract with Slack, driven with real recorded payloads through the local API
// Gateway stand-in: verification, redelivery, and bad input that must enqueue nothing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { PutSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { signSlackRequest } from '../../packages/local-cloud/src/slack/index.ts';
import { BOT_TOKEN, startTestStack, SIGNING_SECRET, type TestStack } from '../support/local-stack.ts';
import { eventually } from '../support/eventually.ts';
import { inboxDepth } from '../support/inbox.ts';
import { LOCAL_CREDENTIALS } from '../support/dynamo.ts';

const fixtures = JSON.parse(readFileSync(new URL('../fixtures/chat-sdk-replay/slack.json', import.meta.url), 'utf8'));
const BOT = fixtures.botUserId as string;

const REREAD_SECONDS = 1;
let stack: TestStack;
before(async () => {
  // A bad signature re-reads the Slack secret at most once a second here (10 s by default).
  stack = await startTestStack({ botUserId: BOT, env: { SLACK_SECRET_REREAD_SECONDS: String(REREAD_SECONDS) } });
});
after(async () => {
  await stack?.stop();
});

let sequence = 0;
/** The recorded mention, as a new message in a new thread (fresh ts and event id). */
function freshMention(text = 'Hey') {
  sequence++;
  const ts = `${1767224888 + sequence}.${String(280449 + sequence).padStart(6, '0')}`;
  const payload = structuredClone(fixtures.mention);
  payload.event.ts = payload.event.event_ts = ts;
  payload.event.text = `<@${BOT}> ${text}`;
  payload.event_id = `Ev0FIXTURE${sequence}`;
  payload.event_time = Math.floor(Date.now() / 1000);
  return payload;
}

async function post(body: string, headers: Record<string, string> = {}) {
  return fetch(stack.cloud.slackEventsUrl, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
}

async function postSigned(payload: unknown, extra: Record<string, string> = {}, timestamp?: number) {
  const body = typeof payload === 'string' ? payload : JSON.stringify(payload);
  return post(body, { ...signSlackRequest(body, SIGNING_SECRET, timestamp), ...extra });
}

const runsFor = (ts: string) =>
  [...stack.cloud.stepFunctions.executions.values()].filter((e) => (e.input as { threadId: string }).threadId.endsWith(`:${ts}`));

async function assertNothingHappened(ts: string) {
  await new Promise((r) => setTimeout(r, 1500)); // longer than the poller's wait: anything enqueued would have run
  assert.equal(await inboxDepth(stack), 0);
  assert.equal(runsFor(ts).length, 0);
}

test('GET /health answers', async () => {
  const response = await fetch(`${stack.cloud.apiUrl}/health`);
  assert.equal(response.status, 200);
  assert.deepEqual(await response.json(), { ok: true });
});

test('url_verification returns the challenge', async () => {
  const response = await postSigned({ type: 'url_verification', token: 'x', challenge: 'challenge-123' });
  assert.equal(response.status, 200);
  assert.deepEqual(await response.json(), { challenge: 'challenge-123' });
});

// Slack checks the events URL while the app is being created, signed with the new app's signing
// secret, which the operator cannot have stored yet: the challenge, which carries no data, is
// answered without a signature. Nothing else may pass unsigned.
test("an unsigned url_verification of exactly Slack's shape is answered, signed with any secret or none", async () => {
  const payload = {
    type: 'url_verification',
    token: 'Jhj5dZrVaK7ZwHHjRyZWjbDl',
    challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
  };
  const unsigned = await post(JSON.stringify(payload));
  assert.equal(unsigned.status, 200);
  assert.deepEqual(await unsigned.json(), { challenge: payload.challenge });
  const body = JSON.stringify(payload);
  const newApp = await post(body, signSlackRequest(body, 'the-new-apps-signing-secret'));
  assert.equal(newApp.status, 200);
  assert.deepEqual(await newApp.json(), { challenge: payload.challenge });
});

test('anything else unsigned is refused, however much it looks like a url_verification', async () => {
  const mention = freshMention();
  const challenge = 'abc123';
  const lookalikes: [string, string, string?][] = [
    ['an event riding along', JSON.stringify({ type: 'url_verification', token: 't', challenge, event: mention.event })],
    ['an event callback with a challenge', JSON.stringify({ ...mention, challenge })],
    ['a challenge that is not a string', JSON.stringify({ type: 'url_verification', token: 't', challenge: { a: 1 } })],
    ['markup to reflect', JSON.stringify({ type: 'url_verification', token: 't', challenge: '<script>alert(1)</script>' })],
    ['an oversized challenge', JSON.stringify({ type: 'url_verification', token: 't', challenge: 'a'.repeat(200) })],
    ['no token', JSON.stringify({ type: 'url_verification', challenge })],
    ['a duplicated key', `{"type":"url_verification","token":"t","challenge":"${challenge}","type":"event_callback"}`],
    ['a form body', `type=url_verification&token=t&challenge=${challenge}`, 'application/x-www-form-urlencoded'],
    ['an array', JSON.stringify([{ type: 'url_verification', token: 't', challenge }])],
  ];
  for (const [what, body, contentType] of lookalikes) {
    const response = await post(body, contentType ? { 'content-type': contentType } : {});
    assert.equal(response.status, 401, what);
    assert.doesNotMatch(await response.text(), /abc123|script/, what);
  }
  await assertNothingHappened(mention.event.ts);
});

test('a recorded mention is answered once, even when Slack redelivers it', async () => {
  stack.bedrock.script({ text: 'Hello from the agent.' });
  const payload = freshMention();
  const first = await postSigned(payload);
  assert.equal(first.status, 200);
  // Slack retries with the same event id and X-Slack-Retry-Num when it thinks the ack was lost.
  const retry = await postSigned(payload, { 'X-Slack-Retry-Num': '1', 'X-Slack-Retry-Reason': 'http_timeout' });
  assert.equal(retry.status, 200);
  // The same message as a second event type (Slack sends message and app_mention for a mention).
  const asAppMention = structuredClone(payload);
  asAppMention.event.type = 'app_mention';
  asAppMention.event_id = `${payload.event_id}b`;
  assert.equal((await postSigned(asAppMention)).status, 200);

  const ts = payload.event.ts as string;
  const replies = await stack.slack.waitFor(() => {
    const found = stack.slack.messages.thread(payload.event.channel, ts).filter((m) => m.bot_id && m.text !== '...');
    return found.length ? found : undefined;
  }, 15_000);
  await eventually(() => runsFor(ts).every((e) => e.status !== 'RUNNING') && runsFor(ts).length > 0, 10_000, 'run finished');
  await new Promise((r) => setTimeout(r, 1000));
  assert.equal(runsFor(ts).length, 1, 'one run');
  assert.equal(stack.slack.messages.thread(payload.event.channel, ts).filter((m) => m.bot_id).length, 1, 'one reply');
  assert.equal(replies[0]!.text, 'Hello from the agent.');
});

test('a bad signature gets 401 and enqueues nothing', async () => {
  const payload = freshMention();
  const body = JSON.stringify(payload);
  const headers = signSlackRequest(body, 'not-the-signing-secret');
  const response = await post(body, headers);
  assert.equal(response.status, 401);
  const unsigned = await post(body);
  assert.equal(unsigned.status, 401);
  await assertNothingHappened(payload.event.ts);
});

test('a correctly signed request older than five minutes is rejected', async () => {
  const payload = freshMention();
  const sixMinutesAgo = Math.floor(Date.now() / 1000) - 6 * 60;
  const response = await postSigned(payload, {}, sixMinutesAgo);
  assert.equal(response.status, 401);
  await assertNothingHappened(payload.event.ts);
});

test('malformed JSON gets 400', async () => {
  const response = await postSigned('{"type": "event_callback", "event": {');
  assert.equal(response.status, 400);
  assert.equal(await inboxDepth(stack), 0);
});

test('an oversized body is rejected with the limit named', async () => {
  const payload = freshMention('x'.repeat(1024 * 1024 + 10));
  const response = await postSigned(payload);
  assert.equal(response.status, 413);
  assert.match(await response.text(), /1048576-byte limit/);
  await assertNothingHappened(payload.event.ts);
});

test("the signing secret of a Slack app created after the deploy verifies the app's first events as soon as it is stored", async () => {
  const operator = new SecretsManagerClient({
    endpoint: stack.cloud.env.AWS_ENDPOINT_URL_SECRETS_MANAGER,
    region: stack.cloud.env.AWS_REGION,
    // A key the local IAM did not issue: the operator's, as with the aws CLI.
    credentials: LOCAL_CREDENTIALS,
  });
  const putSecret = (signingSecret: string, botToken: string) =>
    operator.send(
      new PutSecretValueCommand({ SecretId: stack.cloud.names.slackSecretArn, SecretString: JSON.stringify({ signingSecret, botToken }) }),
    );
  // An event nobody handles (a channel renamed): acknowledged once it verifies, nothing enqueued.
  let sequence = 0;
  const sendEvent = (signingSecret: string) => {
    sequence++;
    const body = JSON.stringify({
      type: 'event_callback',
      team_id: fixtures.mention.team_id,
      api_app_id: fixtures.mention.api_app_id,
      event: {
        type: 'channel_rename',
        channel: { id: 'C0RENAMED', name: `renamed-${sequence}` },
        event_ts: `${1767224000 + sequence}.000100`,
      },
      event_id: `Ev0RENAME${sequence}`,
      event_time: Math.floor(Date.now() / 1000),
    });
    return post(body, signSlackRequest(body, signingSecret));
  };
  const pause = () => new Promise((r) => setTimeout(r, REREAD_SECONDS * 1000 + 50));
  try {
    // As deployed: a random signing secret. The new app's events do not verify: 401.
    await putSecret('GeneratedAtDeploy0123456789abcdef', 'xoxb-replace-me');
    await pause();
    assert.equal((await sendEvent('new-apps-signing-secret')).status, 401);
    // The operator stores the app's credentials: the next event verifies at once, although the
    // webhook read the secret moments ago and keeps a read for 60 s.
    await pause();
    await putSecret('new-apps-signing-secret', 'xoxb-new-app');
    assert.equal((await sendEvent('new-apps-signing-secret')).status, 200);
    // Bad signatures re-read the secret at most once per interval.
    const reads = stack.cloud.secretsManager.reads;
    for (let i = 0; i < 5; i++) assert.equal((await sendEvent(`forged-${i}`)).status, 401);
    assert.ok(stack.cloud.secretsManager.reads - reads <= 1, `${stack.cloud.secretsManager.reads - reads} reads for 5 forged requests`);
    assert.equal(await inboxDepth(stack), 0);
  } finally {
    await putSecret(SIGNING_SECRET, BOT_TOKEN);
    operator.destroy();
  }
});
