// `npm run ops -- put-event`: the event file is read with clear errors and put on the local
// default bus (own sources through PutEvents, aws.* ones as the service would send them).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { startLocalEventBridge, type LocalBusEvent } from '../../packages/local-cloud/src/eventbridge.ts';
import { matchesEventPattern } from '../../packages/local-cloud/src/event-pattern.ts';
import { putEvent, readEventFile } from '../../scripts/ops/put-event.ts';

test('put-event: bad files are named with the problem; events reach the default bus rules', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'put-event-'));
  const file = async (name: string, body: string) => {
    await writeFile(join(dir, name), body);
    return join(dir, name);
  };
  await assert.rejects(readEventFile(join(dir, 'missing.json')), /missing\.json: cannot read it/);
  await assert.rejects(readEventFile(await file('bad.json', '{')), /bad\.json: not valid JSON/);
  await assert.rejects(readEventFile(await file('shape.json', '{"source": "x"}')), /shape\.json: not an event: .*detail-type/);

  const got: LocalBusEvent[] = [];
  const bus = await startLocalEventBridge({
    rules: [{ name: 'all', eventBusName: 'default', pattern: { source: [{ prefix: '' }] }, targets: [{ arn: 'arn:target' }] }],
    invokeTarget: async (_arn, _payload, event) => void got.push(event),
    matches: matchesEventPattern,
  });
  t.after(() => bus.close());
  const eventBridge = new EventBridgeClient({
    endpoint: bus.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'l', secretAccessKey: 'l' },
  });

  const own = await readEventFile(
    await file('own.json', JSON.stringify({ source: 'acme.reports', 'detail-type': 'nightly', detail: { date: '2026-11-24' } })),
  );
  const ownId = await putEvent({ eventBridge, localEndpoint: bus.endpoint }, own);
  const alarm = await readEventFile(
    await file(
      'alarm.json',
      JSON.stringify({ source: 'aws.cloudwatch', 'detail-type': 'CloudWatch Alarm State Change', detail: { alarmName: 'A' } }),
    ),
  );
  const alarmId = await putEvent({ eventBridge, localEndpoint: bus.endpoint }, alarm);
  await bus.drain();
  assert.deepEqual(
    got.map((e) => [e.id, e.source, e.detail]),
    [
      [ownId, 'acme.reports', { date: '2026-11-24' }],
      [alarmId, 'aws.cloudwatch', { alarmName: 'A' }],
    ],
  );
  // A deployed stack's EventBridge takes aws.* sources only from the service.
  await assert.rejects(putEvent({ eventBridge }, alarm), /only from the AWS service itself.*set-alarm-state/);
});
