import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lazy } from '../../shared/support/lazy.ts';

test('lazy: made once, shared by concurrent and later calls', async () => {
  let made = 0;
  const value = lazy(async () => ({ n: ++made }));
  const [a, b] = await Promise.all([value(), value()]);
  assert.equal(a, b);
  assert.equal(await value(), a);
  assert.equal(made, 1);
});

test('lazy: a failed init is not kept; the next call tries again', async () => {
  let attempts = 0;
  const value = lazy(async () => {
    attempts++;
    if (attempts === 1) throw new Error('secret not there yet');
    return 'ready';
  });
  await assert.rejects(value(), /secret not there yet/);
  assert.equal(await value(), 'ready');
  assert.equal(await value(), 'ready');
  assert.equal(attempts, 2);
});

test('lazy: a synchronous throw is a rejection, and is retried too', async () => {
  let attempts = 0;
  const value = lazy(() => {
    if (++attempts === 1) throw new Error('TABLE_NAME missing');
    return 42;
  });
  const first = value();
  assert.ok(first instanceof Promise);
  await assert.rejects(first, /TABLE_NAME missing/);
  assert.equal(await value(), 42);
});
