import { test } from 'node:test';
import assert from 'node:assert/strict';
import { causedByOf, eventOriginOf, eventWriteMetadata } from '../../shared/events/chain.ts';
import { promptFor } from '../support/prompts.ts';

const THREAD = 'slack:C1:1.1';

test('an event file records where it came from: its depth, the person who caused it, the thread that wrote it', () => {
  const person = promptFor(THREAD, 'm1');
  const written = eventWriteMetadata(THREAD, person);
  assert.deepEqual(eventOriginOf(written), { depth: 1, causedBy: 'slack:U1', writtenIn: THREAD });
  // The run that file starts carries the same person on, one level deeper.
  const started = {
    ...promptFor(THREAD, 'm2'),
    author: { userId: 'event', userName: 'event events/slack/C1/a.json' },
    eventDepth: 1,
    causedBy: 'slack:U1',
  };
  assert.equal(causedByOf(THREAD, started), 'slack:U1');
  assert.deepEqual(eventOriginOf(eventWriteMetadata(THREAD, started)), { depth: 2, causedBy: 'slack:U1', writtenIn: THREAD });
  // A run no person caused (an operator's file) writes files of nobody's.
  const unattributed = { ...started, causedBy: undefined, eventDepth: undefined };
  assert.deepEqual(eventOriginOf(eventWriteMetadata(THREAD, unattributed)), { depth: 1, writtenIn: THREAD });
});

test("files written outside a sandbox are depth 0 and nobody's, whatever else their metadata holds", () => {
  assert.deepEqual(eventOriginOf(undefined), { depth: 0 });
  assert.deepEqual(eventOriginOf({ 'event-caused-by': 'slack%3AU1' }), { depth: 0 });
  assert.deepEqual(eventOriginOf({ 'event-depth': '0', 'event-caused-by': 'slack%3AU1' }), { depth: 0 });
  assert.deepEqual(eventOriginOf({ 'event-depth': '2', 'event-caused-by': 'not a person', 'event-thread': 'nope' }), { depth: 2 });
});
