// The shared prompt files a warm container keeps (shared/context/prompt-files.ts), against a real S3
// (fauxqs) and DynamoDB Local, with a clock the test moves: what the runtime writes (and counts in
// the channel's workspace version) is read by the next run at once; a file written straight to S3
// is read once what was kept is PROMPT_FILES_CACHE_SECONDS old; nothing is read while neither happened.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { CreateBucketCommand, DeleteObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { startSqsAndS3, type Emulator } from '../../packages/local-cloud/src/emulators.ts';
import { readPromptFiles, type KeptScope, type PromptFilesCache } from '../../shared/context/prompt-files.ts';
import { dataKeys } from '../../shared/ids.ts';
import { getItems } from '../../shared/aws/dynamodb.ts';
import { bumpWorkspaceVersion, versionOf } from '../../shared/sandbox/workspace-version.ts';
import { workspaceVersionKey } from '../../shared/table.ts';
import { recentlyUsed } from '../../shared/support/recent.ts';
import { LOCAL_CREDENTIALS, tableForFile } from '../support/dynamo.ts';

const THREAD = 'slack:C0KEPT:1700000000.000100';
const OTHER_CHANNEL_THREAD = 'slack:C0ELSE:1700000000.000200';
const MAX_AGE_MS = 30_000;
const table = tableForFile();

let emulator: Emulator;
let s3: S3Client;
let bucketCount = 0;
/** S3 calls sent: command name and key or prefix. */
const s3Calls: string[] = [];

before(async () => {
  emulator = await startSqsAndS3();
  s3 = new S3Client({ endpoint: emulator.endpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS, forcePathStyle: true });
  s3.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { Key?: string; Prefix?: string };
      s3Calls.push(`${context.commandName} ${input.Key ?? input.Prefix}`);
      return next(args);
    },
    { step: 'initialize', name: 'countCalls' },
  );
});

after(async () => {
  s3?.destroy();
  await emulator?.stop();
});

const skillFile = (name: string, body: string) => `---\nname: ${name}\ndescription: The ${name} skill.\n---\n${body}\n`;

/** A fresh bucket with a file in each scope, and a cache over it whose clock the test moves. */
async function setUp(maxAgeMs = MAX_AGE_MS) {
  const bucket = `prompt-files-${++bucketCount}`;
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  const put = (key: string, body: string) => s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
  const channelDir = dataKeys(THREAD).channelDir;
  await put('IDENTITY.md', 'You are Kept.');
  await put('MEMORY.md', 'global v1');
  await put('slack/MEMORY.md', 'platform v1');
  await put(`${channelDir}/MEMORY.md`, 'channel v1');
  await put('skills/deploy/SKILL.md', skillFile('deploy', 'Deploy v1.'));
  let clock = 1_000_000;
  const cache: PromptFilesCache = {
    kept: recentlyUsed<KeptScope>(10),
    maxAgeMs,
    now: () => clock,
  };
  const store = { s3, bucket };
  const read = async (threadId = THREAD) => {
    s3Calls.length = 0;
    // As prepare does: the channel's workspace version first, then the files.
    const [version] = await getItems(table(), [workspaceVersionKey(dataKeys(threadId).channelDir)]);
    const files = await readPromptFiles(store, cache, threadId, versionOf(version));
    return { files, s3Calls: [...s3Calls] };
  };
  return {
    put,
    remove: (key: string) => s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key })),
    read,
    channelDir,
    advance: (ms: number) => void (clock += ms),
    /** What sandbox-step does after it saved a file of the channel. */
    bump: () => bumpWorkspaceVersion({ db: table().db, tableName: table().tableName }, channelDir),
  };
}

test('kept files are used while nothing changed: no S3 call at all', async () => {
  const t = await setUp();
  const first = await t.read();
  assert.equal(first.files.identity, 'You are Kept.');
  assert.deepEqual(first.files.memory, { global: 'global v1', transport: 'platform v1', channel: 'channel v1' });
  assert.deepEqual(
    first.files.skills.map((s) => s.name),
    ['deploy'],
  );
  assert.ok(first.s3Calls.length >= 8, `the first read reads every scope (${first.s3Calls.join(', ')})`);
  t.advance(MAX_AGE_MS - 1);
  const second = await t.read();
  assert.deepEqual(second.s3Calls, []);
  assert.deepEqual(second.files, first.files);
});

test("a file the runtime wrote and counted (another thread's sandbox) is read by the next run at once", async () => {
  const t = await setUp();
  await t.read();
  // As sandbox-step saves a channel's files: the S3 writes, then the bump.
  await t.put(`${t.channelDir}/MEMORY.md`, 'channel v2: written by another thread');
  await t.put(`${t.channelDir}/skills/notes/SKILL.md`, skillFile('notes', 'Take notes.'));
  await t.bump();
  const next = await t.read();
  assert.equal(next.files.memory.channel, 'channel v2: written by another thread');
  assert.deepEqual(
    next.files.skills.map((s) => s.name),
    ['deploy', 'notes'],
  );
  // Only the channel's scope was read again: the global and platform ones were kept.
  assert.deepEqual(next.s3Calls.sort(), [
    `GetObjectCommand ${t.channelDir}/MEMORY.md`,
    `GetObjectCommand ${t.channelDir}/skills/notes/SKILL.md`,
    `ListObjectsV2Command ${t.channelDir}/skills/`,
  ]);

  // A removal counted the same way is gone from the next run too.
  await t.remove(`${t.channelDir}/MEMORY.md`);
  await t.bump();
  assert.equal((await t.read()).files.memory.channel, undefined);
});

test("an operator's upload straight to S3 (nothing counted) is read once what was kept is the max age old", async () => {
  const t = await setUp();
  await t.read();
  await t.put('MEMORY.md', 'global v2');
  await t.put('slack/MEMORY.md', 'platform v2');
  await t.put(`${t.channelDir}/MEMORY.md`, 'channel v2');
  await t.put('skills/deploy/SKILL.md', skillFile('deploy', 'Deploy v2.'));
  t.advance(MAX_AGE_MS - 1);
  // The documented bound: within it, a run may still see what the container kept.
  assert.equal((await t.read()).files.memory.global, 'global v1');
  t.advance(1);
  const after = await t.read();
  assert.deepEqual(after.files.memory, { global: 'global v2', transport: 'platform v2', channel: 'channel v2' });
  assert.match(after.files.skills[0]!.body, /Deploy v2/);
});

test('each channel is kept on its own: a bump in one channel does not read another again', async () => {
  const t = await setUp();
  await t.read();
  await t.read(OTHER_CHANNEL_THREAD);
  await t.bump();
  const other = await t.read(OTHER_CHANNEL_THREAD);
  assert.deepEqual(other.s3Calls, []);
  const mine = await t.read();
  assert.ok(mine.s3Calls.includes(`GetObjectCommand ${t.channelDir}/MEMORY.md`), 'the bumped channel is read again');
});

test('a max age of 0 reads S3 for every run', async () => {
  const t = await setUp(0);
  const first = await t.read();
  const second = await t.read();
  assert.deepEqual(second.s3Calls, first.s3Calls);
  await t.put('MEMORY.md', 'global v2');
  assert.equal((await t.read()).files.memory.global, 'global v2');
});
