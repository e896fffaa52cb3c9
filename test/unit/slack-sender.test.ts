// The Slack sender against the Slack stand-in: reading a thread asks users.info once per person
// (not once per message, as the full adapter did without a Chat instance) until NAME_CACHE_MS has
// passed, a call Slack rate-limits is sent again after its Retry-After (one that failed, after a
// pause), and a file's download carries the bot token only to Slack's own hosts.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { after, before, test } from 'node:test';
import { startSlackStandIn, type SlackStandIn } from '../../packages/local-cloud/src/slack/index.ts';
import { NAME_CACHE_MS, SlackSenderAdapter } from '../../shared/platforms/slack/sender.ts';
import { createLogger } from '../../shared/observability/log.ts';

const SLACK = { signingSecret: 'sender-signing-secret', botToken: 'xoxb-sender' };
let slack: SlackStandIn;

before(async () => {
  slack = await startSlackStandIn(SLACK);
});
after(() => slack.close());

const callsOf = (method: string) => slack.calls.filter((call) => call.method === method).length;

test("reading a thread looks each person's name up once, and again only after NAME_CACHE_MS", async () => {
  let clock = 1_000_000;
  const sender = new SlackSenderAdapter({
    botToken: SLACK.botToken,
    apiUrl: slack.apiUrl,
    logger: createLogger({ level: 'silent' }),
    now: () => clock,
  });
  slack.users.set('U0ALICE', { id: 'U0ALICE', name: 'alice', real_name: 'Alice Example', is_bot: false });
  const root = await slack.postUserMessage({ user: 'U0ALICE', text: `<@${slack.botUserId}> first`, events: [] });
  for (const text of ['second', `third, for <@${slack.botUserId}>`, 'fourth'])
    await slack.postUserMessage({ user: 'U0ALICE', text, threadTs: root.ts, events: [] });
  const threadId = `slack:${root.channel}:${root.ts}`;
  const before = callsOf('users.info');
  const { messages } = await sender.fetchMessages(threadId, { direction: 'forward' });
  assert.equal(messages.length, 4);
  assert.deepEqual(
    messages.map((m) => m.author.fullName),
    ['Alice Example', 'Alice Example', 'Alice Example', 'Alice Example'],
  );
  assert.match(messages[2]!.text, /^third, for @/);
  assert.equal(callsOf('users.info') - before, 2, 'Alice and the bot, once each');
  await sender.fetchMessages(threadId, { direction: 'forward' });
  assert.equal(callsOf('users.info') - before, 2, 'a second read asks nothing again');
  clock += NAME_CACHE_MS;
  await sender.fetchMessages(threadId, { direction: 'forward' });
  assert.equal(callsOf('users.info') - before, 4, 'names older than NAME_CACHE_MS are asked again');
});

test('a call Slack answers with 429 is sent again after its Retry-After, and goes through', async () => {
  const waits: number[] = [];
  const sender = new SlackSenderAdapter({
    botToken: SLACK.botToken,
    apiUrl: slack.apiUrl,
    logger: createLogger({ level: 'silent' }),
    // The stand-in's window frees its slot after a second: the wait is real, and recorded.
    sleep: (ms) => (waits.push(ms), new Promise((resolve) => setTimeout(resolve, ms))),
  });
  const root = await slack.postUserMessage({ text: 'rate limits', events: [] });
  slack.rateLimits['chat.postMessage'] = { limit: 1, windowMs: 1000 };
  try {
    const threadId = `slack:${root.channel}:${root.ts}`;
    await sender.postMessage(threadId, 'one');
    const second = await sender.postMessage(threadId, 'two');
    assert.equal(waits.length, 1, 'the second post waited once');
    assert.equal(slack.messages.get(root.channel, second.id)?.text, 'two');
  } finally {
    delete slack.rateLimits['chat.postMessage'];
  }
});

test("a file's download carries the bot token only to Slack's file hosts, hop by hop; an internal address is refused", async () => {
  // Where the downloads went and with which authorization: a transport that answers without a network.
  const sent: { url: string; authorization: string | undefined }[] = [];
  const fileTransport = async (url: URL, _signal: AbortSignal, headers?: Record<string, string>) => {
    sent.push({ url: url.href, authorization: headers?.authorization });
    const redirect = url.hostname === 'files.slack.com' && url.pathname === '/moved';
    const response = Readable.from(redirect ? [] : [Buffer.from(`bytes of ${url.pathname}`)]) as unknown as IncomingMessage;
    return Object.assign(response, {
      statusCode: redirect ? 302 : 200,
      headers: redirect ? { location: 'https://attacker.example/stolen' } : { 'content-type': 'application/octet-stream' },
    });
  };
  const sender = new SlackSenderAdapter({ botToken: SLACK.botToken, logger: createLogger({ level: 'silent' }), fileTransport });
  const fetchOf = (url: string) => sender.rehydrateAttachment({ type: 'file', url }).fetchData!();

  assert.equal(String(await fetchOf('https://files.slack.com/files-pri/T1-F1/report.csv')), 'bytes of /files-pri/T1-F1/report.csv');
  assert.equal(String(await fetchOf('https://attacker.example/report.csv')), 'bytes of /report.csv');
  // A Slack file that redirects elsewhere: the token goes to Slack's hop, not to the next one.
  await fetchOf('https://files.slack.com/moved');
  assert.deepEqual(sent, [
    { url: 'https://files.slack.com/files-pri/T1-F1/report.csv', authorization: `Bearer ${SLACK.botToken}` },
    { url: 'https://attacker.example/report.csv', authorization: undefined },
    { url: 'https://files.slack.com/moved', authorization: `Bearer ${SLACK.botToken}` },
    { url: 'https://attacker.example/stolen', authorization: undefined },
  ]);
  await assert.rejects(fetchOf('https://127.0.0.1/file'), /internal attachment URL/);
  assert.equal(sent.length, 4, 'the internal address was never asked');
});

test('a call that gets no answer or a server error is sent again after a growing pause; one that keeps failing throws', async () => {
  const waits: number[] = [];
  let failuresLeft = 2;
  const sender = new SlackSenderAdapter({
    botToken: SLACK.botToken,
    apiUrl: slack.apiUrl,
    logger: createLogger({ level: 'silent' }),
    sleep: async (ms) => void waits.push(ms),
    // The first attempt gets no answer, the second a 503; the third reaches the stand-in.
    fetch: async (input, init) => {
      if (failuresLeft-- === 2) throw new TypeError('fetch failed');
      if (failuresLeft === 0) return new Response('unavailable', { status: 503 });
      return fetch(input, init);
    },
  });
  const root = await slack.postUserMessage({ text: 'flaky network', events: [] });
  const sent = await sender.postMessage(`slack:${root.channel}:${root.ts}`, 'through at last');
  assert.equal(slack.messages.get(root.channel, sent.id)?.text, 'through at last');
  assert.deepEqual(waits, [1000, 2000]);

  const down = new SlackSenderAdapter({
    botToken: SLACK.botToken,
    apiUrl: slack.apiUrl,
    logger: createLogger({ level: 'silent' }),
    sleep: async () => {},
    fetch: async () => new Response('unavailable', { status: 503 }),
  });
  await assert.rejects(down.postMessage(`slack:${root.channel}:${root.ts}`, 'never'), /HTTP 503/);
});
