// A long command watched by the sandbox step (shared/sandbox/streaming.ts) against a real command
// server on 127.0.0.1: a new last line ends the wait with StillRunning, an unchanged one keeps it
// waiting until the step's time is up, the step that comes back attaches (never starts the command
// again), and the line is redacted before it is cut.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSandboxServer, type SandboxServer } from '../../containers/sandbox/server.ts';
import { SandboxRequestError, type SandboxAddress } from '../../shared/sandbox/client.ts';
import { type CommandWatch, execWatched, StillRunning, statusLine } from '../../shared/sandbox/streaming.ts';
import { MAX_PROGRESS_LINE_CHARS } from '../../shared/contracts.ts';
import { redactSecrets } from '../../shared/policy/secret-filter.ts';

const TOKEN = randomBytes(32).toString('hex');
let server: SandboxServer;
let scratch: string;
let ws: string;
let address: SandboxAddress;

before(async () => {
  scratch = await realpath(await mkdtemp(join(tmpdir(), 'streaming-test-')));
  ws = join(scratch, 'workspace');
  server = await startSandboxServer({ token: TOKEN, host: '127.0.0.1', port: 0, workspace: ws });
  address = { baseUrl: server.url, token: TOKEN };
});
after(async () => {
  await server?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

const show = (line: string) => statusLine(line, (text) => redactSecrets(text));
const watch = (fields: Partial<CommandWatch> = {}): CommandWatch => ({ attach: false, until: Infinity, now: Date.now, show, ...fields });
const until = (name: string) => `while [ ! -f ${name} ]; do sleep 0.05; done`;

/** What execWatched ended with: the StillRunning it threw (anything else is rethrown), or the result. */
async function watched(id: string, command: string, fields: Partial<CommandWatch> = {}) {
  try {
    return await execWatched(address, { id, command, timeoutMs: 60_000 }, watch(fields));
  } catch (error) {
    if (error instanceof StillRunning) return error;
    throw error;
  }
}

test('a new last line ends the wait; the step that comes back attaches, and the one that sees the end gets the whole output', async () => {
  const command = `echo one; ${until('s-go')}; echo two`;
  const first = await watched('s1', command);
  assert.ok(first instanceof StillRunning);
  assert.equal(first.line, 'one');
  // The same line again is no news: the next step waits on until the command ends.
  setTimeout(() => void writeFile(join(ws, 's-go'), ''), 2500);
  const result = await watched('s1', command, { attach: true, shown: 'one' });
  assert.ok(!(result instanceof StillRunning));
  assert.equal(result.stdout, 'one\ntwo\n');
  assert.equal(result.exitCode, 0);
});

test('with no new line the step hands over once its time is up, showing the same line', async () => {
  const command = `echo only; ${until('t-go')}`;
  const first = await watched('t1', command);
  assert.ok(first instanceof StillRunning && first.line === 'only');
  const late = await watched('t1', command, { attach: true, shown: 'only', until: 0 });
  assert.ok(late instanceof StillRunning);
  assert.equal(late.line, 'only');
  await writeFile(join(ws, 't-go'), '');
  const result = await watched('t1', command, { attach: true, shown: 'only' });
  assert.ok(!(result instanceof StillRunning));
  assert.equal(result.stdout, 'only\n');
});

test('a step coming back to a command the task no longer has gets an error, and the command is not started again', async () => {
  await assert.rejects(watched('gone-1', 'touch started-again', { attach: true }), (error) => {
    assert.ok(error instanceof SandboxRequestError);
    assert.equal(error.status, 404);
    return true;
  });
  await assert.rejects(realpath(join(ws, 'started-again')));
});

test('the status line: secrets redacted before the line is cut, so a secret across the cut does not leak', async () => {
  const key = 'AKIA' + 'ABCDEFGHIJKLMNOP';
  const line = `${'x'.repeat(MAX_PROGRESS_LINE_CHARS - 10)} ${key} tail`;
  const shown = show(line);
  assert.ok(shown.length <= MAX_PROGRESS_LINE_CHARS);
  assert.ok(!shown.includes('AKIA'), shown);
  assert.equal(show('short line'), 'short line');

  const command = `echo "uploading with ${key}"; ${until('k-go')}`;
  const first = await watched('k1', command);
  assert.ok(first instanceof StillRunning);
  assert.ok(!first.line.includes(key), first.line);
  assert.match(first.line, /^uploading with /);
  await writeFile(join(ws, 'k-go'), '');
  await watched('k1', command, { attach: true, shown: first.line });
});
