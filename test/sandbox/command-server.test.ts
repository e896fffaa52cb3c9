// The sandbox command server, run for real on 127.0.0.1 with a temporary workspace: commands are
// real processes, and "killed" is checked against the process table.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, readFile, realpath, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { startSandboxServer, type SandboxServer } from '../../containers/sandbox/server.ts';

const TOKEN = randomBytes(32).toString('hex');
let server: SandboxServer;
let limited: SandboxServer; // small body and manifest limits
let scratch: string; // holds the workspaces and an "outside" directory
let ws: string; // the main server's workspace (real path)
let outside: string;

before(async () => {
  scratch = await realpath(await mkdtemp(join(tmpdir(), 'sandbox-test-')));
  ws = join(scratch, 'workspace');
  outside = join(scratch, 'outside');
  await mkdir(outside);
  await writeFile(join(outside, 'secret.txt'), 'not for the sandbox');
  server = await startSandboxServer({ token: TOKEN, host: '127.0.0.1', port: 0, workspace: ws });
  limited = await startSandboxServer({
    token: TOKEN,
    host: '127.0.0.1',
    port: 0,
    workspace: join(scratch, 'limited'),
    maxBodyBytes: 1024,
    maxManifestFiles: 2,
  });
});

after(async () => {
  await server?.close();
  await limited?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

interface Reply {
  status: number;
  headers: Headers;
  body: Buffer;
  json: Record<string, unknown>;
}

async function call(
  path: string,
  init: {
    method?: string;
    json?: unknown;
    body?: Buffer | string;
    token?: string | null;
    headers?: Record<string, string>;
    base?: SandboxServer;
  } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...init.headers };
  const token = init.token === undefined ? TOKEN : init.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  let body: Buffer | string | undefined = init.body;
  if (init.json !== undefined) {
    body = JSON.stringify(init.json);
    headers['content-type'] = 'application/json';
  }
  const response = await fetch(`${(init.base ?? server).url}${path}`, {
    method: init.method ?? (body === undefined ? 'GET' : 'POST'),
    headers,
    // Copied into a plain Uint8Array: the DOM BodyInit type does not take a Node Buffer.
    body: typeof body === 'string' || body === undefined ? body : new Uint8Array(body),
  });
  const data = Buffer.from(await response.arrayBuffer());
  let json: Record<string, unknown> = {};
  if (response.headers.get('content-type') === 'application/json') json = JSON.parse(data.toString('utf8'));
  return { status: response.status, headers: response.headers, body: data, json };
}

let nextId = 0;
async function exec(command: string, options: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const reply = await call('/exec', { json: { id: `t${++nextId}`, command, ...options } });
  assert.equal(reply.status, 200, JSON.stringify(reply.json));
  return reply.json;
}

/**
 * True once the process no longer runs. A dead process whose parent is gone is re-parented to
 * PID 1 (or a subreaper), and not every PID 1 reaps (on this test machine it does not), so a
 * zombie counts as gone: it holds a pid but runs nothing and cannot hold files or pipes open.
 */
function gone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return true;
    throw error;
  }
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

async function readPids(...files: string[]): Promise<number[]> {
  const pids: number[] = [];
  for (const file of files) {
    const pid = Number((await readFile(join(ws, file), 'utf8')).trim());
    assert.ok(pid > 1, `${file} holds a pid`);
    pids.push(pid);
  }
  return pids;
}

async function waitForFiles(dir: string, files: string[], ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!files.every((file) => existsSync(join(dir, file)) && readFileSync(join(dir, file), 'utf8').trim() !== '')) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${files.join(', ')}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const hasSetsid = spawnSync('sh', ['-c', 'command -v setsid']).status === 0;

test('exec returns stdout, stderr and the exit code', async () => {
  const result = await exec('echo out; echo err >&2; exit 7');
  assert.equal(result.exitCode, 7);
  assert.equal(result.signal, null);
  assert.equal(result.stdout, 'out\n');
  assert.equal(result.stderr, 'err\n');
  assert.equal(result.stdoutBytes, 4);
  assert.equal(result.stderrBytes, 4);
  assert.equal(result.timedOut, false);
  assert.equal(result.cancelled, false);
  assert.equal(result.stdoutTruncated, false);
  assert.match(String(result.id), /^t\d+$/);
  assert.equal(typeof result.durationMs, 'number');

  // stdin is closed: a command reading it gets EOF at once instead of hanging.
  const read = await exec('cat; echo done');
  assert.equal(read.stdout, 'done\n');
});

test('exec runs in the workspace by default, or in cwd; a missing or escaping cwd is refused', async () => {
  assert.equal((await exec('pwd')).stdout, `${ws}\n`);
  await mkdir(join(ws, 'sub/dir'), { recursive: true });
  assert.equal((await exec('pwd', { cwd: 'sub/dir' })).stdout, `${ws}/sub/dir\n`);
  assert.equal((await exec('pwd', { cwd: join(ws, 'sub') })).stdout, `${ws}/sub\n`);

  const missing = await call('/exec', { json: { id: 'cwd-missing', command: 'pwd', cwd: 'nope' } });
  assert.equal(missing.status, 400);
  assert.deepEqual(missing.json, { error: 'no such directory: nope' });
  const escape = await call('/exec', { json: { id: 'cwd-escape', command: 'pwd', cwd: '..' } });
  assert.equal(escape.status, 400);
  assert.deepEqual(escape.json, { error: 'path escapes the workspace: ..' });
});

test('commands get a minimal environment: no token, HOME in the workspace, plus the caller env', async () => {
  const result = await exec('env; echo "home=$HOME"; test -d "$HOME" && echo home-exists', { env: { GREETING: 'hi there' } });
  const stdout = String(result.stdout);
  assert.ok(!stdout.includes(TOKEN), 'the token is not in the environment');
  assert.ok(!/SANDBOX/.test(stdout), 'no SANDBOX_* variables');
  assert.match(stdout, /^GREETING=hi there$/m);
  assert.match(stdout, /^PATH=/m);
  assert.match(stdout, new RegExp(`^home=${ws}/home$`, 'm'));
  assert.match(stdout, /^home-exists$/m);
  // The server process itself was given the token as an option, not through its environment.
  const environ = await exec('cat /proc/$PPID/environ 2>/dev/null | tr "\\0" "\\n"');
  assert.ok(!String(environ.stdout).includes(TOKEN));
});

test('a command past its timeout is killed with its whole tree, setsid children included', async () => {
  // A background child, a nested shell's child, a setsid child, and a setsid child that ignores
  // SIGTERM (so it takes the SIGKILL two seconds later). All keep stdout open.
  const parts = ['sleep 300 & echo $! > t-bg.pid', 'bash -c "sleep 301 & echo \\$! > t-nested.pid; wait" &'];
  const files = ['t-bg.pid', 't-nested.pid'];
  if (hasSetsid) {
    parts.push('setsid sleep 302 & echo $! > t-setsid.pid');
    parts.push(`setsid sh -c 'trap "" TERM; sleep 303 & echo $! > t-stubborn.pid; wait' &`);
    files.push('t-setsid.pid', 't-stubborn.pid');
  }
  parts.push('echo $$ > t-shell.pid', 'sleep 304');
  const started = Date.now();
  const result = await exec(parts.join('\n'), { timeoutMs: 1500 });
  assert.equal(result.timedOut, true);
  assert.equal(result.cancelled, false);
  assert.equal(result.exitCode, null);
  assert.equal(result.signal, 'SIGTERM');
  assert.ok(Date.now() - started < 10_000);
  const pids = await readPids(...files, 't-shell.pid');
  for (const [i, pid] of pids.entries()) assert.ok(gone(pid), `${[...files, 't-shell.pid'][i]} (${pid}) is gone`);
  assert.equal((await call('/health')).json.running, 0);
});

test('a command whose background child keeps stdout open runs until the timeout, then both die', async () => {
  const result = await exec('sleep 300 & echo $! > t-holder.pid; echo started', { timeoutMs: 800 });
  assert.equal(result.timedOut, true);
  assert.equal(result.stdout, 'started\n');
  assert.equal(result.exitCode, 0, 'the shell itself had finished normally');
  const [pid] = await readPids('t-holder.pid');
  assert.ok(gone(pid!));

  // Redirecting the output is how to leave something running past the command.
  const detached = await exec('sleep 300 > /dev/null 2>&1 & echo $! > t-left.pid; echo ok', { timeoutMs: 5000 });
  assert.equal(detached.timedOut, false);
  const [left] = await readPids('t-left.pid');
  assert.ok(!gone(left!), 'a background process with its own output outlives the command');
  process.kill(left!, 'SIGKILL');
});

test('cancel kills a running command and the pending exec answers cancelled', async () => {
  const pending = call('/exec', {
    json: { id: 'to-cancel', command: 'sleep 300 & echo $! > c-bg.pid; echo $$ > c-shell.pid; wait', timeoutMs: 60_000 },
  });
  await waitForFiles(ws, ['c-bg.pid', 'c-shell.pid']);
  assert.equal((await call('/health')).json.running, 1);

  const duplicate = await call('/exec', { json: { id: 'to-cancel', command: 'true' } });
  assert.equal(duplicate.status, 409);

  const cancel = await call('/exec/to-cancel/cancel', { method: 'POST' });
  assert.deepEqual(cancel.json, { cancelled: true });
  const result = await pending;
  assert.equal(result.status, 200);
  assert.equal(result.json.cancelled, true);
  assert.equal(result.json.timedOut, false);
  assert.equal(result.json.id, 'to-cancel');
  for (const pid of await readPids('c-bg.pid', 'c-shell.pid')) assert.ok(gone(pid), `${pid} is gone`);

  assert.deepEqual((await call('/exec/to-cancel/cancel', { method: 'POST' })).json, { cancelled: false });
  assert.deepEqual((await call('/exec/never-ran/cancel', { method: 'POST' })).json, { cancelled: false });
  assert.equal((await call('/exec/to-cancel/cancel')).status, 405);
});

test('a caller that disconnects mid-command gets its command killed', async () => {
  const controller = new AbortController();
  const pending = fetch(`${server.url}/exec`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ id: 'abandoned', command: 'echo $$ > d-shell.pid; sleep 300' }),
    signal: controller.signal,
  });
  await waitForFiles(ws, ['d-shell.pid']);
  controller.abort();
  await assert.rejects(pending);
  const [pid] = await readPids('d-shell.pid');
  const deadline = Date.now() + 5000;
  while (!gone(pid!) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
  assert.ok(gone(pid!));
});

/** A waiting exec (waitMs): attaches to the command with this id, or starts it. */
async function waitingExec(id: string, command: string, options: Record<string, unknown> = {}): Promise<Reply> {
  return call('/exec', { json: { id, command, waitMs: 200, ...options } });
}

/** Waits on the command (attaching each time) until its answer passes `done`; that answer. */
async function attachUntil(id: string, command: string, done: (answer: Record<string, unknown>) => boolean, ms = 10_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const reply = await waitingExec(id, command, { attach: true });
    assert.equal(reply.status, 200, JSON.stringify(reply.json));
    if (done(reply.json)) return reply.json;
    if (Date.now() > deadline) throw new Error(`timed out; last answer ${JSON.stringify(reply.json)}`);
  }
}

/** `sh` that waits until the workspace file `name` exists. */
const until = (name: string) => `while [ ! -f ${name} ]; do sleep 0.05; done`;

test('a waiting exec answers "running" with the last line; the same id and command attach until the whole result', async () => {
  const command = `echo first; ${until('w-go')}; echo second`;
  const started = await waitingExec('w1', command);
  assert.equal(started.status, 200);
  assert.equal(started.json.running, true);
  assert.equal(started.json.id, 'w1');
  await attachUntil('w1', command, (answer) => answer.lastLine === 'first');
  // While it runs, the id is taken: a plain exec and another command are refused, not started.
  assert.equal((await call('/exec', { json: { id: 'w1', command } })).status, 409);
  const other = await waitingExec('w1', 'echo other');
  assert.equal(other.status, 409);
  assert.match(String(other.json.error), /a different command with this id is already running/);
  assert.equal((await call('/health')).json.running, 1);
  await writeFile(join(ws, 'w-go'), '');
  const result = await attachUntil('w1', command, (answer) => answer.running === undefined);
  assert.equal(result.stdout, 'first\nsecond\n', 'the whole output, once');
  assert.equal(result.exitCode, 0);
  // Collected: nothing is left to attach to, and an attach-only request never starts it again.
  const again = await waitingExec('w1', command, { attach: true });
  assert.equal(again.status, 404);
  assert.match(String(again.json.error), /no command with this id to attach to: w1/);
  assert.equal((await call('/health')).json.running, 0);
});

test('the last line: escapes and control characters out, blank lines skipped, a carriage return ends a line, stderr counts', async () => {
  const command = [
    `printf 'start\\n\\033[1;32mbuilt\\033[0m\\tok\\n\\n   \\n'`,
    until('l-1'),
    `printf 'progress 10%%\\rprogress 50%%'`,
    until('l-2'),
    'echo on stderr >&2',
    until('l-3'),
    `head -c 3000 /dev/zero | tr '\\0' x`,
  ].join('; ');
  assert.equal((await waitingExec('l1', command)).status, 200);
  await attachUntil('l1', command, (answer) => answer.lastLine === 'built ok');
  await writeFile(join(ws, 'l-1'), '');
  await attachUntil('l1', command, (answer) => answer.lastLine === 'progress 50%');
  await writeFile(join(ws, 'l-2'), '');
  await attachUntil('l1', command, (answer) => answer.lastLine === 'on stderr');
  await writeFile(join(ws, 'l-3'), '');
  const result = await attachUntil('l1', command, (answer) => answer.running === undefined);
  assert.equal(result.stderr, 'on stderr\n');
  assert.equal(String(result.stdout).length, 'start\n\u001b[1;32mbuilt\u001b[0m\tok\n\n   \nprogress 10%\rprogress 50%'.length + 3000);
});

test('a long last line is cut to 1000 characters', async () => {
  const command = `head -c 3000 /dev/zero | tr '\\0' x; ${until('c-go')}`;
  assert.equal((await waitingExec('c1', command)).status, 200);
  const answer = await attachUntil('c1', command, (a) => String(a.lastLine ?? '').length > 0);
  assert.equal(answer.lastLine, 'x'.repeat(1000));
  await writeFile(join(ws, 'c-go'), '');
  await attachUntil('c1', command, (a) => a.running === undefined);
});

test('a line whose start is no longer kept (over 4,000 characters) is not shown from its middle', async () => {
  const command = `echo before; head -c 5000 /dev/zero | tr '\\0' y; echo printed > m-printed; ${until('m-go')}`;
  assert.equal((await waitingExec('m1', command)).status, 200);
  await waitForFiles(ws, ['m-printed']);
  // Once the long line is out, nothing with a start is left to show.
  const answer = await attachUntil('m1', command, (a) => a.lastLine !== 'before');
  assert.equal(answer.lastLine, '');
  await writeFile(join(ws, 'm-go'), '');
  const result = await attachUntil('m1', command, (a) => a.running === undefined);
  assert.equal(String(result.stdout).length, 'before\n'.length + 5000);
});

test('a command left without a caller past detachMs is cancelled with its tree; its result waits for one more detachMs', async () => {
  const command = 'echo $$ > u-shell.pid; sleep 300';
  const started = await waitingExec('u1', command, { detachMs: 2000 });
  assert.equal(started.json.running, true);
  await waitForFiles(ws, ['u-shell.pid']);
  const [pid] = await readPids('u-shell.pid');
  const deadline = Date.now() + 15_000;
  while (!gone(pid!) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
  assert.ok(gone(pid!), 'nobody came back: the command was cancelled');
  const result = await attachUntil('u1', command, (answer) => answer.running === undefined);
  assert.equal(result.cancelled, true);
});

test('output over the cap is truncated, with the full byte counts', async () => {
  const result = await exec(`head -c 5000 /dev/zero | tr '\\0' a; printf xyz >&2`, { maxOutputBytes: 1000 });
  assert.equal(result.stdout, 'a'.repeat(1000));
  assert.equal(result.stdoutTruncated, true);
  assert.equal(result.stdoutBytes, 5000);
  assert.equal(result.stderr, 'xyz');
  assert.equal(result.stderrTruncated, false);
  assert.equal(result.stderrBytes, 3);

  const none = await exec('echo hello', { maxOutputBytes: 0 });
  assert.equal(none.stdout, '');
  assert.equal(none.stdoutTruncated, true);
  assert.equal(none.stdoutBytes, 6);

  // Invalid UTF-8 comes back as U+FFFD rather than failing the response.
  const binary = await exec(`printf '\\377ok'`);
  assert.equal(binary.stdout, '\uFFFDok');
});

test('authentication: missing and wrong tokens get 401, before any routing', async () => {
  assert.deepEqual(await pick(call('/health', { token: null })), [401, { error: 'missing bearer token' }]);
  assert.deepEqual(await pick(call('/health', { token: null, headers: { authorization: `Basic ${TOKEN}` } })), [
    401,
    { error: 'missing bearer token' },
  ]);
  assert.deepEqual(await pick(call('/health', { token: 'wrong' })), [401, { error: 'invalid token' }]);
  assert.deepEqual(await pick(call('/health', { token: `${TOKEN}x` })), [401, { error: 'invalid token' }]);
  assert.deepEqual(await pick(call('/no-such-route', { token: null })), [401, { error: 'missing bearer token' }]);
  assert.deepEqual(await pick(call('/exec', { token: 'wrong', json: { id: 'x', command: 'touch pwned' } })), [
    401,
    { error: 'invalid token' },
  ]);
  assert.ok(!existsSync(join(ws, 'pwned')));
  assert.deepEqual(await pick(call('/health')), [200, { ok: true, running: 0 }]);
});

test('unknown routes get 404 and wrong methods 405', async () => {
  assert.deepEqual(await pick(call('/nope')), [404, { error: 'no such route: GET /nope' }]);
  assert.deepEqual(await pick(call('/exec/x', { method: 'POST' })), [404, { error: 'no such route: POST /exec/x' }]);
  const wrong = await call('/health', { method: 'DELETE' });
  assert.equal(wrong.status, 405);
  assert.equal(wrong.headers.get('allow'), 'GET');
  assert.equal((await call('/exec')).status, 405);
  assert.equal((await call('/files?path=a', { method: 'POST', body: 'x' })).status, 405);
});

test('malformed or invalid requests get 400 naming the problem', async () => {
  const malformed = await call('/exec', { body: '{"id": "a",', headers: { 'content-type': 'application/json' } });
  assert.equal(malformed.status, 400);
  assert.match(String(malformed.json.error), /^malformed JSON: /);
  assert.equal((await call('/exec', { body: '' })).status, 400);
  assert.deepEqual(await pick(call('/exec', { json: [1, 2] })), [400, { error: 'the request body must be a JSON object' }]);
  assert.deepEqual(await pick(call('/exec', { json: { id: 'a' } })), [400, { error: 'command must be a non-empty string' }]);
  assert.deepEqual(await pick(call('/exec', { json: { command: 'true' } })), [400, { error: 'id must be a non-empty string' }]);
  assert.deepEqual(await pick(call('/exec', { json: { id: 'a', command: 'true', timeoutMs: 3_600_001 } })), [
    400,
    { error: 'timeoutMs must be an integer from 1 to 3600000' },
  ]);
  assert.equal((await call('/exec', { json: { id: 'a', command: 'true', env: { A: 1 } } })).status, 400);
  assert.equal((await call('/exec', { json: { id: 'a', command: 'true', maxOutputBytes: -1 } })).status, 400);
  assert.deepEqual(await pick(call('/files')), [400, { error: 'missing query parameter: path' }]);
});

test('bodies over the limit get 413 naming the limit', async () => {
  const big = JSON.stringify({ id: 'big', command: `echo ${'x'.repeat(2000)}` });
  assert.deepEqual(await pick(call('/exec', { base: limited, body: big })), [413, { error: 'request body is over the 1024 bytes limit' }]);
  assert.deepEqual(await pick(call('/files?path=big.bin', { base: limited, method: 'PUT', body: randomBytes(5000) })), [
    413,
    { error: 'request body is over the 1024 bytes limit' },
  ]);
  assert.ok(!existsSync(join(scratch, 'limited/big.bin')));

  // Without a content-length (chunked), the limit is enforced while reading.
  const chunked = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const url = new URL('/files?path=chunked.bin', limited.url);
    const req = httpRequest(url, { method: 'PUT', headers: { authorization: `Bearer ${TOKEN}` } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.write(Buffer.alloc(800));
    req.end(Buffer.alloc(800));
  });
  assert.equal(chunked.status, 413);
  assert.match(chunked.body, /over the 1024 bytes limit/);

  // The same limit applies to files read back.
  await writeFile(join(scratch, 'limited/large.bin'), randomBytes(2000));
  const large = await call('/files?path=large.bin', { base: limited });
  assert.equal(large.status, 413);
  assert.match(String(large.json.error), /over the 1024 bytes transfer limit/);

  // Still serving afterwards.
  assert.equal((await call('/health', { base: limited })).status, 200);
});

test('paths that escape the workspace get 400: .., absolute, and through symlinks', async () => {
  await symlink(outside, join(ws, 'link-out'));
  await symlink(join(outside, 'secret.txt'), join(ws, 'secret-link'));
  await symlink('/etc/passwd', join(ws, 'passwd-link'));
  await mkdir(join(ws, 'inner'), { recursive: true });
  await writeFile(join(ws, 'inner/ok.txt'), 'fine');
  await symlink(join(ws, 'inner'), join(ws, 'link-in'));

  const escapes = async (path: string, method = 'GET', body?: string) => {
    const reply = await call(`/files?path=${encodeURIComponent(path)}`, { method, body });
    assert.equal(reply.status, 400, `${method} ${path}: ${JSON.stringify(reply.json)}`);
    assert.deepEqual(reply.json, { error: `path escapes the workspace: ${path}` });
  };
  await escapes('../outside/secret.txt');
  await escapes('inner/../../outside/secret.txt');
  await escapes(join(outside, 'secret.txt'));
  await escapes('/etc/passwd');
  await escapes('link-out/secret.txt');
  await escapes('secret-link');
  await escapes('passwd-link');
  await escapes('link-out/new.txt', 'PUT', 'x');
  await escapes('link-out/deeper/new.txt', 'PUT', 'x');
  await escapes('../outside/new.txt', 'PUT', 'x');
  await escapes('link-out/secret.txt', 'DELETE');
  await escapes('../outside/secret.txt', 'DELETE');
  assert.deepEqual(await readdir(outside), ['secret.txt']);
  assert.equal(await readFile(join(outside, 'secret.txt'), 'utf8'), 'not for the sandbox');

  assert.equal((await call('/manifest?prefix=..')).status, 400);
  assert.equal((await call('/manifest?prefix=link-out')).status, 400);
  assert.equal((await call('/exec', { json: { id: 'esc', command: 'pwd', cwd: 'link-out' } })).status, 400);

  // Symlinks that stay inside, and absolute paths inside, are fine.
  assert.equal((await call('/files?path=link-in/ok.txt')).body.toString(), 'fine');
  assert.equal((await call(`/files?path=${encodeURIComponent(join(ws, 'inner/ok.txt'))}`)).body.toString(), 'fine');
  // Deleting a symlink removes the link, not its target (and only inside links pass the check).
  assert.deepEqual((await call('/files?path=link-in', { method: 'DELETE' })).json, { deleted: true });
  assert.ok(existsSync(join(ws, 'inner/ok.txt')));
  await rm(join(ws, 'link-out'));
  await rm(join(ws, 'secret-link'));
  await rm(join(ws, 'passwd-link'));
});

test('files: put creates parents and answers the hash, get returns the bytes, delete removes', async () => {
  const data = randomBytes(70_000);
  const sha = createHash('sha256').update(data).digest('hex');
  const put = await call('/files?path=deep/er/file.bin', { method: 'PUT', body: data });
  assert.deepEqual(put.json, { path: 'deep/er/file.bin', size: data.length, sha256: sha });

  const got = await call('/files?path=deep/er/file.bin');
  assert.equal(got.status, 200);
  assert.equal(got.headers.get('content-type'), 'application/octet-stream');
  assert.equal(got.headers.get('x-sha256'), sha);
  assert.ok(got.body.equals(data));

  assert.deepEqual(await pick(call('/files?path=deep/missing.txt')), [404, { error: 'no such file: deep/missing.txt' }]);
  assert.equal((await call('/files?path=deep/er')).status, 400);
  assert.equal((await call('/files?path=.', { method: 'PUT', body: 'x' })).status, 400);
  assert.equal((await call('/files?path=deep/er', { method: 'PUT', body: 'x' })).status, 400);
  assert.equal((await call('/files?path=deep/er/file.bin/child', { method: 'PUT', body: 'x' })).status, 400);
  assert.equal((await call('/files?path=deep', { method: 'DELETE' })).status, 400);

  // An empty body writes an empty file.
  assert.equal((await call('/files?path=empty.txt', { method: 'PUT', body: '' })).json.size, 0);
  assert.equal((await stat(join(ws, 'empty.txt'))).size, 0);

  assert.deepEqual((await call('/files?path=deep/er/file.bin', { method: 'DELETE' })).json, { deleted: true });
  assert.deepEqual((await call('/files?path=deep/er/file.bin', { method: 'DELETE' })).json, { deleted: false });
  assert.equal((await call('/files?path=deep/er/file.bin')).status, 404);
});

test('files: a write replaces the file atomically (new inode, no temp files left) and keeps its mode', async () => {
  await call('/files?path=atomic/run.sh', { method: 'PUT', body: '#!/bin/sh\necho one\n' });
  await chmod(join(ws, 'atomic/run.sh'), 0o750);
  const before = await stat(join(ws, 'atomic/run.sh'));
  await call('/files?path=atomic/run.sh', { method: 'PUT', body: '#!/bin/sh\necho two\n' });
  const after = await stat(join(ws, 'atomic/run.sh'));
  assert.notEqual(after.ino, before.ino, 'replaced by rename, not rewritten in place');
  assert.equal(after.mode & 0o777, 0o750);
  assert.deepEqual(await readdir(join(ws, 'atomic')), ['run.sh']);
  assert.equal((await exec('./atomic/run.sh')).stdout, 'two\n');

  // A reader that opened the file before a write still reads the old bytes in full: the write
  // never truncated or rewrote the file it had open.
  const reader = exec('exec 3< atomic/run.sh; echo ready > atomic-ready; while [ ! -e atomic-go ]; do sleep 0.02; done; cat <&3', {
    timeoutMs: 10_000,
  });
  await waitForFiles(ws, ['atomic-ready']);
  await call('/files?path=atomic/run.sh', { method: 'PUT', body: '#!/bin/sh\necho three, and longer\n' });
  await writeFile(join(ws, 'atomic-go'), '');
  assert.equal((await reader).stdout, '#!/bin/sh\necho two\n');
});

test('files: x-if-sha256 makes a write conditional (412 with the current hash), "absent" only creates', async () => {
  const sha = (text: string) => createHash('sha256').update(text).digest('hex');
  const put = (body: string, condition: string) =>
    call('/files?path=cond.txt', { method: 'PUT', body, headers: { 'x-if-sha256': condition } });

  assert.equal((await put('v1', 'absent')).status, 200);
  assert.deepEqual(await pick(put('v1 again', 'absent')), [412, { error: 'file changed', sha256: sha('v1') }]);
  assert.deepEqual(await pick(put('v2', sha('something else'))), [412, { error: 'file changed', sha256: sha('v1') }]);
  assert.deepEqual((await put('v2', sha('v1').toUpperCase())).json, { path: 'cond.txt', size: 2, sha256: sha('v2') });
  assert.equal(await readFile(join(ws, 'cond.txt'), 'utf8'), 'v2');
  assert.deepEqual(await pick(call('/files?path=cond-missing.txt', { method: 'PUT', body: 'x', headers: { 'x-if-sha256': sha('x') } })), [
    412,
    { error: 'file changed', sha256: null },
  ]);
  assert.equal((await put('v3', 'not-a-hash')).status, 400);

  // Two racing writes with the same precondition: exactly one wins.
  const results = await Promise.all([put('a', sha('v2')), put('b', sha('v2'))]);
  assert.deepEqual(results.map((r) => r.status).sort(), [200, 412]);
});

test('manifest lists regular files with size, mtime and sha256; skips symlinks; honours prefix and the cap', async () => {
  const dir = join(ws, 'm');
  await mkdir(join(dir, 'sub'), { recursive: true });
  await writeFile(join(dir, 'a.txt'), 'alpha');
  await writeFile(join(dir, 'sub/b.bin'), Buffer.from([0, 1, 2]));
  await symlink(join(dir, 'a.txt'), join(dir, 'link.txt'));
  await symlink(outside, join(dir, 'out-dir'));

  const all = await call('/manifest');
  assert.equal(all.status, 200);
  const files = all.json.files as Record<string, { size: number; mtimeMs: number; sha256: string }>;
  assert.equal(all.json.truncated, false);
  assert.deepEqual(files['m/a.txt'], {
    size: 5,
    mtimeMs: (await stat(join(dir, 'a.txt'))).mtimeMs,
    sha256: createHash('sha256').update('alpha').digest('hex'),
  });
  assert.ok(files['m/sub/b.bin']);
  assert.equal(files['m/link.txt'], undefined);
  assert.ok(!Object.keys(files).some((key) => key.includes('secret')));

  const prefixed = await call('/manifest?prefix=m/sub');
  assert.deepEqual(Object.keys(prefixed.json.files as object), ['m/sub/b.bin']);
  assert.deepEqual((await call('/manifest?prefix=m/a.txt')).json.files, { 'm/a.txt': files['m/a.txt'] });
  assert.deepEqual((await call('/manifest?prefix=nothing-here')).json, { files: {}, truncated: false });

  // Cached hashes are not trusted past a change, even a same-size rewrite with the mtime restored.
  const { mtime } = await stat(join(dir, 'a.txt'));
  await writeFile(join(dir, 'a.txt'), 'ALPHA');
  await utimes(join(dir, 'a.txt'), mtime, mtime);
  const again = (await call('/manifest?prefix=m')).json.files as Record<string, { sha256: string }>;
  assert.equal(again['m/a.txt']!.sha256, createHash('sha256').update('ALPHA').digest('hex'));

  // The cap (2 on the limited server).
  const root = join(scratch, 'limited');
  for (const name of ['c1', 'c2', 'c3']) await writeFile(join(root, `${name}.txt`), name);
  const capped = await call('/manifest', { base: limited });
  assert.equal(capped.json.truncated, true);
  assert.equal(Object.keys(capped.json.files as object).length, 2);

  await rm(join(dir, 'out-dir'));
});

test('the bundle builds, starts from the environment, hides the token, and kills commands on SIGTERM', async () => {
  const build = spawnSync(process.execPath, ['containers/sandbox/build.mjs'], { encoding: 'utf8' });
  assert.equal(build.status, 0, build.stderr);
  const bundle = 'containers/sandbox/dist/server.mjs';
  assert.ok(existsSync(bundle));

  const token = randomBytes(24).toString('hex');
  const workspace = join(scratch, 'bundle-ws');
  const child = spawn(process.execPath, [bundle], {
    env: { PATH: process.env.PATH, SANDBOX_TOKEN: token, SANDBOX_HOST: '127.0.0.1', SANDBOX_PORT: '0', SANDBOX_WORKSPACE: workspace },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    const lines = createInterface({ input: child.stdout });
    const output: string[] = [];
    const first = await new Promise<string>((resolve, reject) => {
      lines.on('line', (line) => {
        output.push(line);
        if (output.length === 1) resolve(line);
      });
      child.on('exit', () => reject(new Error('the server exited before listening')));
    });
    const started = JSON.parse(first) as { msg: string; url: string; pid: number; warning?: string };
    assert.equal(started.msg, 'sandbox server listening');
    assert.equal(started.warning, undefined);
    assert.ok(!first.includes(token));
    const base = { url: started.url, port: 0, close: async () => {} };
    const h = { token };

    assert.deepEqual(await pick(call('/health', { base, ...h })), [200, { ok: true, running: 0 }]);
    assert.equal((await call('/health', { base })).status, 401);

    // Neither the command's environment nor the server's start-up environment shows the token.
    const env = await call('/exec', { base, ...h, json: { id: 'env', command: 'env' } });
    assert.ok(!String(env.json.stdout).includes(token));
    const environ = await call('/exec', {
      base,
      ...h,
      json: { id: 'environ', command: `tr '\\0' '\\n' < /proc/${child.pid}/environ` },
    });
    assert.equal(environ.json.exitCode, 0);
    assert.match(String(environ.json.stdout), /SANDBOX_WORKSPACE=/);
    assert.ok(!String(environ.json.stdout).includes(token), 'the token is wiped from /proc/<pid>/environ');

    // SIGTERM: running commands' trees are killed, then the server exits.
    const pending = call('/exec', {
      base,
      ...h,
      json: { id: 'long', command: 'sleep 300 & echo $! > bg.pid; echo $$ > shell.pid; wait' },
    }).catch(() => null);
    await waitForFiles(workspace, ['bg.pid', 'shell.pid']);
    const pids = ['bg.pid', 'shell.pid'].map((file) => Number(readFileSync(join(workspace, file), 'utf8')));
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
    for (const pid of pids) assert.ok(gone(pid), `${pid} is gone`);
    const answered = await pending;
    if (answered) assert.equal(answered.json.exitCode, null);
    assert.ok(
      output.every((line) => !line.includes(token)),
      'the token is never logged',
    );
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }

  // Without a token it refuses to start.
  const refused = spawnSync(process.execPath, [bundle], { env: { PATH: process.env.PATH }, encoding: 'utf8' });
  assert.equal(refused.status, 1);
  assert.match(refused.stdout, /SANDBOX_TOKEN \(or SANDBOX_TOKEN_FD\) is required/);
});

test('the image entrypoint hands the token over on a pipe: in no environment, no open fd', async () => {
  // A stand-in for tini that stays a separate process, as the real one does.
  const bin = join(scratch, 'fake-bin');
  await mkdir(bin, { recursive: true });
  await writeFile(join(bin, 'tini'), '#!/bin/sh\n[ "$1" = "--" ] && shift\n"$@"\n', { mode: 0o755 });
  const bundle = 'containers/sandbox/dist/server.mjs';
  if (!existsSync(bundle)) assert.equal(spawnSync(process.execPath, ['containers/sandbox/build.mjs']).status, 0);

  const token = randomBytes(24).toString('hex');
  const child = spawn('sh', ['containers/sandbox/entrypoint.sh', process.execPath, bundle], {
    env: {
      PATH: `${bin}:${process.env.PATH}`,
      SANDBOX_TOKEN: token,
      SANDBOX_HOST: '127.0.0.1',
      SANDBOX_PORT: '0',
      SANDBOX_WORKSPACE: join(scratch, 'entrypoint-ws'),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    const first = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout }).once('line', resolve);
      child.on('exit', () => reject(new Error('the server exited before listening')));
    });
    const started = JSON.parse(first) as { url: string; pid: number };
    const base = { url: started.url, port: 0, close: async () => {} };
    assert.deepEqual(await pick(call('/health', { base, token })), [200, { ok: true, running: 0 }]);

    const look = await call('/exec', {
      base,
      token,
      json: {
        id: 'look',
        command: [
          `cat /proc/${child.pid}/environ /proc/${started.pid}/environ | tr '\\0' '\\n'`,
          // fd numbers are reused, so look for the pipe itself among the server's open files.
          `pipe=$(readlink /proc/${child.pid}/fd/3); echo "token-pipe=$pipe"`,
          `for f in /proc/${started.pid}/fd/*; do [ "$(readlink $f)" = "$pipe" ] && echo server-holds-pipe; done`,
          `cat /proc/${child.pid}/fd/3`,
          'env',
        ].join('; '),
      },
    });
    const stdout = String(look.json.stdout);
    assert.match(stdout, /SANDBOX_WORKSPACE=/);
    assert.ok(!stdout.includes(token), 'the token is in no environment and the pipe is drained');
    assert.match(stdout, /^token-pipe=pipe:\[\d+\]$/m);
    assert.ok(!stdout.includes('server-holds-pipe'), 'the server closed its end');

    process.kill(started.pid, 'SIGTERM');
    assert.equal(await exited, 0);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }

  const refused = spawnSync('sh', ['containers/sandbox/entrypoint.sh', process.execPath, bundle], {
    env: { PATH: `${bin}:${process.env.PATH}` },
    encoding: 'utf8',
  });
  assert.equal(refused.status, 1);
  assert.match(refused.stdout, /SANDBOX_TOKEN is required/);
});

async function pick(reply: Promise<Reply>): Promise<[number, Record<string, unknown>]> {
  const { status, json } = await reply;
  return [status, json];
}

test('listens on a Unix socket when given one (how a local task without network is reached)', async () => {
  const socketPath = join(scratch, 'server.sock');
  const onSocket = await startSandboxServer({ token: TOKEN, socketPath, workspace: join(scratch, 'socket-workspace') });
  try {
    assert.equal(onSocket.url, `unix:${socketPath}`);
    const reply = await new Promise<{ status?: number; body: string }>((resolve, reject) => {
      const request = httpRequest({ socketPath, path: '/health', headers: { authorization: `Bearer ${TOKEN}` } }, (response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode, body }));
      });
      request.on('error', reject);
      request.end();
    });
    assert.equal(reply.status, 200);
    assert.equal(JSON.parse(reply.body).ok, true);
  } finally {
    await onSocket.close();
  }
});
