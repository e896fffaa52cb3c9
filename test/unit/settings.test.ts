// settings.json: the schema composed from its groups, docs/settings.md that documents every key, and the
// one source the handlers read it through (max age, shared reads, a failed read not kept).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import * as z from 'zod';
import { ROOT_KEYS } from '../../shared/ids.ts';
import { settingsGroup } from '../../shared/settings/group.ts';
import { composeSettings, SETTINGS_GROUPS, settingsSchema } from '../../shared/settings/schema.ts';
import { settingsSource } from '../../shared/settings/source.ts';
import { conditionalS3 } from '../support/conditional-s3.ts';

test('the groups compose one schema: every key has a default, channels take the groups’ per-channel keys', () => {
  const defaults = settingsSchema.parse({});
  const declared = SETTINGS_GROUPS.flatMap((group) => Object.keys(group.keys));
  assert.deepEqual(Object.keys(defaults), [...declared, 'channels']);
  assert.equal(defaults.maxModelSteps, 40);
  assert.deepEqual(defaults.limits, { maxConcurrentRunsPerChannel: 10, maxConcurrentRuns: 30, maxRunningSandboxes: 40 });
  const channel = settingsSchema.parse({ channels: { 'slack:C1': { model: { id: 'm' }, queueMode: 'interrupt', uploadPrompt: 'p' } } })
    .channels['slack:C1'];
  assert.deepEqual(channel, { model: { id: 'm' }, queueMode: 'interrupt', uploadPrompt: 'p' });
  // A per-channel key is checked like the top-level one; a key no group declares for channels is dropped.
  assert.equal(settingsSchema.safeParse({ channels: { 'slack:C1': { queueMode: 'later' } } }).success, false);
  assert.deepEqual(settingsSchema.parse({ channels: { 'slack:C1': { maxModelSteps: 3 } } }).channels['slack:C1'], {});
});

test('a key declared by two groups is refused when the schema is composed', () => {
  const one = settingsGroup({ keys: { retries: z.number().default(1) } });
  const other = settingsGroup({ keys: { retries: z.number().default(2) } });
  assert.throws(() => composeSettings([one, other]), /settings\.json key "retries" is declared by two groups/);
  const channelTwice = settingsGroup({ keys: {}, channel: { queueMode: z.string().optional() } });
  assert.throws(() => composeSettings([...SETTINGS_GROUPS, channelTwice]), /"queueMode" is declared by two groups/);
});

test('docs/settings.md documents every top-level key of settings.json (`key`, or one of its fields as `key.field`)', () => {
  const section = readFileSync(new URL('../../docs/settings.md', import.meta.url), 'utf8');
  const undocumented = Object.keys(settingsSchema.shape).filter((key) => !section.includes(`\`${key}\``) && !section.includes(`\`${key}.`));
  assert.deepEqual(undocumented, []);
});

/** settings.json in an in-memory S3 whose GETs of it are counted. */
function bucketWithSettings() {
  const s3 = conditionalS3();
  const reads = { count: 0 };
  s3.client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'GetObjectCommand' && (args.input as { Key?: string }).Key === ROOT_KEYS.settings) reads.count++;
      return next(args);
    },
    { step: 'initialize' },
  );
  const write = (body: string) => s3.client.send(new PutObjectCommand({ Bucket: 'bucket', Key: ROOT_KEYS.settings, Body: body }));
  return { store: { s3: s3.client, bucket: 'bucket' }, reads, write };
}

const logs = () => {
  const lines: { message: string; extra?: Record<string, unknown> }[] = [];
  return { lines, warn: (message: string, extra?: Record<string, unknown>) => void lines.push({ message, extra }) };
};

test('the settings source reads settings.json at most once per max age; a caller may ask for it as it is now', async () => {
  const { store, reads, write } = bucketWithSettings();
  const clock = { ms: 0 };
  const logger = logs();
  const source = settingsSource(store, { maxAgeMs: 60_000, logger, now: () => clock.ms });
  await write(JSON.stringify({ maxQueueDepth: 2 }));
  assert.equal((await source.get()).maxQueueDepth, 2);
  await write(JSON.stringify({ maxQueueDepth: 3 }));
  clock.ms = 59_999;
  assert.equal((await source.get()).maxQueueDepth, 2, 'within the max age: the read before');
  assert.equal(reads.count, 1);
  assert.equal((await source.get({ maxAgeMs: 0 })).maxQueueDepth, 3, 'as it is now');
  assert.equal(reads.count, 2);
  clock.ms = 59_999 + 60_000;
  await write(JSON.stringify({ maxQueueDepth: 4 }));
  assert.equal((await source.get()).maxQueueDepth, 4, 'past the max age: read again');
  assert.equal(reads.count, 3);
  // Callers at the same moment share one read.
  clock.ms += 60_000;
  const settings = await Promise.all([source.get(), source.get(), source.get({ maxAgeMs: 0 })]);
  assert.deepEqual(
    settings.map((s) => s.maxQueueDepth),
    [4, 4, 4],
  );
  assert.equal(reads.count, 4);
  assert.deepEqual(logger.lines, []);
});

test("the settings source logs each read's problems, and keeps no failed read", async () => {
  const { store, reads, write } = bucketWithSettings();
  const logger = logs();
  const source = settingsSource(store, { maxAgeMs: 60_000, logger, now: () => 0 });
  await write(JSON.stringify({ maxModelSteps: -1 }));
  assert.equal((await source.get()).maxModelSteps, 40, 'the default stands in for an invalid value');
  assert.deepEqual(logger.lines, [
    { message: 'settings.json ignored', extra: { problem: 'settings.json maxModelSteps: Too small: expected number to be >0' } },
  ]);
  const failing = { ...store, s3: { send: async () => Promise.reject(new Error('S3 is down')) } } as unknown as typeof store;
  const down = settingsSource(failing, { maxAgeMs: 60_000, logger, now: () => 0 });
  await assert.rejects(down.get(), /S3 is down/);
  await assert.rejects(down.get(), /S3 is down/, 'the next get reads again');
  assert.equal(reads.count, 1);
});
