// Drives the local Slack stand-in with the real Chat SDK Slack adapter: signed events in through
// chat.webhooks.slack, Web API calls out to the stand-in.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Chat, ConsoleLogger, type Lock, type Message, type QueueEntry, type StateAdapter, type Thread } from 'chat';
import { createSlackAdapter } from '@chat-adapter/slack';
import { signSlackRequest, startSlackStandIn, type SlackStandIn, type StoredMessage } from '../src/slack/index.ts';

const SIGNING_SECRET = 'local-signing-secret';
const BOT_TOKEN = 'xoxb-local-test-token';

/** A minimal in-memory StateAdapter (the chat package ships none). */
function memoryState(): StateAdapter {
  const values = new Map<string, { value: unknown; expires?: number }>();
  const subscriptions = new Set<string>();
  const locks = new Map<string, Lock>();
  const queues = new Map<string, QueueEntry[]>();
  const live = (key: string) => {
    const entry = values.get(key);
    if (entry?.expires !== undefined && entry.expires < Date.now()) values.delete(key);
    return values.get(key);
  };
  const set = (key: string, value: unknown, ttlMs?: number) =>
    values.set(key, { value, ...(ttlMs ? { expires: Date.now() + ttlMs } : {}) });
  return {
    connect: async () => {},
    disconnect: async () => {},
    get: async <T>(key: string) => (live(key)?.value as T | undefined) ?? null,
    set: async (key, value, ttlMs) => void set(key, value, ttlMs),
    setIfNotExists: async (key, value, ttlMs) => (live(key) ? false : (set(key, value, ttlMs), true)),
    delete: async (key) => void values.delete(key),
    getList: async <T>(key: string) => ((live(key)?.value as T[] | undefined) ?? []).slice(),
    appendToList: async (key, value, opts) => {
      const list = [...((live(key)?.value as unknown[] | undefined) ?? []), value];
      set(key, opts?.maxLength ? list.slice(-opts.maxLength) : list, opts?.ttlMs);
    },
    subscribe: async (id) => void subscriptions.add(id),
    unsubscribe: async (id) => void subscriptions.delete(id),
    isSubscribed: async (id) => subscriptions.has(id),
    acquireLock: async (threadId, ttlMs) => {
      const held = locks.get(threadId);
      if (held && held.expiresAt > Date.now()) return null;
      const lock = { threadId, token: String(Math.random()), expiresAt: Date.now() + ttlMs };
      locks.set(threadId, lock);
      return lock;
    },
    extendLock: async (lock, ttlMs) => {
      if (locks.get(lock.threadId)?.token !== lock.token) return false;
      lock.expiresAt = Date.now() + ttlMs;
      return true;
    },
    releaseLock: async (lock) => void (locks.get(lock.threadId)?.token === lock.token && locks.delete(lock.threadId)),
    forceReleaseLock: async (threadId) => void locks.delete(threadId),
    enqueue: async (threadId, entry, maxSize) => {
      const queue = [...(queues.get(threadId) ?? []), entry].slice(-maxSize);
      queues.set(threadId, queue);
      return queue.length;
    },
    dequeue: async (threadId) => queues.get(threadId)?.shift() ?? null,
    queueDepth: async (threadId) => queues.get(threadId)?.length ?? 0,
  };
}

/** Three paragraphs of ~300 characters: @slack/web-api's ChatStreamer buffers 256 characters
 * before it calls the API, so each paragraph becomes its own start/append call. */
const PARAGRAPHS = ['alpha', 'beta', 'gamma'].map((word) => `${`${word} `.repeat(60).trim()}\n\n`);
async function* paragraphs(): AsyncIterable<string> {
  for (const p of PARAGRAPHS) {
    await new Promise((r) => setTimeout(r, 30));
    yield p;
  }
}

let slack: SlackStandIn;
let chat: Chat<{ slack: ReturnType<typeof createSlackAdapter> }>;
let events: Server;
const pending: Promise<unknown>[] = [];
const mentions: { thread: Thread; message: Message }[] = [];
const followUps: Message[] = [];

const botReplies = (channel: string, threadTs: string): StoredMessage[] =>
  slack.messages.thread(channel, threadTs).filter((m) => m.bot_id !== undefined);

before(async () => {
  slack = await startSlackStandIn({ signingSecret: SIGNING_SECRET, botToken: BOT_TOKEN });
  const adapter = createSlackAdapter({
    botToken: BOT_TOKEN,
    signingSecret: SIGNING_SECRET,
    apiUrl: slack.apiUrl,
    logger: new ConsoleLogger('error'),
  });
  chat = new Chat({
    adapters: { slack: adapter },
    state: memoryState(),
    userName: 'bot',
    concurrency: 'concurrent',
    logger: 'error',
  });
  chat.registerSingleton();

  chat.onNewMention(async (thread, message) => {
    mentions.push({ thread, message });
    if (message.text.includes('stream')) {
      await thread.subscribe();
      await thread.startTyping('Thinking…');
      await thread.post('hi');
      await thread.post(paragraphs());
    }
  });
  chat.onSubscribedMessage(async (thread, message) => {
    followUps.push(message);
    await thread.post(`echo: ${message.text}`);
  });

  // The bot's webhook endpoint: Node request -> Fetch Request -> chat.webhooks.slack.
  events = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const request = new Request(`http://127.0.0.1${req.url ?? '/'}`, {
        method: req.method,
        headers: Object.entries(req.headers).flatMap(([k, v]) => (typeof v === 'string' ? [[k, v] as [string, string]] : [])),
        body: Buffer.concat(chunks),
      });
      chat.webhooks
        .slack(request, { waitUntil: (task) => void pending.push(task) })
        .then(async (response) => res.writeHead(response.status).end(await response.text()))
        .catch((error: unknown) => res.writeHead(500).end(String(error)));
    });
  });
  await new Promise<void>((resolve) => events.listen(0, '127.0.0.1', resolve));
  slack.setEventsUrl(`http://127.0.0.1:${(events.address() as AddressInfo).port}/api/webhooks/slack`);
});

after(async () => {
  await Promise.allSettled(pending);
  await chat.shutdown();
  await new Promise((resolve) => events.close(resolve));
  await slack.close();
});

test('a mention is delivered signed, as message + app_mention, and triggers onNewMention once', async () => {
  const sent = await slack.postUserMessage({ channel: 'C0LOCAL', text: `<@${slack.botUserId}> hello there` });
  assert.equal(sent.status, 200);
  assert.deepEqual(
    sent.deliveries.map((d) => [d.type, d.status]),
    [
      ['message', 200],
      ['app_mention', 200],
    ],
  );
  const envelope = sent.deliveries[0]?.payload as Record<string, unknown>;
  assert.equal(envelope.type, 'event_callback');
  assert.match(String(envelope.event_id), /^Ev0/);
  assert.equal(typeof envelope.event_time, 'number');
  assert.equal(envelope.team_id, 'T0LOCAL');
  assert.deepEqual((envelope.authorizations as Record<string, unknown>[])[0]?.user_id, slack.botUserId);

  const { message } = await slack.waitFor(() => mentions.find((m) => m.message.id === sent.ts));
  assert.equal(message.isMention, true);
  assert.match(message.text, /hello there/);
  assert.equal(message.author.userId, 'U0LOCALUSER');
  assert.equal(message.author.userName, 'local-user'); // resolved through users.info
  await Promise.allSettled(pending);
  assert.equal(mentions.filter((m) => m.message.id === sent.ts).length, 1, 'deduplicated by the Chat SDK');
});

test('handler replies land in the thread; the streamed reply arrives natively in several pieces', async () => {
  const sent = await slack.postUserMessage({ channel: 'C0LOCAL', text: `<@${slack.botUserId}> please stream` });
  const streamed = await slack.waitFor(() => botReplies('C0LOCAL', sent.ts).find((m) => m.local.stream?.state === 'stopped'), 10_000);
  const replies = botReplies('C0LOCAL', sent.ts);
  assert.equal(replies[0]?.text, 'hi');
  assert.equal(replies[0]?.thread_ts, sent.ts);
  assert.equal(streamed.thread_ts, sent.ts);
  assert.equal(streamed.text.trim(), PARAGRAPHS.join('').trim());
  const pieces = streamed.local.stream?.appends.filter((a) => a.text) ?? [];
  assert.ok(pieces.length >= 3, `expected several pieces, got ${pieces.length}`);
  const methods = slack.calls.filter((c) => c.args.ts === streamed.ts || c.method === 'chat.startStream').map((c) => c.method);
  assert.ok(methods.includes('chat.startStream') && methods.includes('chat.appendStream') && methods.includes('chat.stopStream'));
  const start = slack.calls.find((c) => c.method === 'chat.startStream');
  assert.equal(start?.args.recipient_user_id, 'U0LOCALUSER');
  assert.equal(start?.args.recipient_team_id, 'T0LOCAL');
  assert.ok(slack.calls.some((c) => c.method === 'assistant.threads.setStatus' && c.args.status === 'Thinking…'));
  assert.equal(slack.statuses.get(`C0LOCAL:${sent.ts}`), undefined, 'status cleared by the reply');
});

test('a follow-up in the subscribed thread (no mention) is a message event only', async () => {
  const root = await slack.waitFor(() => mentions.find((m) => m.message.text.includes('please stream')));
  const threadTs = root.message.id;
  const sent = await slack.postUserMessage({ channel: 'C0LOCAL', text: 'one more thing', threadTs });
  assert.deepEqual(
    sent.deliveries.map((d) => d.type),
    ['message'],
  );
  const event = (sent.deliveries[0]?.payload as { event: Record<string, unknown> }).event;
  assert.equal(event.thread_ts, threadTs);
  assert.equal(event.parent_user_id, 'U0LOCALUSER');
  assert.equal(event.channel_type, 'channel');
  await slack.waitFor(() => botReplies('C0LOCAL', threadTs).find((m) => m.text === 'echo: one more thing'));
  assert.equal(followUps.at(-1)?.text, 'one more thing');
});

test('fetching thread messages through the adapter returns the stored ones, paginated', async () => {
  const { thread, message } = await slack.waitFor(() => mentions.find((m) => m.message.text.includes('please stream')));
  await slack.waitFor(() => botReplies('C0LOCAL', message.id).find((m) => m.text.startsWith('echo:')));
  const stored = slack.messages.thread('C0LOCAL', message.id).map((m) => m.ts);

  const forward: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await thread.adapter.fetchMessages(thread.id, { direction: 'forward', limit: 2, cursor });
    forward.push(...page.messages.map((m) => m.id));
    cursor = page.nextCursor;
  } while (cursor);
  assert.deepEqual(forward, stored);

  const all: Message[] = [];
  for await (const m of thread.allMessages) all.push(m);
  assert.deepEqual(
    all.map((m) => m.id),
    stored,
  );
  assert.equal(all[0]?.isMention, true);
  assert.equal(all.find((m) => m.text === 'hi')?.author.isMe, true);

  const newestFirst: string[] = [];
  for await (const m of thread.messages) newestFirst.push(m.id);
  assert.deepEqual(newestFirst, [...stored].reverse());

  const history = await thread.adapter.fetchChannelMessages?.('slack:C0LOCAL', { limit: 1 });
  assert.equal(history?.messages.length, 1);
  assert.ok(history?.nextCursor, 'has_more gives a cursor');
});

test('a thread rebuilt by id streams by post + edit; a deserialized handler thread streams natively', async () => {
  const { thread, message } = await slack.waitFor(() => mentions.find((m) => m.message.text.includes('please stream')));
  const callsBefore = slack.calls.length;

  await chat.thread(thread.id).post(paragraphs());
  const byId = slack.calls.slice(callsBefore);
  assert.ok(!byId.some((c) => c.method === 'chat.startStream'), 'no native stream without the current message');
  const posted = byId.find((c) => c.method === 'chat.postMessage');
  assert.ok(posted && byId.some((c) => c.method === 'chat.update'));
  const fallback = botReplies('C0LOCAL', message.id).at(-1);
  assert.equal(fallback?.local.via, 'chat.postMessage');
  assert.ok((fallback?.local.versions.length ?? 0) >= 2, 'placeholder then edits');
  assert.equal(fallback?.text.trim(), PARAGRAPHS.join('').trim());

  const revived = JSON.parse(JSON.stringify(thread), chat.reviver()) as Thread;
  const callsMid = slack.calls.length;
  await revived.post(paragraphs());
  assert.ok(slack.calls.slice(callsMid).some((c) => c.method === 'chat.startStream'));
});

test('edit, react, delete, ephemeral and file upload through the adapter', async () => {
  const { thread, message } = await slack.waitFor(() => mentions.find((m) => m.message.text.includes('please stream')));
  const sent = await thread.post('to be edited');
  await sent.edit('edited');
  await sent.addReaction('thumbs_up');
  let stored = slack.messages.get('C0LOCAL', sent.id);
  assert.equal(stored?.text, 'edited');
  assert.deepEqual(
    stored?.local.versions.map((v) => v.text),
    ['to be edited', 'edited'],
  );
  assert.equal(stored?.reactions?.[0]?.count, 1);
  await sent.delete();
  stored = slack.messages.get('C0LOCAL', sent.id);
  assert.equal(stored, undefined);

  await thread.postEphemeral('U0LOCALUSER', 'just for you', { fallbackToDM: false });
  assert.equal(slack.ephemeral.at(-1)?.text, 'just for you');
  assert.equal(slack.ephemeral.at(-1)?.thread_ts, message.id);

  await thread.post({ markdown: 'a file', files: [{ data: Buffer.from('hello file'), filename: 'note.txt' }] });
  const withFile = await slack.waitFor(() => botReplies('C0LOCAL', message.id).find((m) => m.files?.length));
  const file = withFile.files?.[0] as { url_private: string; name: string };
  assert.equal(file.name, 'note.txt');
  const download = await fetch(file.url_private, { headers: { Authorization: `Bearer ${BOT_TOKEN}` } });
  assert.equal(await download.text(), 'hello file');
  for (const m of ['files.getUploadURLExternal', 'files.completeUploadExternal']) {
    assert.ok(
      slack.calls.some((c) => c.method === m),
      m,
    );
  }
});

test('Web API auth, unknown methods, JSON bodies and optional chat.update rate limiting', async () => {
  const call = (method: string, body: string, headers: Record<string, string>) =>
    fetch(`${slack.apiUrl}${method}`, { method: 'POST', body, headers });
  const form = { 'Content-Type': 'application/x-www-form-urlencoded' };

  let res = await call('auth.test', '', { ...form, Authorization: 'Bearer xoxb-wrong' });
  assert.deepEqual(await res.json(), { ok: false, error: 'invalid_auth' });
  res = await call('auth.test', '', form);
  assert.deepEqual(await res.json(), { ok: false, error: 'not_authed' });
  res = await call('nope.nothing', '', { ...form, Authorization: `Bearer ${BOT_TOKEN}` });
  assert.equal(((await res.json()) as { error: string }).error, 'unknown_method');

  const json = { 'Content-Type': 'application/json', Authorization: `Bearer ${BOT_TOKEN}` };
  res = await call('chat.postMessage', JSON.stringify({ channel: 'C0LOCAL', text: 'top level' }), json);
  const posted = (await res.json()) as { ok: boolean; ts: string; message: { text: string; bot_id: string } };
  assert.equal(posted.ok, true);
  assert.match(posted.ts, /^\d{10}\.\d{6}$/);
  assert.equal(posted.message.bot_id, slack.botId);

  slack.rateLimits['chat.update'] = { limit: 1, windowMs: 60_000, retryAfterSeconds: 7 };
  const update = JSON.stringify({ channel: 'C0LOCAL', ts: posted.ts, text: 'v2' });
  assert.equal((await call('chat.update', update, json)).status, 200);
  res = await call('chat.update', update, json);
  assert.equal(res.status, 429);
  assert.equal(res.headers.get('retry-after'), '7');
  assert.equal(((await res.json()) as { error: string }).error, 'ratelimited');
  delete slack.rateLimits['chat.update'];
});

test('the events endpoint rejects a bad signature; the local page and JSON views work', async () => {
  const body = JSON.stringify(slack.envelope({ type: 'message', text: 'x', channel: 'C0LOCAL', ts: '1.000001', user: 'U0LOCALUSER' }));
  const url = slack.deliveries[0]?.url ?? '';
  const bad = await fetch(url, {
    method: 'POST',
    body,
    headers: { 'Content-Type': 'application/json', ...signSlackRequest(body, 'wrong-secret') },
  });
  assert.equal(bad.status, 401);

  const page = await fetch(`${slack.url}/`);
  const html = await page.text();
  assert.match(html, /http-equiv="refresh" content="1"/);
  assert.match(html, /echo: one more thing/);

  const posted = (await (
    await fetch(`${slack.url}/_local/post`, {
      method: 'POST',
      body: JSON.stringify({ channel: 'C0LOCAL', text: 'from the cli' }),
      headers: { 'Content-Type': 'application/json' },
    })
  ).json()) as { ts: string; status: number };
  assert.equal(posted.status, 200);
  const listed = (await (await fetch(`${slack.url}/_local/messages?channel=C0LOCAL&thread_ts=${posted.ts}`)).json()) as {
    messages: StoredMessage[];
  };
  assert.deepEqual(
    listed.messages.map((m) => m.text),
    ['from the cli'],
  );
});
