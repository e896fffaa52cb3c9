// The bench's count of sequential AWS round trips (bench/calls.ts): the longest chain of calls each
// sent once the one before it was answered, from the front door's record (arrival = answer time −
// duration). Calls in flight together count once; a model call (no front door) is a point.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AwsCall } from '../../bench/aws-calls.ts';
import { sequentialRoundTrips } from '../../bench/calls.ts';

/** A call sent at `sent` and answered at `answered` (ms). */
const call = (sent: number, answered: number, operation = 'PutItem'): AwsCall => ({
  service: 'DynamoDB',
  operation,
  source: 'handlers',
  fn: 'agentStep',
  status: 200,
  method: 'POST',
  path: '/',
  requestBytes: 0,
  responseBytes: 0,
  at: answered,
  durationMs: answered - sent,
});

test('calls one after another each count; calls in flight together count once', () => {
  assert.equal(sequentialRoundTrips([call(0, 3), call(3, 6), call(6, 9)]), 3);
  assert.equal(sequentialRoundTrips([call(0, 9), call(1, 4), call(2, 5)]), 1);
  // A read beside two saves, then the model call, then an ending write beside a save.
  const model: AwsCall = { ...call(10, 10, 'ConverseStream'), service: 'Bedrock Runtime', durationMs: undefined };
  assert.equal(sequentialRoundTrips([call(0, 4), call(0, 3), call(1, 5), model, call(12, 21), call(12, 15)]), 3);
});

test('the chain is the longest one, whatever order the record holds the calls in', () => {
  // A long call overlapping two short sequential ones: the two short ones are the chain.
  assert.equal(sequentialRoundTrips([call(0, 20), call(10, 12), call(0, 5), call(5, 9)]), 3);
  assert.equal(sequentialRoundTrips([]), 0);
});
