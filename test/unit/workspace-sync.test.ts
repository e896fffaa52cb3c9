// Workspace sync between S3 and a real sandbox command server. No local emulator enforces S3's
// conditional writes (If-Match / If-None-Match), so S3 here is test/support/conditional-s3.ts.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { conditionalS3 } from '../support/conditional-s3.ts';
import { startSandboxServer, type SandboxServer } from '../../containers/sandbox/server.ts';
import { syncIn, workspaceLayout, type SyncState } from '../../shared/sandbox/workspace.ts';
import { syncOut as syncOutWithin, type SyncLimits } from '../../shared/sandbox/sync-out.ts';
import * as sandbox from '../../shared/sandbox/client.ts';
import { BUILTIN_TOOLS } from '../../shared/tools/builtin/index.ts';
import { runSandboxTool } from '../../shared/tools/run.ts';
import { syncNotes } from '../../shared/sandbox/sync-notes.ts';
import { settingsSchema, type Settings } from '../../shared/settings/schema.ts';

const LIMITS: SyncLimits = { maxFiles: 5000, maxBytes: 1024 * 1024 * 1024 };
const syncOut = (deps: Parameters<typeof syncOutWithin>[0], layout: Parameters<typeof syncOutWithin>[1], state: SyncState) =>
  syncOutWithin(deps, layout, state, LIMITS);

let root: string;
const servers: SandboxServer[] = [];
before(() => {
  root = mkdtempSync(join(tmpdir(), 'sync-test-'));
});
after(async () => {
  await Promise.all(servers.map((s) => s.close()));
  rmSync(root, { recursive: true, force: true });
});

async function sandboxFor(name: string, maxManifestFiles?: number) {
  const token = randomBytes(8).toString('hex');
  const server = await startSandboxServer({ token, host: '127.0.0.1', port: 0, workspace: join(root, name), maxManifestFiles });
  servers.push(server);
  return { baseUrl: server.url, token };
}

test('two threads editing one channel MEMORY.md at once keep both edits', async () => {
  const s3 = conditionalS3();
  await s3.client.send(new PutObjectCommand({ Bucket: 'bucket', Key: 'slack/C1/MEMORY.md', Body: '# Channel memory\n' }));
  const threads = ['slack:C1:1.1', 'slack:C1:2.2'].map((threadId) => ({ threadId, layout: workspaceLayout(threadId) }));
  const boxes = await Promise.all(threads.map((t, i) => sandboxFor(`t${i}`)));
  const states: SyncState[] = [];
  for (const [i, t] of threads.entries()) {
    states[i] = (await syncIn({ s3: s3.client, bucket: 'bucket', address: boxes[i]! }, t.layout, {})).state;
  }
  // Both agents append a fact to the same file, from the same starting version.
  const edit = (i: number, fact: string) =>
    runSandboxTool(
      BUILTIN_TOOLS,
      {
        toolUseId: `t${i}`,
        name: 'edit',
        input: {
          path: '/workspace/data/slack/C1/MEMORY.md',
          old_string: '# Channel memory\n',
          new_string: `# Channel memory\n- ${fact}\n`,
        },
      },
      {
        address: boxes[i]!,
        layout: threads[i]!.layout,
        signal: new AbortController().signal,
        callMcpTool: () => Promise.reject(new Error('no MCP server here')),
      },
    );
  assert.equal((await edit(0, 'deploys happen on Tuesdays')).status, 'success');
  assert.equal((await edit(1, 'the on-call rota is in PagerDuty')).status, 'success');
  const [first, second] = await Promise.all(
    threads.map((t, i) => syncOut({ s3: s3.client, bucket: 'bucket', address: boxes[i]! }, t.layout, states[i]!)),
  );
  // Exactly one write wins; the other is told, and its sandbox now holds the winner's version.
  const conflicts = [first!, second!].filter((r) => r.conflicts.length > 0);
  assert.equal(conflicts.length, 1);
  const loser = first!.conflicts.length ? 0 : 1;
  assert.equal(conflicts[0]!.conflicts[0]!.key, 'slack/C1/MEMORY.md');
  const loserCopy = (await sandbox.readFile(boxes[loser]!, 'data/slack/C1/MEMORY.md'))!.toString();
  assert.equal(loserCopy, s3.objects.get('slack/C1/MEMORY.md')!.body.toString());
  // The loser redoes its edit on the latest version (what the model is told to do), and syncs.
  const redo = await edit(loser, loser === 0 ? 'deploys happen on Tuesdays' : 'the on-call rota is in PagerDuty');
  assert.equal(redo.status, 'success');
  const retried = await syncOut(
    { s3: s3.client, bucket: 'bucket', address: boxes[loser]! },
    threads[loser]!.layout,
    (loser === 0 ? first : second)!.state,
  );
  assert.equal(retried.conflicts.length, 0);
  const final = s3.objects.get('slack/C1/MEMORY.md')!.body.toString();
  assert.match(final, /deploys happen on Tuesdays/);
  assert.match(final, /on-call rota is in PagerDuty/);
});

test('sync moves only what changed, and a new file never overwrites one created elsewhere', async () => {
  const s3 = conditionalS3();
  const layout = workspaceLayout('slack:C2:3.3');
  const box = await sandboxFor('t3');
  const deps = { s3: s3.client, bucket: 'bucket', address: box };
  let state = (await syncIn(deps, layout, {})).state;
  await sandbox.writeFile(box, `${layout.scratchPath}/a.txt`, 'one');
  const out = await syncOut(deps, layout, state);
  assert.equal(out.stats.filesOut, 1);
  assert.equal(out.stats.bytesOut, 3);
  state = out.state;
  const again = await syncOut(deps, layout, state);
  assert.equal(again.stats.filesOut, 0, 'nothing changed, nothing moved');
  const back = await syncIn(deps, layout, state);
  assert.equal(back.stats.filesIn, 0, 'nothing new in S3, nothing fetched');
  // A file deleted in the sandbox is deleted in S3.
  await sandbox.deleteFile(box, `${layout.scratchPath}/a.txt`);
  const removed = await syncOut(deps, layout, state);
  assert.equal(s3.objects.has('slack/C2/3.3/scratch/a.txt'), false);
  assert.deepEqual(removed.state, {});
  // A file the sandbox creates while another writer created the same key meanwhile: not overwritten.
  await s3.client.send(new PutObjectCommand({ Bucket: 'bucket', Key: 'slack/C2/3.3/scratch/b.txt', Body: 'theirs' }));
  await sandbox.writeFile(box, `${layout.scratchPath}/b.txt`, 'mine');
  const racing = await syncOut(deps, layout, removed.state);
  assert.deepEqual(
    racing.conflicts.map((c) => c.key),
    ['slack/C2/3.3/scratch/b.txt'],
  );
  assert.equal(s3.objects.get('slack/C2/3.3/scratch/b.txt')!.body.toString(), 'theirs');
});

test('a listing cut at the server limit deletes nothing from S3; over the limits, new files wait with a reason', async () => {
  const s3 = conditionalS3();
  const layout = workspaceLayout('slack:C3:4.4');
  // The channel has shared skills in S3 that sort after the thread's files.
  for (let i = 0; i < 5; i++) {
    await s3.client.send(new PutObjectCommand({ Bucket: 'bucket', Key: `slack/C3/skills/s${i}/SKILL.md`, Body: `skill ${i}` }));
  }
  const box = await sandboxFor('t4', 20);
  const deps = { s3: s3.client, bucket: 'bucket', address: box };
  let state = (await syncIn(deps, layout, {})).state;
  assert.equal(Object.keys(state).length, 5);
  // A flood of files that sort before skills/: the server lists 20 and stops.
  for (let i = 0; i < 30; i++) await sandbox.writeFile(box, `data/slack/C3/4.4/attachments/a${String(i).padStart(2, '0')}`, 'x');
  const flooded = await syncOutWithin(deps, layout, state, LIMITS);
  assert.equal(flooded.overLimit?.listingCut, true);
  for (let i = 0; i < 5; i++) assert.ok(s3.objects.has(`slack/C3/skills/s${i}/SKILL.md`), `skill ${i} kept`);
  assert.equal([...s3.objects.keys()].filter((k) => k.includes('/attachments/')).length, 0, 'new files wait while over the limit');
  state = flooded.state;
  // Under the server's listing limit but over the file limit: the same, by count.
  const small = await sandboxFor('t5');
  const smallDeps = { ...deps, address: small };
  let smallState = (await syncIn(smallDeps, layout, {})).state;
  await sandbox.writeFile(small, `${layout.scratchPath}/kept.txt`, 'kept');
  smallState = (await syncOutWithin(smallDeps, layout, smallState, { maxFiles: 6, maxBytes: 1e9 })).state;
  assert.ok(s3.objects.has('slack/C3/4.4/scratch/kept.txt'));
  for (let i = 0; i < 3; i++) await sandbox.writeFile(small, `${layout.scratchPath}/more${i}.txt`, 'more');
  await sandbox.writeFile(small, `${layout.scratchPath}/kept.txt`, 'changed');
  const over = await syncOutWithin(smallDeps, layout, smallState, { maxFiles: 6, maxBytes: 1e9 });
  assert.deepEqual(over.overLimit, { files: 9, bytes: over.overLimit!.bytes, listingCut: false, skipped: 3 });
  assert.equal(s3.objects.get('slack/C3/4.4/scratch/kept.txt')!.body.toString(), 'changed', 'known files still sync');
  assert.equal(s3.objects.has('slack/C3/4.4/scratch/more0.txt'), false);
  // Deleting brings it back under the limit, and deletions still reach S3.
  for (let i = 0; i < 3; i++) await sandbox.deleteFile(small, `${layout.scratchPath}/more${i}.txt`);
  await sandbox.deleteFile(small, `${layout.scratchPath}/kept.txt`);
  const back = await syncOutWithin(smallDeps, layout, over.state, { maxFiles: 6, maxBytes: 1e9 });
  assert.equal(back.overLimit, undefined);
  assert.equal(s3.objects.has('slack/C3/4.4/scratch/kept.txt'), false);
});

test('a stopped run cannot overwrite the context of the run that holds the thread now', async () => {
  const { loadContext, saveContext, saveLoadedContext, ContextConflict } = await import('../../shared/context/store.ts');
  const s3 = conditionalS3();
  const store = { s3: s3.client, bucket: 'bucket' };
  const meta = { runId: 'r1', at: '' };
  const first = await loadContext(store, 'slack:C9:1.1');
  assert.equal(first.version, null, 'a context that does not exist yet reads at version null');
  first.entries.push({ role: 'user', content: [{ text: 'one' }], meta });
  await saveLoadedContext(store, 'slack:C9:1.1', first);
  const stale = await loadContext(store, 'slack:C9:1.1'); // a step of the run that gets stopped
  const current = await loadContext(store, 'slack:C9:1.1'); // the next run
  current.entries.push({ role: 'user', content: [{ text: 'two' }], meta: { ...meta, runId: 'r2' } });
  await saveLoadedContext(store, 'slack:C9:1.1', current);
  stale.entries.push({ role: 'assistant', content: [{ text: 'late' }], meta });
  await assert.rejects(saveContext(store, 'slack:C9:1.1', stale.entries, stale.version), ContextConflict);
  // A copy of the entries is saved under the version it was read at: nothing rides on the array.
  await assert.rejects(saveContext(store, 'slack:C9:1.1', [...stale.entries], stale.version), ContextConflict);
  const saved = await loadContext(store, 'slack:C9:1.1');
  assert.deepEqual(
    saved.entries.map((e) => e.content[0]!.text),
    ['one', 'two'],
  );
  // Saved in place, the loaded context moves to the version just written and saves again.
  current.entries.push({ role: 'assistant', content: [{ text: 'three' }], meta });
  await saveLoadedContext(store, 'slack:C9:1.1', current);
  assert.equal(current.version, (await loadContext(store, 'slack:C9:1.1')).version);
  const fresh = await loadContext(store, 'slack:C9:2.2');
  fresh.entries.push({ role: 'user', content: [{ text: 'x' }], meta });
  await saveLoadedContext(store, 'slack:C9:2.2', fresh);
  const racing = await loadContext(store, 'slack:C9:3.3');
  await saveContext(store, 'slack:C9:3.3', [...fresh.entries], null);
  await assert.rejects(
    saveContext(store, 'slack:C9:3.3', racing.entries, racing.version),
    ContextConflict,
    'a new context never overwrites one created meanwhile',
  );
});

test("past the run's event file saves, an event file goes back to what S3 has and gets an error file; other files sync as usual", async () => {
  const s3 = conditionalS3();
  const layout = workspaceLayout('slack:C6:6.6');
  const old = '{"type":"immediate","text":"old"}';
  await s3.client.send(new PutObjectCommand({ Bucket: 'bucket', Key: 'events/slack/C6/old.json', Body: old }));
  const box = await sandboxFor('t-event-saves');
  let left = 2;
  const eventWrites = { metadata: {}, take: async () => left-- > 0, refusal: (key: string) => `${key}: no saves left` };
  const deps = { s3: s3.client, bucket: 'bucket', address: box, eventWrites };
  const state = (await syncIn(deps, layout, {})).state;
  for (const name of ['a', 'b', 'c']) await sandbox.writeFile(box, `data/events/slack/C6/${name}.json`, `{"name":"${name}"}`);
  await sandbox.writeFile(box, 'data/events/slack/C6/old.json', '{"changed":true}');
  await sandbox.writeFile(box, 'data/events/slack/C6/notes.txt', 'not an event file');
  await sandbox.writeFile(box, `${layout.scratchPath}/work.txt`, 'work');
  const out = await syncOut(deps, layout, state);
  const events = ['a', 'b', 'c', 'old'].map((name) => `events/slack/C6/${name}.json`);
  const refused = out.eventFilesRefused.map((path) => path.replace(/^data\//, ''));
  assert.equal(refused.length, 2, 'four event file saves, two allowed');
  for (const key of events) {
    const sandboxCopy = (await sandbox.readFile(box, `data/${key}`))?.toString();
    if (refused.includes(key)) {
      assert.equal(JSON.parse(s3.objects.get(key.replace(/\.json$/, '.error.json'))!.body.toString()).error, `${key}: no saves left`);
      // What S3 has: the old version, or nothing for a new file, in both places.
      assert.equal(s3.objects.get(key)?.body.toString(), key.endsWith('old.json') ? old : undefined);
      assert.equal(sandboxCopy, key.endsWith('old.json') ? old : undefined);
    } else {
      assert.equal(s3.objects.get(key)?.body.toString(), sandboxCopy);
    }
  }
  assert.ok(s3.objects.has('events/slack/C6/notes.txt'), 'not an event file: not counted');
  assert.ok(s3.objects.has('slack/C6/6.6/scratch/work.txt'));
  assert.match(syncNotes(out, settingsSchema.parse({}) as Settings).join(' '), /not saved: 2 event files .*maxEventFilesPerRun/);
});
