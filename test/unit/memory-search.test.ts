// memory_search's core against S3 (fauxqs): ranking over a channel's logs, archived contexts and
// memory files; the channel is the run's whatever the input says; the bounds on what is read.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { startSqsAndS3, type Emulator } from '../../packages/local-cloud/src/emulators.ts';
import { archiveKey } from '../../shared/context/store.ts';
import { MEMORY_SEARCH_LIMITS, searchChannelMemory } from '../../shared/context/memory-search.ts';
import type { ContextEntry, LogEntry } from '../../shared/context/store.ts';
import { dataKeys } from '../../shared/ids.ts';
import { workspaceLayout } from '../../shared/sandbox/workspace.ts';
import { BUILTIN_TOOLS } from '../../shared/tools/builtin/index.ts';
import { runAgentTool } from '../../shared/tools/run.ts';
import type { AgentToolContext } from '../../shared/tools/tool.ts';

let emulator: Emulator;
let s3: S3Client;
let buckets = 0;

before(async () => {
  emulator = await startSqsAndS3();
  s3 = new S3Client({
    endpoint: emulator.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    forcePathStyle: true,
  });
});

after(async () => {
  s3?.destroy();
  await emulator?.stop();
});

async function freshBucket() {
  const bucket = `memory-${++buckets}`;
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  const put = (key: string, body: string) => s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
  return { store: { s3, bucket }, put };
}

const jsonl = (items: unknown[]) => items.map((item) => JSON.stringify(item)).join('\n') + '\n';
const said = (role: 'user' | 'assistant', text: string, at: string, runId = 'run-1'): ContextEntry => ({
  role,
  content: [{ text }],
  meta: { runId, at },
});
const logged = (text: string, date: string, userName = 'ana'): LogEntry => ({
  date,
  messageId: date,
  userId: 'U1',
  userName,
  text,
  isBot: false,
});

const HERE = 'slack:C1:1700000000.000100';
const SIBLING = 'slack:C1:1700000500.000100';

test('hits are ranked by relevance across archived contexts, logs and memory files, each saying where it came from', async () => {
  const { store, put } = await freshBucket();
  await put(
    archiveKey(HERE, '2026-01-05T10:00:00.000Z'),
    jsonl([
      said('user', 'We named the staging cluster orca; the orca cluster runs in eu-west-1.', '2026-01-05T09:00:00.000Z'),
      said('assistant', 'Noted: orca is the staging cluster.', '2026-01-05T09:00:05.000Z'),
      said('user', 'Lunch is at noon. Someone mentioned a cluster of grapes.', '2026-01-05T09:10:00.000Z'),
      // What compaction wrote in place of the older messages is not searched: the archive has them verbatim.
      said(
        'user',
        'Previously in this thread (summary of 3 earlier messages): orca orca orca',
        '2026-01-05T10:00:00.000Z',
        'run-2#compaction',
      ),
    ]),
  );
  // A line cut short costs only itself.
  await put(
    dataKeys(SIBLING).log,
    `{"date":"2026-01-06T00:00:00.000Z","text":"the release\n${jsonl([logged('the release train leaves on Thursdays', '2026-01-07T08:00:00.000Z', 'ben')])}`,
  );
  await put(`${dataKeys(HERE).channelDir}/MEMORY.md`, '# Channel notes\n\nDeploys need two approvals.\n\nThe release manager is Chioma.\n');

  const found = await searchChannelMemory(store, HERE, 'orca cluster', 10);
  assert.deepEqual(found.capped, []);
  assert.match(found.hits[0]!.snippet, /We named the staging cluster orca/, 'the message with both words, twice, ranks first');
  assert.equal(found.hits[0]!.where, 'thread 1700000000.000100, archived context 2026-01-05T10-00-00.000Z.jsonl (user)');
  assert.equal(found.hits[0]!.at, '2026-01-05T09:00:00.000Z');
  assert.match(found.hits[1]!.snippet, /orca is the staging cluster/);
  assert.match(found.hits.at(-1)!.snippet, /grapes/, 'one common word alone ranks last');
  assert.ok(!found.hits.some((h) => /summary of/.test(h.snippet)), 'the summary is not a hit');

  const release = await searchChannelMemory(store, HERE, 'release', 10);
  assert.deepEqual(release.hits.map((h) => `${h.where}: ${h.snippet}`).sort(), [
    'slack/C1/MEMORY.md line 5: The release manager is Chioma.',
    'thread 1700000500.000100, log: ben: the release train leaves on Thursdays',
  ]);
  // Prefixes and small typos still find a word.
  assert.match((await searchChannelMemory(store, HERE, 'approv', 5)).hits[0]!.snippet, /two approvals/);
  assert.match((await searchChannelMemory(store, HERE, 'Thursdyas', 5)).hits[0]!.snippet, /Thursdays/);
  assert.deepEqual((await searchChannelMemory(store, HERE, 'zeppelin', 5)).hits, []);
});

test('a message kept across compactions is one hit, not one per archive; the limit caps the hits', async () => {
  const { store, put } = await freshBucket();
  const kept = said('user', 'The wifi password rotates every Monday.', '2026-02-01T09:00:00.000Z');
  await put(archiveKey(HERE, '2026-02-01T10:00:00.000Z'), jsonl([said('user', 'monday standup moved', '2026-02-01T08:00:00.000Z'), kept]));
  await put(archiveKey(HERE, '2026-02-02T10:00:00.000Z'), jsonl([kept, said('user', 'Monday is a holiday', '2026-02-02T08:00:00.000Z')]));
  const found = await searchChannelMemory(store, HERE, 'monday', 10);
  assert.equal(found.hits.filter((h) => /wifi password/.test(h.snippet)).length, 1);
  assert.equal(found.hits.length, 3);
  assert.equal((await searchChannelMemory(store, HERE, 'monday', 2)).hits.length, 2);
});

test("another channel's logs, archives and memory are out of reach, whatever the tool's input names", async () => {
  const { store, put } = await freshBucket();
  const fact = 'the vault code is 4417';
  // C10 shares C1's first characters; C2 is another channel of the same platform; teams is another platform.
  for (const other of ['slack:C10:1700000000.000100', 'slack:C2:1700000000.000100', 'teams:C1:1700000000.000100']) {
    await put(dataKeys(other).log, jsonl([logged(fact, '2026-03-01T00:00:00.000Z')]));
    await put(archiveKey(other, '2026-03-01T01:00:00.000Z'), jsonl([said('user', fact, '2026-03-01T00:30:00.000Z')]));
    await put(`${dataKeys(other).channelDir}/MEMORY.md`, fact);
  }
  await put(dataKeys(HERE).log, jsonl([logged('lunch plans only', '2026-03-01T00:00:00.000Z')]));
  const direct = await searchChannelMemory(store, HERE, 'vault code 4417', 50);
  assert.deepEqual(direct.hits, []);

  const context = { threadId: HERE, s3, bucket: store.bucket, layout: workspaceLayout(HERE) } as Omit<AgentToolContext, 'toolUseId'>;
  const viaTool = await runAgentTool(
    BUILTIN_TOOLS,
    {
      toolUseId: 'tu-1',
      name: 'memory_search',
      input: { query: 'vault code 4417 slack/C2 ../C2', channel: 'C2', threadId: 'slack:C2:1700000000.000100', limit: 50 },
    },
    context,
  );
  assert.equal(viaTool.status, 'success');
  assert.match(viaTool.text, /^nothing in this channel's memory matches/);
  assert.doesNotMatch(viaTool.text, /vault code is/);

  // The same search from the other channel's thread does find it: the data is there, the scope kept it out.
  const there = await searchChannelMemory(store, 'slack:C2:1700000000.000100', 'vault code 4417', 50);
  assert.equal(there.hits.length, 3);
});

test('the bounds: threads, bytes and file size; the searching thread is read first and the result says what was left out', async () => {
  const { store, put } = await freshBucket();
  for (let i = 1; i <= 4; i++) {
    const thread = `slack:C1:170000${i}000.000100`;
    await put(
      archiveKey(thread, `2026-04-0${i}T00:00:00.000Z`),
      jsonl([said('user', `quokka sighting number ${i} ${'x'.repeat(300)}`, `2026-04-0${i}T00:00:00.000Z`)]),
    );
  }
  await put(
    archiveKey(HERE, '2026-04-09T00:00:00.000Z'),
    jsonl([said('user', 'quokka seen from this thread', '2026-04-09T00:00:00.000Z')]),
  );
  await put(
    archiveKey(HERE, '2026-04-10T00:00:00.000Z'),
    jsonl([said('user', `huge quokka ${'y'.repeat(5000)}`, '2026-04-10T00:00:00.000Z')]),
  );

  const all = await searchChannelMemory(store, HERE, 'quokka', 50);
  assert.equal(all.hits.length, 6);
  assert.deepEqual(all.capped, []);

  const few = await searchChannelMemory(store, HERE, 'quokka', 50, { ...MEMORY_SEARCH_LIMITS, maxThreads: 3 });
  assert.deepEqual(few.capped, ['only the 3 newest of 5 threads were searched']);
  assert.deepEqual(
    few.hits.map((h) => /number (\d)|this thread|huge/.exec(h.snippet)![0]).sort(),
    ['huge', 'number 3', 'number 4', 'this thread'].sort(),
  );

  const small = await searchChannelMemory(store, HERE, 'quokka', 50, { ...MEMORY_SEARCH_LIMITS, maxObjectBytes: 2000, maxBytes: 700 });
  assert.deepEqual(small.capped, ['1 file(s) over 2000 bytes were left out', '3 older file(s) were left out (over 700 bytes in all)']);
  assert.ok(small.bytes <= 700);
  assert.match(small.hits[0]!.snippet, /quokka seen from this thread/, "the searching thread's own archive is read first");
  assert.equal(small.hits.length, 2);
});

test('speed for a realistic channel: 200 archived contexts of 20 messages each (printed, not asserted)', async () => {
  const { store, put } = await freshBucket();
  const words = 'deploy cluster release rollback database migration schema index latency budget alert owner'.split(' ');
  const puts: Promise<unknown>[] = [];
  for (let a = 0; a < 200; a++) {
    const thread = `slack:C1:17${String(a % 40).padStart(8, '0')}.000100`;
    const entries = Array.from({ length: 20 }, (_, m) =>
      said(
        m % 2 ? 'assistant' : 'user',
        Array.from({ length: 150 }, (_, w) => words[(a * 7 + m * 3 + w) % words.length]).join(' '),
        `2026-05-01T00:${String(m).padStart(2, '0')}:00.000Z`,
        `run-${a}`,
      ),
    );
    if (a === 123) entries[5] = said('user', 'The on-call phone number is kept by Farida.', '2026-05-01T00:05:00.000Z', `run-${a}`);
    puts.push(
      put(
        archiveKey(thread, `2026-05-${String(1 + (a % 28)).padStart(2, '0')}T00:00:${String(a % 60).padStart(2, '0')}.${a}Z`),
        jsonl(entries),
      ),
    );
  }
  await Promise.all(puts);
  const started = performance.now();
  const found = await searchChannelMemory(store, HERE, 'on-call phone Farida', 5);
  const ms = performance.now() - started;
  console.log(
    `memory_search over ${found.files} files (${Math.round(found.bytes / 1024)} KiB, ${found.threads} threads): ${ms.toFixed(0)} ms`,
  );
  assert.match(found.hits[0]!.snippet, /Farida/);
  assert.deepEqual(found.capped, []);
});
