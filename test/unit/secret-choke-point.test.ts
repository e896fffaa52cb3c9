// Every message the bot sends passes the secret filter in one place: the adapters of the chat that
// createAgentChat builds. This drives that chat, with each Slack adapter (the sender every function
// but the Slack webhook uses, and the webhook's full Chat SDK adapter) against the Slack stand-in and
// the Teams Connector adapter against the Teams stand-in, through each way a message
// leaves: a plain post, a card, a file with its comment (the upload tool), a streamed reply (natively
// and as post-and-edit), an edit, an ephemeral reply, a post to a channel and a status line. Neither
// stand-in may ever receive the secret, and each must show where it was redacted.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Card, CardText, ConsoleLogger, type Thread } from 'chat';
import { createAgentChat, type AgentChat, type PlatformAdapters } from '../../shared/platforms/chat.ts';
import { slackAdapter } from '../../shared/platforms/slack/adapter.ts';
import { SlackSenderAdapter } from '../../shared/platforms/slack/sender.ts';
import { documentClient } from '../../shared/aws/dynamodb.ts';
import { TeamsConnectorAdapter } from '../../shared/platforms/teams/connector.ts';
import { encodeTeamsThreadId } from '../../shared/platforms/teams/thread-id.ts';
import { paceTeamsReplies } from '../../shared/platforms/teams/pacing.ts';
import { clientCredentialsTokens } from '../../shared/platforms/teams/token.ts';
import { startSlackStandIn, type SlackStandIn } from '../../packages/local-cloud/src/slack/index.ts';
import { startTeamsStandIn, type TeamsStandIn } from '../../packages/local-cloud/src/teams/index.ts';

const TOKEN = 'ghp_Q2xhdWRlV2FzSGVyZUFuZFNhaWRIZWxsbzEy';
const ACME = 'acme_live_Q2xhdWRlV2FzSGVyZTEyMzQ1';
const REDACTED = '[redacted GitHub token]';
const SLACK = { signingSecret: 'choke-point-signing-secret', botToken: 'xoxb-choke-point' };
const TEAMS = { appId: '11111111-2222-3333-4444-555555555555', appPassword: 'choke-point-password' };

let slack: SlackStandIn;
let teams: TeamsStandIn;
let chat: AgentChat;
/** The same chat with the Slack webhook's full adapter in place of the sender. */
let webhookChat: AgentChat;
/** Every request body the Teams adapter sent, in order (the stand-in keeps only each message's latest text). */
const teamsBodies: string[] = [];

before(async () => {
  [slack, teams] = await Promise.all([
    startSlackStandIn(SLACK),
    startTeamsStandIn({ ...TEAMS, tenantId: 'a1b2c3d4-e5f6-7890-abcd-ef1234567890' }),
  ]);
  const logger = new ConsoleLogger('error');
  const connector = new TeamsConnectorAdapter({
    appId: TEAMS.appId,
    tokens: clientCredentialsTokens({ ...TEAMS, tokenUrl: teams.tokenUrl }),
    logger,
    // The stand-in is the Bot Connector here: the bot's token may go to it.
    serviceUrls: { reference: async () => undefined, connectorOrigins: [new URL(teams.serviceUrl).origin] },
    fetch: async (url, init) => {
      teamsBodies.push(String(init?.body ?? ''));
      return fetch(url, init);
    },
  });
  const chatWith = (slackSide: PlatformAdapters['slack']) =>
    createAgentChat({
      adapters: { slack: slackSide, teams: paceTeamsReplies(connector, { minEditIntervalMs: 0 }) },
      // Posting never touches the chat state: no table is reached.
      db: documentClient(new DynamoDBClient({ endpoint: 'http://127.0.0.1:9', region: 'local' })),
      tableName: 'unused',
      logger,
      streamUpdateIntervalMs: 5,
      secretPatterns: async () => [{ name: 'Acme API key', regex: 'acme_(?:live|test)_[A-Za-z0-9]{24}' }],
    });
  webhookChat = chatWith(slackAdapter(SLACK, { logger, apiUrl: slack.apiUrl }));
  chat = chatWith(new SlackSenderAdapter({ botToken: SLACK.botToken, apiUrl: slack.apiUrl, logger }));
});
after(async () => {
  await Promise.allSettled([slack?.close(), teams?.close()]);
});

/** A reply the way the model streams one: over 8,192 characters without whitespace, the token split across deltas. */
async function* longReply(): AsyncIterable<string> {
  yield `Here:${'='.repeat(9000)}${TOKEN.slice(0, 12)}`;
  yield `${TOKEN.slice(12)} and ${ACME.slice(0, 15)}`;
  yield `${ACME.slice(15)} done.`;
}

/** Sends the secrets through every path a message leaves by. */
async function sendEverything(thread: Thread, channelId: string, userId: string, through = chat) {
  await thread.startTyping(`Reading ${TOKEN}…`);
  const plain = await thread.post(`The token is ${TOKEN}.`);
  await thread.post({ markdown: `**token** ${TOKEN}` });
  await thread.post(Card({ children: [CardText(`In a card: ${TOKEN}`)] }));
  // The upload tool: a file with the model's comment.
  await thread.post({
    markdown: `Uploaded, token ${TOKEN}`,
    files: [{ data: Buffer.from('png bytes'), filename: 'chart.png', mimeType: 'image/png' }],
  });
  await thread.post(longReply());
  // A streamed reply short enough to be posted in one call where Slack streams.
  await thread.post(
    (async function* () {
      yield `Short: ${TOKEN.slice(0, 12)}`;
      yield `${TOKEN.slice(12)}.`;
    })(),
  );
  await thread.adapter.editMessage(thread.id, plain.id, `Edited: ${TOKEN} and ${ACME}`);
  await thread.postEphemeral(userId, `Only you: ${TOKEN}`, { fallbackToDM: false });
  await through.channel(channelId).post(`New thread: ${TOKEN}`);
}

const assertRedacted = (seen: string, where: string) => {
  assert.ok(!seen.includes(TOKEN.slice(4)), `the token reached ${where}`);
  assert.ok(!seen.includes(TOKEN.slice(0, 12)), `the token's first part reached ${where}`);
  assert.ok(!seen.includes(ACME.slice(5)), `the Acme key reached ${where}`);
  assert.ok(seen.includes(REDACTED), `${where} shows no redaction`);
  assert.ok(seen.includes('[redacted Acme API key]'), `${where} shows no redaction of the deployment's own pattern`);
};

for (const [kind, channel, streamed, adapter] of [
  ['a channel thread (post and edit)', 'C0CHOKE', 'chat.update', 'the sender'],
  ['a direct message (native streaming)', 'D0CHOKE', 'chat.startStream', 'the sender'],
  ['a channel thread (post and edit)', 'C0CHOKE', 'chat.update', "the webhook's full adapter"],
  ['a direct message (native streaming)', 'D0CHOKE', 'chat.startStream', "the webhook's full adapter"],
] as const) {
  test(`Slack, ${kind}, ${adapter}: nothing the bot sends carries a secret, whichever way it leaves`, async () => {
    const through = adapter === 'the sender' ? chat : webhookChat;
    const root = await slack.postUserMessage({ channel, text: 'hello' });
    const first = slack.calls.length;
    const thread = through.thread(`slack:${root.channel}:${root.threadTs}`);
    await sendEverything(thread, `slack:${root.channel}`, 'U0LOCALUSER', through);
    const calls = slack.calls.slice(first);
    for (const method of ['chat.postMessage', 'chat.update', 'chat.postEphemeral', 'files.completeUploadExternal', streamed]) {
      assert.ok(
        calls.some((c) => c.method === method),
        `${method} was called (${[...new Set(calls.map((c) => c.method))].join(', ')})`,
      );
    }
    assertRedacted(JSON.stringify(calls), 'the Slack Web API');
    const texts = slack.messages.thread(root.channel, root.threadTs).map((m) => m.text);
    assert.ok(
      texts.some((t) => t.endsWith(`${'='.repeat(9000)}${REDACTED} and [redacted Acme API key] done.`)),
      'the long reply arrived whole, redacted',
    );
  });
}

for (const [kind, conversationId] of [
  ['a channel thread (post and edit)', '19:choke@thread.tacv2;messageid=1700000000000'],
  ['a personal chat (native streaming)', 'a:1choke-point-personal-chat'],
] as const) {
  test(`Teams, ${kind}: nothing the bot sends carries a secret, whichever way it leaves`, async () => {
    const threadId = encodeTeamsThreadId({ conversationId, serviceUrl: teams.serviceUrl });
    const first = teamsBodies.length;
    await sendEverything(chat.thread(threadId), chat.thread(threadId).channelId, '29:choke-user');
    const bodies = teamsBodies.slice(first);
    if (conversationId.startsWith('a:'))
      assert.ok(
        bodies.some((b) => b.includes('streaminfo')),
        'the reply streamed natively',
      );
    assertRedacted(bodies.join('\n'), 'the Bot Connector');
    const shown = teams.botMessages(conversationId).map((m) => m.text ?? '');
    assert.ok(
      shown.some((t) => t.endsWith(`${'='.repeat(9000)}${REDACTED} and [redacted Acme API key] done.`)),
      'the long reply arrived whole, redacted',
    );
  });
}
