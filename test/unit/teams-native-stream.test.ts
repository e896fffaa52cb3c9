// Teams' native streaming as the Connector adapter drives it: typing activities with the text so far
// at most one a second, one stream id, a final message; at the time limit the stream is closed with
// what it has and the rest of the reply follows as a plain message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConsoleLogger } from 'chat';
import { STREAM_UPDATE_MS, streamNatively } from '../../shared/platforms/teams/native-stream.ts';

/** A model's deltas, each `stepMs` of the test clock after the last. */
function deltas(clock: { now: number }, parts: string[], stepMs: number): AsyncIterable<string> {
  return (async function* () {
    for (const part of parts) {
      clock.now += stepMs;
      yield part;
    }
  })();
}

function recorder() {
  const sent: Record<string, unknown>[] = [];
  let n = 0;
  return { sent, send: async (activity: Record<string, unknown>) => (sent.push(activity), `id-${++n}`) };
}

const logger = new ConsoleLogger('error');
const info = (activity: Record<string, unknown>) => (activity.entities as Record<string, unknown>[])[0]!;

test('updates carry the text so far at most once a second under one stream id; the final message has the whole text', async () => {
  const clock = { now: 0 };
  const { sent, send } = recorder();
  const parts = ['a', 'b', 'c', 'd', 'e', 'f'];
  const result = await streamNatively({ textStream: deltas(clock, parts, STREAM_UPDATE_MS / 2), send, logger, now: () => clock.now });
  const updates = sent.filter((a) => a.type === 'typing');
  assert.deepEqual(
    updates.map((a) => a.text),
    ['a', 'abc', 'abcde'],
  );
  assert.deepEqual(
    updates.map((a) => info(a).streamSequence),
    [1, 2, 3],
  );
  assert.equal(info(updates[0]!).streamId, undefined);
  assert.ok(updates.slice(1).every((a) => info(a).streamId === 'id-1'));
  const final = sent.at(-1)!;
  assert.equal(final.type, 'message');
  assert.equal(final.text, 'abcdef');
  assert.deepEqual(info(final), { type: 'streaminfo', streamId: 'id-1', streamType: 'final' });
  assert.deepEqual(result, { id: 'id-4', text: 'abcdef' });
});

test('at the time limit the stream ends with the text so far and the rest follows as a plain message', async () => {
  const clock = { now: 0 };
  const { sent, send } = recorder();
  const textStream = deltas(clock, ['one ', 'two ', 'three ', 'four'], 1000);
  const result = await streamNatively({ textStream, send, logger, now: () => clock.now, limitMs: 2500 });
  assert.deepEqual(
    sent.map((a) => [a.type, a.text, (a.entities as { streamType?: string }[] | undefined)?.[0]?.streamType]),
    [
      ['typing', 'one ', 'streaming'],
      ['typing', 'one two ', 'streaming'],
      ['message', 'one two three ', 'final'],
      ['message', 'four', undefined],
    ],
  );
  assert.deepEqual(result, { id: 'id-4', text: 'four' });
});
