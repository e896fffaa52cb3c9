import assert from 'node:assert/strict';
import { test } from 'node:test';
import { triggerKindOf } from '../../shared/run/trigger-kind.ts';

const person = { userId: 'U0123', userName: 'ada' };
const event = { userId: 'event', userName: 'event events/nightly.json' };

test('a run is a message, a schedule (event files, heartbeats, the bus) or a trigger (declared triggers, uploads)', () => {
  assert.equal(triggerKindOf({ author: person }), 'message');
  assert.equal(triggerKindOf({ author: event }), 'schedule');
  assert.equal(triggerKindOf({ author: event, heartbeat: true }), 'schedule');
  assert.equal(triggerKindOf({ author: event, source: { trigger: 'alarms', eventId: 'e1' } }), 'trigger');
  assert.equal(triggerKindOf({ author: event, source: { objectKey: 'uploads/slack/C1/a.csv' } }), 'trigger');
});
