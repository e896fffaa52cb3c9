// The Connector adapter is the one place the bot's token goes to a serviceUrl: every call it makes
// (post, targeted post, edit, delete, typing, native streaming, a new thread in a channel) and every
// file it downloads with the token first checks the thread's serviceUrl against the conversation's
// stored one (shared/platforms/teams/service-url.ts), before a token is even fetched.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConsoleLogger, type Attachment } from 'chat';
import { TeamsConnectorAdapter } from '../../shared/platforms/teams/connector.ts';
import type { ConversationReference } from '../../shared/platforms/teams/conversations.ts';
import { BOT_CONNECTOR_ORIGINS } from '../../shared/platforms/teams/endpoints.ts';
import { encodeTeamsThreadId } from '../../shared/platforms/teams/thread-id.ts';

const CHANNEL = '19:general@thread.tacv2';
const CONNECTOR = 'https://smba.trafficmanager.net/amer/';
/** Loopback: the Teams package's own host check lets it through, so only ours stands in the way. */
const ATTACKER = 'http://127.0.0.1:9/';

/** The references the webhook stored from verified activities: here, one channel's. */
const stored = new Map<string, ConversationReference>([
  [CHANNEL, { channelId: CHANNEL, serviceUrl: CONNECTOR, conversationType: 'channel', updatedAt: '2026-01-01T00:00:00.000Z' }],
]);

function adapter() {
  const calls: { url: string; method: string; authorization: string | null }[] = [];
  let tokensIssued = 0;
  const fetchFn = (async (url: string | URL | Request, init?: RequestInit) => {
    calls.push({ url: String(url), method: init?.method ?? 'GET', authorization: new Headers(init?.headers).get('authorization') });
    return new Response(JSON.stringify({ id: 'activity-1' }), { headers: { 'content-type': 'application/json' } });
  }) as typeof fetch;
  const connector = new TeamsConnectorAdapter({
    appId: 'app',
    tokens: async () => `bot-token-${++tokensIssued}`,
    logger: new ConsoleLogger('error'),
    fetch: fetchFn,
    serviceUrls: { reference: async (channelId) => stored.get(channelId), connectorOrigins: BOT_CONNECTOR_ORIGINS },
  });
  return { connector, calls, tokensIssued: () => tokensIssued };
}

const threadAt = (serviceUrl: string, conversationId = `${CHANNEL};messageid=1700000000001`) =>
  encodeTeamsThreadId({ conversationId, serviceUrl });

/** Every call the agent's functions make on a thread. */
const everyCall = (connector: TeamsConnectorAdapter, threadId: string) => ({
  post: () => connector.postMessage(threadId, 'hello'),
  postEphemeral: () => connector.postEphemeral(threadId, '29:user', 'only you'),
  edit: () => connector.editMessage(threadId, 'activity-1', 'edited'),
  delete: () => connector.deleteMessage(threadId, 'activity-1'),
  typing: () => connector.startTyping(threadId),
  postChannelMessage: () => connector.postChannelMessage(threadId, 'a new thread'),
});

test("every Connector call to the conversation's stored serviceUrl goes out with the bot's token", async () => {
  const { connector, calls } = adapter();
  for (const [name, call] of Object.entries(everyCall(connector, threadAt(CONNECTOR)))) {
    await call();
    const sent = calls.at(-1);
    assert.ok(sent?.url.startsWith(CONNECTOR), `${name} went to ${sent?.url}`);
    assert.match(sent?.authorization ?? '', /^Bearer bot-token-/, name);
  }
});

for (const [what, serviceUrl] of [
  ["an attacker's server", ATTACKER],
  ["another of Microsoft's regions", 'https://smba.trafficmanager.net/emea/'],
] as const) {
  test(`every Connector call to ${what} in a known conversation's thread id is refused without a request or a token`, async () => {
    const { connector, calls, tokensIssued } = adapter();
    for (const [name, call] of Object.entries(everyCall(connector, threadAt(serviceUrl)))) {
      await assert.rejects(
        call(),
        /Refusing to send the bot's token: the service URL .* is not the one Teams gave for this conversation/,
        name,
      );
    }
    assert.deepEqual(calls, []);
    assert.equal(tokensIssued(), 0);
  });
}

test('a personal chat streams natively only to its trusted serviceUrl', async () => {
  const { connector, calls } = adapter();
  async function* words() {
    yield 'hi';
  }
  // No activity named this chat yet: only a Bot Connector origin will do.
  await connector.stream(encodeTeamsThreadId({ conversationId: 'a:new-chat', serviceUrl: CONNECTOR }), words());
  assert.ok(calls.length > 0 && calls.every((c) => c.url.startsWith(CONNECTOR)));
  calls.length = 0;
  await assert.rejects(
    connector.stream(encodeTeamsThreadId({ conversationId: 'a:new-chat', serviceUrl: ATTACKER }), words()),
    /Refusing to send the bot's token/,
  );
  assert.deepEqual(calls, []);
});

const botFile = (url: string, connectorOrigin: string): Attachment => ({
  type: 'file',
  name: 'notes.txt',
  url,
  fetchMetadata: { url, auth: 'bot', connectorOrigin },
});

test("a file on the conversation's Connector is fetched with the bot's token", async () => {
  const { connector, calls } = adapter();
  const url = 'https://smba.trafficmanager.net/amer/v3/attachments/1/views/original';
  const file = connector.rehydrateAttachment(botFile(url, 'https://smba.trafficmanager.net'), threadAt(CONNECTOR));
  assert.equal((await file.fetchData!()).toString(), JSON.stringify({ id: 'activity-1' }));
  assert.deepEqual(calls, [{ url, method: 'GET', authorization: 'Bearer bot-token-1' }]);
});

test('a file said to need the bot token is refused without a request when it is not on the thread’s trusted Connector', async () => {
  const { connector, calls } = adapter();
  const refused = [
    // Elsewhere than the Connector the activity named.
    connector.rehydrateAttachment(botFile('https://attacker.example/steal', 'https://smba.trafficmanager.net'), threadAt(CONNECTOR)),
    // On the serviceUrl a thread id names, when that is not the conversation's.
    connector.rehydrateAttachment(botFile(`${ATTACKER}v3/attachments/1/views/original`, 'http://127.0.0.1:9'), threadAt(ATTACKER)),
    // Without a thread to check against.
    connector.rehydrateAttachment(
      botFile('https://smba.trafficmanager.net/amer/v3/attachments/1/views/original', 'https://smba.trafficmanager.net'),
    ),
  ];
  for (const file of refused) await assert.rejects(file.fetchData!(), /Refusing to send the bot's token with a file download/);
  assert.deepEqual(calls, []);
});
