// Stdio MCP servers in the sandbox command server, run for real on 127.0.0.1 with a temporary
// workspace: the SDK's own client (as the sandbox step makes it) reaches a real stdio server (the
// SDK's server classes) through POST /mcp/<name>. One process serves every client until its settings
// change, a client's abort cancels the call in the server, and a server that cannot start says why.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSandboxServer, type SandboxServer } from '../../containers/sandbox/server.ts';
import { callServerTool, listServerTools, type McpTarget } from '../../shared/reach/mcp-client.ts';
import { SandboxStdioTransport } from '../../shared/reach/stdio-transport.ts';
import type { SandboxAddress, StdioServerSpec } from '../../shared/sandbox/client.ts';
import { stdioServerBundle } from '../support/mcp-stdio-server.ts';
import { eventually } from '../support/eventually.ts';

const TOKEN = randomBytes(32).toString('hex');
let server: SandboxServer;
let scratch: string;
let address: SandboxAddress;
let script: string;

before(async () => {
  scratch = await realpath(await mkdtemp(join(tmpdir(), 'stdio-mcp-test-')));
  server = await startSandboxServer({ token: TOKEN, host: '127.0.0.1', port: 0, workspace: join(scratch, 'workspace') });
  address = { baseUrl: server.url, token: TOKEN };
  script = join(scratch, 'workspace', 'notes.mjs');
  await writeFile(script, await stdioServerBundle());
});
after(async () => {
  await server?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

const target = (spec: Partial<StdioServerSpec> = {}, name = 'notes'): McpTarget => {
  const full = { command: process.execPath, args: [script], env: {}, ...spec };
  return { name, timeoutMs: 30_000, transport: () => new SandboxStdioTransport(address, name, full, 30_000) };
};
const never = () => new AbortController().signal;
const pidOf = (text: string) => Number(/process (\d+)/.exec(text)?.[1]);
const gone = (pid: number) => {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
};

test('a stdio server is listed and called through the command server, one process for every client, its env given', async () => {
  const tools = await listServerTools(target({ env: { NOTES_MODE: 'test' } }), never());
  assert.deepEqual(tools.map((t) => t.name).sort(), ['cancelled_calls', 'count_calls', 'environment', 'wait_for_cancel']);
  // Each call is a new client (as each Lambda invocation makes one): the process and its state stay.
  const first = await callServerTool(target({ env: { NOTES_MODE: 'test' } }), 'count_calls', { label: 'a' }, never());
  const second = await callServerTool(target({ env: { NOTES_MODE: 'test' } }), 'count_calls', { label: 'b' }, never());
  assert.match(first.text, /^a: call 1 answered by process \d+$/);
  assert.match(second.text, /^b: call 2 answered by process \d+$/);
  assert.equal(pidOf(first.text), pidOf(second.text));
  assert.equal((await callServerTool(target({ env: { NOTES_MODE: 'test' } }), 'environment', {}, never())).text, 'mode test');
  // Settings changed (another env): a new process.
  const changed = await callServerTool(target({ env: { NOTES_MODE: 'other' } }), 'count_calls', { label: 'c' }, never());
  assert.match(changed.text, /^c: call 1 answered by process \d+$/);
  assert.notEqual(pidOf(changed.text), pidOf(first.text));
  // The old one is gone.
  await eventually(() => gone(pidOf(first.text)), 10_000, 'the old process gone');
});

test('an aborted call (a stop) is cancelled in the server, which goes on serving', async () => {
  const abort = new AbortController();
  const call = callServerTool(target(), 'wait_for_cancel', {}, abort.signal);
  setTimeout(() => abort.abort(new Error('stopped by the user')), 500);
  await assert.rejects(call, /stopped by the user/);
  await eventually(
    async () => (await callServerTool(target(), 'cancelled_calls', {}, never())).text === 'cancelled: 1',
    10_000,
    'the call cancelled',
  );
});

test('a server that cannot start, or exits, is an error naming why; the next call starts it again', async () => {
  await assert.rejects(listServerTools(target({ command: 'no-such-mcp-server' }, 'missing'), never()), /could not be started.*ENOENT/);
  const crashing = target({ args: ['-e', 'console.error("bad config: NOTES_URL is not set"); process.exit(3)'] }, 'crashing');
  await assert.rejects(listServerTools(crashing, never()), /exited \(code 3\): bad config: NOTES_URL is not set/);
  assert.equal((await listServerTools(target({}, 'again'), never())).length, 4);
});

test('closing the command server stops its stdio servers', async () => {
  const other = await startSandboxServer({ token: TOKEN, host: '127.0.0.1', port: 0, workspace: join(scratch, 'workspace') });
  const name = 'short-lived';
  const reached = { baseUrl: other.url, token: TOKEN };
  const spec = { command: process.execPath, args: [script], env: {} };
  const answer = await callServerTool(
    { name, timeoutMs: 30_000, transport: () => new SandboxStdioTransport(reached, name, spec, 30_000) },
    'count_calls',
    { label: 'x' },
    never(),
  );
  await other.close();
  await eventually(() => gone(pidOf(answer.text)), 10_000, 'the process gone');
});
