// retryOnConflict with plain fakes: what is tried again (a lost transaction, an attempt that says a
// concurrent change beat it), what is not (any other error), and how it gives up.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { retryOnConflict, TRY_AGAIN } from '../../shared/aws/retry.ts';

/** A DynamoDB transaction's cancellation, as the SDK throws it. */
const cancelled = (...codes: string[]) =>
  Object.assign(new Error('Transaction cancelled'), {
    name: 'TransactionCanceledException',
    CancellationReasons: codes.map((Code) => ({ Code })),
  });

/** An attempt that plays `outcomes` in order (a thrown error, TRY_AGAIN or a result) and counts its calls. */
function scripted<T>(outcomes: (T | typeof TRY_AGAIN | Error)[]) {
  const attempt = async () => {
    const next = outcomes[Math.min(attempt.calls++, outcomes.length - 1)]!;
    if (next instanceof Error) throw next;
    return next;
  };
  attempt.calls = 0;
  return attempt;
}

test('retryOnConflict: a first success is returned without trying again', async () => {
  const attempt = scripted(['done']);
  assert.equal(await retryOnConflict('admit', attempt), 'done');
  assert.equal(attempt.calls, 1);
});

test('retryOnConflict: TRY_AGAIN and lost transactions are tried again until one settles', async () => {
  const attempt = scripted<string>([TRY_AGAIN, cancelled('None', 'TransactionConflict'), TRY_AGAIN, 'queued']);
  assert.equal(await retryOnConflict('admit', attempt), 'queued');
  assert.equal(attempt.calls, 4);
});

test('retryOnConflict: any other error, a failed condition among them, ends it at once', async () => {
  const condition = cancelled('ConditionalCheckFailed', 'None');
  const attempt = scripted<string>([condition, 'never']);
  await assert.rejects(retryOnConflict('admit', attempt), (error) => error === condition);
  assert.equal(attempt.calls, 1);
  const plain = scripted<string>([new Error('ProvisionedThroughputExceeded')]);
  await assert.rejects(retryOnConflict('admit', plain), /ProvisionedThroughputExceeded/);
  assert.equal(plain.calls, 1);
});

test('retryOnConflict: after 8 tries it gives up, saying what, or with the last lost transaction', async () => {
  const again = scripted<string>([TRY_AGAIN]);
  await assert.rejects(retryOnConflict('Could not admit prompt m1 on slack:C1:1', again), {
    message: 'Could not admit prompt m1 on slack:C1:1: too many concurrent changes',
  });
  assert.equal(again.calls, 8);
  const conflict = cancelled('TransactionConflict');
  const lost = scripted<string>([conflict]);
  await assert.rejects(retryOnConflict('settle', lost), (error) => error === conflict);
  assert.equal(lost.calls, 8);
});
