// The local cloud's S3 refuses the conditional writes AWS refuses (fauxqs alone accepts them all):
// through the front door, If-None-Match: * on an existing key and a stale If-Match both fail with 412.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { startSqsAndS3, type Emulator } from '../src/emulators.ts';
import { startFrontDoor, type FrontDoor } from '../src/front-door/index.ts';
import { createLocalIam } from '../src/iam/index.ts';
import { isS3NotFound, isS3PreconditionFailed } from '../../../shared/aws/errors.ts';

let emulator: Emulator;
let door: FrontDoor;
let s3: S3Client;
const Bucket = 'conditions-test';
before(async () => {
  emulator = await startSqsAndS3();
  const iam = createLocalIam({ Resources: {} });
  door = await startFrontDoor({ upstream: emulator.endpoint, iam: () => iam });
  s3 = new S3Client({
    endpoint: door.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
    forcePathStyle: true,
  });
  await s3.send(new CreateBucketCommand({ Bucket }));
});
after(async () => {
  s3.destroy();
  await door.close();
  await emulator.stop();
});

const put = (Key: string, Body: string, condition: { IfNoneMatch?: string; IfMatch?: string } = {}) =>
  s3.send(new PutObjectCommand({ Bucket, Key, Body, ...condition }));
const read = async (Key: string) => (await s3.send(new GetObjectCommand({ Bucket, Key }))).Body!.transformToString();

test('If-None-Match: * creates a key once; a second create fails with 412 and leaves the first body', async () => {
  await put('once.json', 'first', { IfNoneMatch: '*' });
  await assert.rejects(put('once.json', 'second', { IfNoneMatch: '*' }), (error) => isS3PreconditionFailed(error));
  assert.equal(await read('once.json'), 'first');
});

test('of many concurrent creates of one key, exactly one succeeds', async () => {
  const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => put('race.json', `writer ${i}`, { IfNoneMatch: '*' })));
  assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
  for (const r of results) if (r.status === 'rejected') assert.ok(isS3PreconditionFailed(r.reason));
});

test('If-Match writes over the version read, refuses a stale one, and a missing key is 404', async () => {
  const first = await put('versioned.json', 'v1');
  const second = await put('versioned.json', 'v2', { IfMatch: first.ETag });
  assert.equal(first.ETag === second.ETag, false);
  await assert.rejects(put('versioned.json', 'v3', { IfMatch: first.ETag }), (error) => isS3PreconditionFailed(error));
  assert.equal(await read('versioned.json'), 'v2');
  await assert.rejects(put('never-written.json', 'x', { IfMatch: first.ETag }), (error) => isS3NotFound(error));
});

test('plain writes are not affected', async () => {
  await put('plain.json', 'a');
  await put('plain.json', 'b');
  assert.equal(await read('plain.json'), 'b');
});
