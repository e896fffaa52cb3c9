import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseTriggers, runtimeOf, s3EventPattern } from '../../shared/triggers/declaration.ts';
import { fillTemplate } from '../../shared/triggers/template.ts';
import { uploadPlace } from '../../shared/triggers/uploads.ts';
import { transformInput, type LocalBusEvent } from '../../packages/local-cloud/src/eventbridge.ts';
import { encodeS3EventKey } from '../../shared/aws/s3-event-keys.ts';
import { matchesEventPattern } from '../../packages/local-cloud/src/event-pattern.ts';

const alarm = {
  name: 'prod-alarms',
  source: { eventPattern: { source: ['aws.cloudwatch'], 'detail-type': ['CloudWatch Alarm State Change'] } },
  target: { adapterId: 'slack', channelId: 'C0OPS' },
  text: 'Alarm {detail.alarmName} is {detail.state.value}',
};

test('trigger declarations: a valid list parses; each problem names the trigger and the field', () => {
  assert.deepEqual(parseTriggers(undefined), []);
  assert.equal(parseTriggers([alarm])[0]!.name, 'prod-alarms');
  const problems = (raw: unknown) => {
    try {
      parseTriggers(raw);
    } catch (error) {
      return (error as Error).message;
    }
    assert.fail('expected an error');
  };
  assert.match(problems({}), /context triggers must be a list/);
  assert.match(
    problems([{ ...alarm, target: { adapterId: 'slack' } }]),
    /trigger "prod-alarms" \(triggers\[0\]\): "target" "adapterId" needs "channelId"/,
  );
  assert.match(problems([{ ...alarm, source: {} }]), /trigger "prod-alarms" \(triggers\[0\]\): "source" needs exactly one of "s3"/);
  assert.match(problems([{ ...alarm, source: { s3: { bucket: 'Not_A_Bucket' } } }]), /"source\.s3\.bucket" is not a bucket name/);
  assert.match(problems([{ ...alarm, name: 'bad name!' }]), /trigger "bad name!" \(triggers\[0\]\): "name" must be 1-48 letters/);
  assert.match(problems([alarm, { ...alarm, name: 'PROD-alarms' }]), /triggers\[1\]\): "name" is used by another trigger/);
  assert.match(problems([{ ...alarm, rateLimit: { firings: 0, perMinutes: 60 } }]), /"rateLimit\.firings"/);
  assert.match(problems([{ ...alarm, shedule: 'x' }]), /unknown field "shedule"/);
  assert.match(problems([{ ...alarm, source: { eventPattern: {} } }]), /"source\.eventPattern" is empty/);
  assert.match(
    problems([{ ...alarm, source: { eventPattern: { detailType: ['x'] } } }]),
    /"source\.eventPattern" matches on "detailType", which events do not have: use .*"detail-type"/,
  );
});

test('runtime part and S3 patterns', () => {
  assert.deepEqual(runtimeOf(parseTriggers([alarm])[0]!), {
    name: 'prod-alarms',
    kind: 'pattern',
    target: { adapterId: 'slack', channelId: 'C0OPS' },
    text: 'Alarm {detail.alarmName} is {detail.state.value}',
  });
  const pattern = s3EventPattern({ bucket: 'team-incoming', prefix: 'in*coming/', suffix: '.csv' });
  assert.deepEqual(pattern.detail, { bucket: { name: ['team-incoming'] }, object: { key: [{ wildcard: 'in\\*coming/*.csv' }] } });
  const event = (bucket: string, key: string) => ({
    source: 'aws.s3',
    'detail-type': 'Object Created',
    detail: { bucket: { name: bucket }, object: { key } },
  });
  assert.equal(matchesEventPattern(pattern, event('team-incoming', 'in*coming/a/b.csv')), true);
  assert.equal(matchesEventPattern(pattern, event('team-incoming', 'incoming/b.csv')), false, 'the star in the prefix is literal');
  assert.equal(matchesEventPattern(pattern, event('team-incoming', 'in*coming/b.txt')), false);
  assert.equal(matchesEventPattern(pattern, event('other', 'in*coming/b.csv')), false);
  // The event carries the key URL-encoded, so the pattern holds the prefix and suffix encoded too.
  const spaced = s3EventPattern({ bucket: 'b', prefix: 'monthly reports/', suffix: '+v2.csv' });
  assert.deepEqual(spaced.detail, { bucket: { name: ['b'] }, object: { key: [{ wildcard: 'monthly+reports/*%2Bv2.csv' }] } });
  assert.equal(matchesEventPattern(spaced, event('b', encodeS3EventKey('monthly reports/May +v2.csv'))), true);
  assert.equal(matchesEventPattern(spaced, event('b', encodeS3EventKey('monthly+reports/May +v2.csv'))), false);
  assert.deepEqual(s3EventPattern({ bucket: 'b', suffix: '.csv' }).detail, {
    bucket: { name: ['b'] },
    object: { key: [{ suffix: '.csv' }] },
  });
});

test('templates fill fields from the event; missing ones are shown, huge ones cut', () => {
  const event = {
    id: 'e1',
    detail: { alarmName: 'HighErrors', state: { value: 'ALARM' }, list: [{ n: 1 }, { n: 2 }], big: 'x'.repeat(5000) },
  };
  assert.equal(fillTemplate('{detail.alarmName} is {detail.state.value}', event), 'HighErrors is ALARM');
  assert.equal(fillTemplate('{detail.state.reason} / {nope}', event), '{detail.state.reason: missing} / {nope: missing}');
  assert.equal(fillTemplate('{detail.list[1].n} {detail.state}', event), '2 {"value":"ALARM"}');
  assert.match(fillTemplate('{detail.big}', event), /^x{2000}… \(5000 characters\)$/);
  assert.equal(fillTemplate('no {placeholders here', event), 'no {placeholders here');
  assert.equal(fillTemplate('{detail.__proto__}', event), '{detail.__proto__: missing}');
});

test('uploads: only uploads/{adapter}/{channel}/{file} starts a thread', () => {
  assert.deepEqual(uploadPlace('uploads/slack/C0UP/report.csv'), { adapterId: 'slack', channelId: 'C0UP', name: 'report.csv' });
  assert.deepEqual(uploadPlace('uploads/slack/C0UP/q3/report.csv')?.name, 'q3/report.csv');
  assert.equal(uploadPlace('uploads/slack/report.csv'), undefined);
  assert.equal(uploadPlace('uploads/Slack/C0/x'), undefined);
  assert.equal(uploadPlace('uploads/slack/C0/dir/'), undefined);
});

test('the local input transformer places values as EventBridge does', () => {
  const event: LocalBusEvent = {
    version: '0',
    id: 'e1',
    'detail-type': 'Alarm',
    source: 'aws.cloudwatch',
    account: '1',
    time: '2026-11-24T10:00:00Z',
    region: 'us-east-1',
    resources: [],
    detail: { name: 'say "hi"' },
  };
  const out = transformInput(
    {
      inputPathsMap: { name: '$.detail.name' },
      inputTemplate:
        '{"trigger": {"t": "a \\u003cb\\u003e"}, "name": "<name>!", "raw": <name>, "event": <aws.events.event.json>, "rule": "<aws.events.rule-name>"}',
    },
    event,
    'rule-1',
    'arn:rule-1',
  );
  assert.deepEqual(out, { trigger: { t: 'a <b>' }, name: 'say "hi"!', raw: 'say "hi"', event, rule: 'rule-1' });
});
