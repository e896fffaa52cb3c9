// Stopping the local cloud never hangs: a part that misses its deadline is named and left behind.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stopParts } from '../src/cloud/stop-parts.ts';

test('a part that never stops is named after its deadline; the others stop and a failing one does not block', async () => {
  const stopped: string[] = [];
  const errors: unknown[] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => void errors.push(args.join(' '));
  try {
    const late = await stopParts(
      {
        quick: async () => void stopped.push('quick'),
        failing: async () => {
          throw new Error('boom');
        },
        stuck: () => new Promise(() => {}),
      },
      200,
    );
    assert.deepEqual(late, ['stuck']);
    assert.deepEqual(stopped, ['quick']);
    assert.ok(errors.some((e) => String(e).includes('stuck did not stop within 0.2 s')));
    assert.ok(errors.some((e) => String(e).includes('stopping failing failed')));
  } finally {
    console.error = original;
  }
});
