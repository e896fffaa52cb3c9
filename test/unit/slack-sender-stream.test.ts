// The Slack sender's native streaming beyond what the stand-in can show: a reply streaming past
// Slack's stream age continues in a new message (an open code fence closed and reopened), and a
// refused first piece turns the reply into a post and its edits. The Web API is a recording function
// here: the stand-in neither expires streams nor refuses them (the happy path runs against it in
// test/unit/steps.test.ts and the e2e conversation tests).
import assert from 'node:assert/strict';
import test from 'node:test';
import { SlackApiError, type SlackApiResponse } from '@chat-adapter/slack/api';
import {
  SEGMENT_MAX_AGE_MS,
  STREAM_PIECE_CHARS,
  streamToSlack,
  type SlackStreamOptions,
} from '../../shared/platforms/slack/sender-stream.ts';
import { createLogger } from '../../shared/observability/log.ts';

type Call = { method: string; body: Record<string, unknown> };

function recorder(refuse?: string) {
  const calls: Call[] = [];
  const posts: { kind: 'post' | 'edit'; text: string }[] = [];
  let ts = 0;
  const options = {
    call: async (method: string, body: Record<string, unknown>): Promise<SlackApiResponse> => {
      calls.push({ method, body });
      if (refuse && method === 'chat.startStream') {
        throw new SlackApiError(`Slack ${method} failed: ${refuse}`, { method, response: { ok: false, error: refuse } });
      }
      return { ok: true, ts: method === 'chat.startStream' ? `1.${++ts}` : (body.ts as string | undefined) };
    },
    post: async (message: { markdown: string }) => {
      posts.push({ kind: 'post', text: message.markdown });
      return { id: 'posted', threadId: 'slack:C1:1.0', raw: {} };
    },
    edit: async (_id: string, message: { markdown: string }) => {
      posts.push({ kind: 'edit', text: message.markdown });
      return { id: 'posted', threadId: 'slack:C1:1.0', raw: {} };
    },
  };
  return { calls, posts, options };
}

async function* pieces(...texts: string[]) {
  for (const text of texts) yield text;
}

const text = (call: Call) => (call.body.chunks as { text: string }[] | undefined)?.map((chunk) => chunk.text).join('') ?? '';

const base = {
  target: { channel: 'C1', thread_ts: '1.0', recipient_user_id: 'U1', recipient_team_id: 'T1' },
  updateIntervalMs: 0,
  logger: createLogger({ level: 'silent' }),
};

test('a reply that ends before its first piece is posted in one call; a long one goes out in pieces of at least 256 characters', async () => {
  const short = recorder();
  const posted = await streamToSlack({
    ...base,
    ...short.options,
    onUnsupported: () => {},
    textStream: pieces('Hello ', 'there.\n'),
  } as SlackStreamOptions);
  assert.deepEqual(short.calls, [], 'no stream was opened');
  assert.deepEqual(short.posts, [{ kind: 'post', text: 'Hello there.\n' }]);
  assert.equal(posted?.id, 'posted');

  const long = recorder();
  const line = `${'x'.repeat(99)}\n`;
  const ended = await streamToSlack({
    ...base,
    ...long.options,
    onUnsupported: () => {},
    textStream: pieces(...Array.from({ length: 6 }, () => line)),
  } as SlackStreamOptions);
  assert.deepEqual(
    long.calls.map((c) => c.method),
    ['chat.startStream', 'chat.appendStream', 'chat.stopStream'],
  );
  for (const call of long.calls.slice(0, 2)) assert.ok(text(call).length >= STREAM_PIECE_CHARS);
  assert.equal(long.calls.map(text).join(''), line.repeat(6));
  assert.equal(ended?.id, '1.1', 'the reply is the streamed message');
});

test('a reply streaming past the stream age ends its message at a paragraph break and continues in a new one, its code fence closed and reopened', async () => {
  const { calls, options } = recorder();
  let clock = 0;
  const intro = `${'a'.repeat(300)}\n\n`;
  const code = '```ts\nconst a = 1;\n';
  const more = `const b = 2;\n${'c'.repeat(300)}\n`;
  async function* timed() {
    yield intro;
    yield code;
    clock = SEGMENT_MAX_AGE_MS + 1;
    yield `a += 1;\n\n${more}`;
    yield '```\n';
  }
  await streamToSlack({ ...base, ...options, now: () => clock, onUnsupported: () => {}, textStream: timed() } as SlackStreamOptions);
  const methods = calls.map((c) => c.method);
  assert.equal(methods.filter((m) => m === 'chat.startStream').length, 2, methods.join(', '));
  assert.equal(methods.filter((m) => m === 'chat.stopStream').length, 2, methods.join(', '));
  const firstStop = methods.indexOf('chat.stopStream');
  const first = calls
    .slice(0, firstStop + 1)
    .map(text)
    .join('');
  const second = calls
    .slice(firstStop + 1)
    .map(text)
    .join('');
  assert.ok(first.startsWith(intro), first);
  assert.ok(first.trimEnd().endsWith('```'), `the first message closes its fence: ${first}`);
  assert.ok(second.startsWith('```ts\n'), `the second message reopens it: ${second}`);
  assert.ok(second.includes('const b = 2;'));
});

test('Slack refusing to stream: the reply is posted and edited, and the app is marked as one that cannot stream', async () => {
  const { calls, posts, options } = recorder('feature_not_enabled');
  let unsupported = false;
  const ended = await streamToSlack({
    ...base,
    ...options,
    onUnsupported: () => (unsupported = true),
    textStream: pieces(`${'y'.repeat(300)}\n`, 'and the rest.\n'),
  } as SlackStreamOptions);
  assert.equal(unsupported, true);
  assert.deepEqual(
    calls.map((c) => c.method),
    ['chat.startStream'],
  );
  assert.equal(posts[0]!.kind, 'post');
  assert.equal(posts.at(-1)!.text, `${'y'.repeat(300)}\nand the rest.\n`);
  assert.equal(ended?.id, 'posted');
});
