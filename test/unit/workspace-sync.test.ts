// Workspace sync between S3 and a real sandbox command server. No local emulator enforces S3's
// conditional writes (If-Match / If-None-Match), so S3 here is an in-memory stand-in that does,
// behind the real S3Client (a custom request handler): the sync code runs unchanged.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Readable } from 'node:stream';
import { startSandboxServer, type SandboxServer } from '../../containers/sandbox/server.ts';
import { syncIn, syncOut, workspaceLayout, type SyncState } from '../../shared/sandbox/workspace.ts';
import * as sandbox from '../../shared/sandbox/client.ts';
import { runSandboxTool } from '../../shared/tools/sandbox-tools.ts';

/** A tiny S3 over HTTP semantics: GET/PUT/DELETE objects, ListObjectsV2, conditional PUT. */
function conditionalS3() {
  const objects = new Map<string, { body: Buffer; etag: string }>();
  const xml = (body: string) => `<?xml version="1.0" encoding="UTF-8"?>${body}`;
  const respond = (statusCode: number, body: string | Buffer = '', headers: Record<string, string> = {}) => ({
    response: { statusCode, headers: { 'content-type': 'application/xml', ...headers }, body: Readable.from([typeof body === 'string' ? Buffer.from(body) : body]) },
  });
  const handler = {
    async handle(request: { method: string; path: string; query?: Record<string, unknown>; headers: Record<string, string>; body?: unknown }) {
      const key = decodeURIComponent(request.path.replace(/^\/bucket\/?/, ''));
      const header = (name: string) => request.headers[name] ?? request.headers[name.toLowerCase()];
      if (request.method === 'GET' && request.query?.['list-type'] === '2') {
        const prefix = String(request.query.prefix ?? '');
        const items = [...objects].filter(([k]) => k.startsWith(prefix));
        return respond(200, xml(`<ListBucketResult><IsTruncated>false</IsTruncated>${items.map(([k, o]) => `<Contents><Key>${k}</Key><ETag>${o.etag}</ETag><Size>${o.body.length}</Size></Contents>`).join('')}</ListBucketResult>`));
      }
      const existing = objects.get(key);
      if (request.method === 'GET') {
        if (!existing) return respond(404, xml('<Error><Code>NoSuchKey</Code><Message>missing</Message></Error>'));
        return respond(200, existing.body, { etag: existing.etag, 'content-type': 'application/octet-stream' });
      }
      if (request.method === 'PUT') {
        const ifMatch = header('if-match');
        const ifNoneMatch = header('if-none-match');
        if ((ifMatch && existing?.etag !== ifMatch) || (ifNoneMatch === '*' && existing)) {
          return respond(412, xml('<Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message></Error>'));
        }
        const chunks: Buffer[] = [];
        const body = request.body as Buffer | string | Uint8Array | Readable;
        if (body instanceof Readable) for await (const c of body) chunks.push(Buffer.from(c));
        else chunks.push(Buffer.from(body as Uint8Array));
        const data = Buffer.concat(chunks);
        const etag = `"${createHash('md5').update(data).digest('hex')}"`;
        objects.set(key, { body: data, etag });
        return respond(200, '', { etag });
      }
      if (request.method === 'DELETE') {
        objects.delete(key);
        return respond(204);
      }
      return respond(400, xml('<Error><Code>NotImplemented</Code></Error>'));
    },
  };
  const client = new S3Client({
    region: 'us-east-1',
    endpoint: 'http://s3.local',
    forcePathStyle: true,
    credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
    requestHandler: handler as never,
  });
  return { client, objects };
}

let root: string;
const servers: SandboxServer[] = [];
before(() => {
  root = mkdtempSync(join(tmpdir(), 'sync-test-'));
});
after(async () => {
  await Promise.all(servers.map((s) => s.close()));
  rmSync(root, { recursive: true, force: true });
});

async function sandboxFor(name: string) {
  const token = randomBytes(8).toString('hex');
  const server = await startSandboxServer({ token, host: '127.0.0.1', port: 0, workspace: join(root, name) });
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
    runSandboxTool(boxes[i]!, threads[i]!.layout, {
      toolUseId: `t${i}`,
      name: 'edit',
      input: { path: '/workspace/data/slack/C1/MEMORY.md', old_string: '# Channel memory\n', new_string: `# Channel memory\n- ${fact}\n` },
    });
  assert.equal((await edit(0, 'deploys happen on Tuesdays')).status, 'success');
  assert.equal((await edit(1, 'the on-call rota is in PagerDuty')).status, 'success');
  const [first, second] = await Promise.all(threads.map((t, i) => syncOut({ s3: s3.client, bucket: 'bucket', address: boxes[i]! }, t.layout, states[i]!)));
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
  const retried = await syncOut({ s3: s3.client, bucket: 'bucket', address: boxes[loser]! }, threads[loser]!.layout, (loser === 0 ? first : second)!.state);
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
  assert.deepEqual(racing.conflicts.map((c) => c.key), ['slack/C2/3.3/scratch/b.txt']);
  assert.equal(s3.objects.get('slack/C2/3.3/scratch/b.txt')!.body.toString(), 'theirs');
});
