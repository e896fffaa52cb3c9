import { test } from 'node:test';
import assert from 'node:assert/strict';
import { takeEventFileSave } from '../../shared/events/run-writes.ts';
import { admitPeriodic, dropPeriodic, expiryOf, linkThread, renewForThread, startExpiry } from '../../shared/events/expiry.ts';
import { tableForFile } from '../support/dynamo.ts';

const table = tableForFile();
const DAY = 86_400_000;
const NOW = Date.parse('2027-03-01T12:00:00Z');

test("a run's event file saves: racing saves take exactly the run's share", async () => {
  const taken = await Promise.all(Array.from({ length: 12 }, () => takeEventFileSave(table(), 'run-race', 5, NOW)));
  assert.equal(taken.filter(Boolean).length, 5);
  assert.equal(await takeEventFileSave(table(), 'run-other', 5, NOW), true, 'another run has its own');
  assert.equal(await takeEventFileSave(table(), 'run-none', 0, NOW), false);
});

test('periodic files saved at once: only as many as the channel may keep get in; files that ran out or are gone make room', async () => {
  const folder = 'events/slack/C1/';
  const keys = Array.from({ length: 6 }, (_, i) => `${folder}p${i}.json`);
  for (const key of keys) await startExpiry(table(), key, false, 7, NOW);
  const outcomes = await Promise.all(keys.map((key) => admitPeriodic(table(), folder, key, 2, NOW)));
  const admitted = keys.filter((_, i) => outcomes[i] === undefined);
  assert.equal(admitted.length, 2);
  for (const kept of outcomes.filter((o) => o !== undefined)) assert.equal(kept, 2);
  assert.equal(await admitPeriodic(table(), folder, admitted[0]!, 2, NOW), undefined, 'a file in force saved again stays in');
  // One in force ran out: a new one takes its place. One dropped (removed): room again.
  const [first, second] = admitted as [string, string];
  const newcomer = keys.find((k) => !admitted.includes(k))!;
  await startExpiry(table(), first, true, -1, NOW);
  assert.equal(await admitPeriodic(table(), folder, newcomer, 2, NOW), undefined);
  await dropPeriodic(table(), folder, second);
  const another = keys.find((k) => !admitted.includes(k) && k !== newcomer)!;
  assert.equal(await admitPeriodic(table(), folder, another, 2, NOW), undefined);
  assert.equal(await admitPeriodic(table(), 'events/slack/C2/', `events/slack/C2/x.json`, 0, NOW), 0, 'none allowed');
});

test("an agent's periodic file runs out unless a person writes in one of its threads; a reply does not revive one that ran out", async () => {
  const key = 'events/slack/C3/daily.json';
  assert.equal(await startExpiry(table(), key, false, 7, NOW), NOW + 7 * DAY);
  // Saved again by a run an event started: the date stands. By a person's own run: the days start again.
  assert.equal(await startExpiry(table(), key, false, 7, NOW + DAY), NOW + 7 * DAY);
  assert.equal(await startExpiry(table(), key, true, 7, NOW + DAY), NOW + 8 * DAY);
  await linkThread(table(), 'slack:C3:1.1', key, NOW + 8 * DAY);
  assert.deepEqual(await renewForThread(table(), 'slack:C3:1.1', 7, NOW + 5 * DAY), [key]);
  assert.equal((await expiryOf(table(), key))?.runsUntil, NOW + 12 * DAY);
  assert.deepEqual(await renewForThread(table(), 'slack:C3:9.9', 7, NOW + 5 * DAY), [], 'not one of its threads');
  assert.deepEqual(await renewForThread(table(), 'slack:C3:1.1', 7, NOW + 13 * DAY), [], 'ran out already');
  assert.equal((await expiryOf(table(), key))?.runsUntil, NOW + 12 * DAY);
});
