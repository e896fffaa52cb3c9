// The sandbox command server: a small HTTP/1.1 JSON API that the trusted agent Lambda calls to run
// commands and move files in one thread's workspace. It runs as the only process of a Fargate task
// (production) or, locally, inside a bubblewrap sandbox that gives it the same view (see
// packages/local-cloud/src/ecs/isolation.ts), reached through a Unix socket since that sandbox has no network.
//
// Node built-ins only: build.mjs bundles this file into one .mjs for the container image.
// API and security model: README.md.
import { timingSafeEqual, createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { mkdir, realpath, stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { takeToken } from './src/environ.ts';
import { RunningCommand } from './src/exec.ts';
import { StdioServers, type StdioSpec } from './src/stdio-servers.ts';
import {
  HttpError,
  Manifest,
  deleteWorkspaceFile,
  describeBytes,
  readWorkspaceFile,
  resolveInWorkspace,
  writeWorkspaceFile,
  type WorkspacePath,
} from './src/workspace.ts';

const MIB = 1024 * 1024;
const DEFAULT_MAX_BODY_BYTES = 64 * MIB;
const DEFAULT_TIMEOUT_MS = 120_000;
const MAX_TIMEOUT_MS = 3_600_000;
const DEFAULT_MAX_OUTPUT_BYTES = 10 * MIB;
/** Per stream. Both streams end up in one JSON response held in memory. */
const MAX_OUTPUT_BYTES = 64 * MIB;
const DEFAULT_MAX_MANIFEST_FILES = 10_000;
/** The longest a waiting `/exec` (one with waitMs) holds its answer before saying the command still runs. */
const MAX_WAIT_MS = 600_000;
/** How long a command another answer left running may go without a caller before it is cancelled, by default. */
const DEFAULT_DETACH_MS = 60_000;
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface SandboxServerOptions {
  /** The bearer token callers must present. */
  token: string;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** Listen on this Unix socket instead of host and port. */
  socketPath?: string;
  workspace: string;
  /** Request bodies (JSON or file bytes) and GET /files responses. Default 64 MiB. */
  maxBodyBytes?: number;
  /** Default 10,000. */
  maxManifestFiles?: number;
  /** One JSON object per event; default: silent. */
  log?: (entry: Record<string, unknown>) => void;
}

export interface SandboxServer {
  /** http://host:port, or unix:<path> when listening on a socket. */
  url: string;
  /** 0 when listening on a socket. */
  port: number;
  /** Kills every running command's process tree, then stops listening. */
  close(): Promise<void>;
}

/**
 * A command that can outlive one request: a caller that asks with waitMs gets "still running" and
 * its last line after that long, and attaches again with the same id and command. Between two
 * requests nobody is attached; past detachMs without one, the command is cancelled (its caller is
 * gone) and later its result is dropped.
 */
interface Job {
  run: RunningCommand;
  command: string;
  detachMs: number;
  /** Callers waiting on it now. */
  attached: number;
  detached?: NodeJS.Timeout;
}

interface Context {
  token: Buffer;
  root: string;
  realRoot: string;
  maxBodyBytes: number;
  maxManifestFiles: number;
  /** Commands by id: running, or ended with the result not yet collected by a waiting caller. */
  jobs: Map<string, Job>;
  stdio: StdioServers;
  manifest: Manifest;
  log: (entry: Record<string, unknown>) => void;
}

export async function startSandboxServer(options: SandboxServerOptions): Promise<SandboxServer> {
  if (!options.token) throw new Error('a token is required');
  const root = resolve(options.workspace);
  await mkdir(root, { recursive: true });
  const realRoot = await realpath(root);
  const ctx: Context = {
    // Compared as SHA-256 digests so both sides have the same length for timingSafeEqual and the
    // comparison does not reveal the token's length.
    token: digest(options.token),
    root,
    realRoot,
    maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    maxManifestFiles: options.maxManifestFiles ?? DEFAULT_MAX_MANIFEST_FILES,
    jobs: new Map(),
    stdio: new StdioServers(realRoot, () => commandEnv(realRoot, {})),
    manifest: new Manifest(realRoot),
    log: options.log ?? (() => {}),
  };

  const server = createServer((req, res) => {
    handle(ctx, req, res).catch((error: unknown) => {
      if (error instanceof HttpError) {
        sendJson(res, error.status, { error: error.message, ...error.extra });
        return;
      }
      ctx.log({ msg: 'request failed', method: req.method, url: req.url, error: String(error) });
      sendJson(res, 500, { error: error instanceof Error ? error.message : String(error) });
    });
  });
  // A caller that vanishes without closing its connection (a Lambda frozen at its timeout) would
  // otherwise leave its command running until the command's own timeout; TCP keep-alive lets the
  // kernel notice, and the exec handler then kills the command.
  server.on('connection', (socket) => socket.setKeepAlive(true, 30_000));

  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    const listening = () => {
      server.off('error', reject);
      resolveListen();
    };
    if (options.socketPath) server.listen(options.socketPath, listening);
    else server.listen(options.port ?? 8080, options.host ?? '0.0.0.0', listening);
  });
  const bound = server.address();
  const { address, port } = typeof bound === 'string' ? { address: '', port: 0 } : (bound as AddressInfo);
  const host = address.includes(':') ? `[${address}]` : address;

  return {
    url: typeof bound === 'string' ? `unix:${bound}` : `http://${host}:${port}`,
    port,
    async close() {
      const runs = [...ctx.jobs.values()].map((job) => {
        clearTimeout(job.detached);
        return job.run;
      });
      await Promise.all(runs.map((run) => run.kill()));
      // Let the pending /exec responses go out before the connections are cut.
      await Promise.all(runs.map((run) => run.done.catch(() => undefined)));
      await ctx.stdio.close();
      await new Promise<void>((resolveClose) => {
        server.close(() => resolveClose());
        server.closeAllConnections();
      });
    },
  };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const data = Buffer.from(JSON.stringify(body));
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': data.length, ...headers });
  res.end(data);
}

async function handle(ctx: Context, req: IncomingMessage, res: ServerResponse): Promise<void> {
  // Authenticate before routing, so that nothing (not even which routes exist) is told to a
  // caller without the token.
  const header = req.headers.authorization;
  const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  if (!match) throw new HttpError(401, 'missing bearer token');
  if (!timingSafeEqual(digest(match[1]!), ctx.token)) throw new HttpError(401, 'invalid token');

  const method = req.method ?? 'GET';
  const url = new URL(req.url ?? '/', 'http://sandbox');
  const path = url.pathname;

  const allow = (methods: string[]) => {
    if (!methods.includes(method)) {
      res.setHeader('allow', methods.join(', '));
      throw new HttpError(405, `method not allowed: ${method} ${path} (allowed: ${methods.join(', ')})`);
    }
  };

  if (path === '/health') {
    allow(['GET']);
    return sendJson(res, 200, { ok: true, running: [...ctx.jobs.values()].filter((job) => !job.run.hasEnded).length });
  }
  if (path === '/exec') {
    allow(['POST']);
    return exec(ctx, req, res);
  }
  const cancel = /^\/exec\/([^/]+)\/cancel$/.exec(path);
  if (cancel) {
    allow(['POST']);
    let id: string;
    try {
      id = decodeURIComponent(cancel[1]!);
    } catch {
      throw new HttpError(400, `malformed command id in path: ${cancel[1]}`);
    }
    const job = ctx.jobs.get(id);
    if (!job || job.run.hasEnded) return sendJson(res, 200, { cancelled: false });
    // Answer at once; the pending /exec response reports the outcome once the tree is gone.
    void job.run.cancel();
    return sendJson(res, 200, { cancelled: true });
  }
  const mcp = /^\/mcp\/([A-Za-z0-9-]{1,32})$/.exec(path);
  if (mcp) {
    allow(['POST']);
    return stdioMessage(ctx, req, res, mcp[1]!);
  }
  if (path === '/files') {
    allow(['GET', 'PUT', 'DELETE']);
    return files(ctx, req, res, method, url);
  }
  if (path === '/manifest') {
    allow(['GET']);
    const prefix = url.searchParams.get('prefix') ?? '';
    const start = await resolveInWorkspace(ctx.root, ctx.realRoot, prefix);
    return sendJson(res, 200, await ctx.manifest.list(start, ctx.maxManifestFiles));
  }
  throw new HttpError(404, `no such route: ${method} ${path}`);
}

/**
 * Reads the whole body, refusing more than the limit. On overflow the rest is read and dropped
 * rather than left unread: destroying the request would cut the connection before the 413 could
 * be sent.
 */
function readBody(ctx: Context, req: IncomingMessage, res: ServerResponse): Promise<Buffer> {
  const limit = ctx.maxBodyBytes;
  const tooLarge = () => {
    // The connection cannot be reused once we stop caring about the body.
    res.setHeader('connection', 'close');
    return new HttpError(413, `request body is over the ${describeBytes(limit)} limit`);
  };
  const declared = Number(req.headers['content-length']);
  if (declared > limit) {
    req.resume();
    return Promise.reject(tooLarge());
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > limit) {
        failed = true;
        chunks.length = 0;
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (!failed) resolve(Buffer.concat(chunks));
    });
    req.on('error', reject);
  });
}

async function readJsonObject(ctx: Context, req: IncomingMessage, res: ServerResponse): Promise<Record<string, unknown>> {
  const body = await readBody(ctx, req, res);
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw new HttpError(400, `malformed JSON: ${(error as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new HttpError(400, 'the request body must be a JSON object');
  }
  return value as Record<string, unknown>;
}

async function exec(ctx: Context, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await readJsonObject(ctx, req, res);
  const { id, command } = body;
  if (typeof id !== 'string' || id === '') throw new HttpError(400, 'id must be a non-empty string');
  if (typeof command !== 'string' || command === '') throw new HttpError(400, 'command must be a non-empty string');
  const timeoutMs = optionalNumber(body, 'timeoutMs', DEFAULT_TIMEOUT_MS, 1, MAX_TIMEOUT_MS);
  const maxOutputBytes = optionalNumber(body, 'maxOutputBytes', DEFAULT_MAX_OUTPUT_BYTES, 0, MAX_OUTPUT_BYTES);
  const waitMs = body.waitMs === undefined ? undefined : optionalNumber(body, 'waitMs', 0, 1, MAX_WAIT_MS);
  const detachMs = optionalNumber(body, 'detachMs', DEFAULT_DETACH_MS, 1, MAX_TIMEOUT_MS);
  if (body.attach !== undefined && typeof body.attach !== 'boolean') throw new HttpError(400, 'attach must be a boolean');
  const extraEnv = parseEnv(body.env);

  let cwd: WorkspacePath = { abs: ctx.realRoot, rel: '' };
  if (body.cwd !== undefined) {
    if (typeof body.cwd !== 'string') throw new HttpError(400, 'cwd must be a string');
    cwd = await resolveInWorkspace(ctx.root, ctx.realRoot, body.cwd);
    const info = await stat(cwd.abs).catch(() => null);
    if (!info?.isDirectory()) throw new HttpError(400, `no such directory: ${body.cwd}`);
  }
  const attachable = (job: Job | undefined): job is Job => {
    if (!job) return false;
    // A waiting caller attaches to its own command; anything else with a taken id is a mistake.
    if (waitMs === undefined || job.command !== command) {
      throw new HttpError(409, `a ${job.command === command ? '' : 'different '}command with this id is already running: ${id}`);
    }
    return true;
  };
  let job = ctx.jobs.get(id);
  if (!attachable(job)) {
    if (body.attach === true) {
      throw new HttpError(404, `no command with this id to attach to: ${id} (its task restarted, or it was left without a caller)`);
    }
    const env = await commandEnv(ctx.realRoot, extraEnv);
    // Looked up again: the awaits above let another request in.
    job = ctx.jobs.get(id);
    if (!attachable(job)) {
      job = { run: new RunningCommand({ id, command, cwd: cwd.abs, timeoutMs, maxOutputBytes, env }), command, detachMs, attached: 0 };
      ctx.jobs.set(id, job);
    }
  }
  await waitOn(ctx, job, id, res, waitMs);
}

/** Answers with the job's result once it ends, or, after waitMs, with `running` and its last line. */
async function waitOn(ctx: Context, job: Job, id: string, res: ServerResponse, waitMs: number | undefined): Promise<void> {
  const { run } = job;
  clearTimeout(job.detached);
  job.attached++;
  // The caller went away before the answer: nobody can collect the result, so stop the command.
  res.on('close', () => {
    if (!res.writableEnded) {
      ctx.log({ msg: 'caller disconnected; killing the command', id });
      void run.cancel();
    }
  });
  let timer: NodeJS.Timeout | undefined;
  const waited =
    waitMs === undefined ? undefined : new Promise<'waited'>((resolve) => (timer = setTimeout(() => resolve('waited'), waitMs)));
  try {
    const result = await (waited ? Promise.race([run.done, waited]) : run.done);
    if (result === 'waited') {
      sendJson(res, 200, { id, running: true, lastLine: run.lastLine() });
      return;
    }
    ctx.log({
      msg: 'exec',
      id,
      exitCode: result.exitCode,
      signal: result.signal,
      timedOut: result.timedOut,
      cancelled: result.cancelled,
      durationMs: result.durationMs,
    });
    sendJson(res, 200, result);
    if (ctx.jobs.get(id) === job) ctx.jobs.delete(id);
  } catch (error) {
    if (ctx.jobs.get(id) === job) ctx.jobs.delete(id);
    throw new HttpError(500, `could not start the command: ${(error as Error).message}`);
  } finally {
    clearTimeout(timer);
    job.attached--;
    if (job.attached === 0 && ctx.jobs.get(id) === job) leftWithoutCaller(ctx, job, id);
  }
}

/** Nobody waits on the job: past its detachMs it is cancelled, and past that again its result is dropped. */
function leftWithoutCaller(ctx: Context, job: Job, id: string): void {
  job.detached = setTimeout(() => {
    if (job.run.hasEnded) {
      if (ctx.jobs.get(id) === job) ctx.jobs.delete(id);
      return;
    }
    ctx.log({ msg: 'no caller came back; cancelling the command', id, detachMs: job.detachMs });
    void job.run.cancel();
    leftWithoutCaller(ctx, job, id);
  }, job.detachMs);
  job.detached.unref();
}

/**
 * A command's environment. HOME inside the workspace: the root filesystem is read-only in the task,
 * and tools (git, npm, pip) want somewhere to keep config and caches; recreated each time in case a
 * command removed it. Nothing of the server's own (it holds no secrets, but a command has no
 * business with it either), then the caller's additions.
 */
async function commandEnv(realRoot: string, extra: Record<string, string>): Promise<Record<string, string>> {
  const home = `${realRoot}/home`;
  await mkdir(home, { recursive: true });
  return { PATH: process.env.PATH || DEFAULT_PATH, HOME: home, LANG: process.env.LANG || 'C.UTF-8', ...extra };
}

/** One JSON-RPC message to a stdio MCP server of the task (started on first use); the messages that answer it. */
async function stdioMessage(ctx: Context, req: IncomingMessage, res: ServerResponse, name: string): Promise<void> {
  const body = await readJsonObject(ctx, req, res);
  const { command, args, message } = body;
  if (typeof command !== 'string' || command === '') throw new HttpError(400, 'command must be a non-empty string');
  if (!Array.isArray(args) || !args.every((arg) => typeof arg === 'string')) throw new HttpError(400, 'args must be an array of strings');
  if (typeof message !== 'object' || message === null || Array.isArray(message))
    throw new HttpError(400, 'message must be a JSON-RPC object');
  const timeoutMs = optionalNumber(body, 'timeoutMs', DEFAULT_TIMEOUT_MS, 1, MAX_TIMEOUT_MS);
  const spec: StdioSpec = { command, args: args as string[], env: parseEnv(body.env) };
  // The caller went away (a stop, its own timeout): the server is told to cancel the request.
  const gone = new AbortController();
  res.on('close', () => {
    if (!res.writableEnded) gone.abort();
  });
  const messages = await ctx.stdio.send(name, spec, message as Record<string, unknown>, timeoutMs, gone.signal);
  sendJson(res, 200, { messages });
}

function optionalNumber(body: Record<string, unknown>, name: string, fallback: number, min: number, max: number): number {
  const value = body[name];
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new HttpError(400, `${name} must be an integer from ${min} to ${max}`);
  }
  return value;
}

function parseEnv(value: unknown): Record<string, string> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new HttpError(400, 'env must be an object of strings');
  }
  const env: Record<string, string> = {};
  for (const [name, v] of Object.entries(value)) {
    if (typeof v !== 'string') throw new HttpError(400, `env.${name} must be a string`);
    if (name === '' || name.includes('=') || name.includes('\0') || v.includes('\0')) {
      throw new HttpError(400, `env.${name} is not a valid environment variable`);
    }
    env[name] = v;
  }
  return env;
}

async function files(ctx: Context, req: IncomingMessage, res: ServerResponse, method: string, url: URL): Promise<void> {
  const given = url.searchParams.get('path');
  if (given === null || given === '') throw new HttpError(400, 'missing query parameter: path');
  const path = await resolveInWorkspace(ctx.root, ctx.realRoot, given);

  if (method === 'GET') {
    const { data, sha256 } = await readWorkspaceFile(path, given, ctx.maxBodyBytes);
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': data.length, 'x-sha256': sha256 });
    res.end(data);
    return;
  }
  if (method === 'PUT') {
    const condition = req.headers['x-if-sha256'];
    let ifSha256: string | undefined;
    if (typeof condition === 'string') {
      ifSha256 = condition.trim().toLowerCase();
      if (ifSha256 !== 'absent' && !/^[0-9a-f]{64}$/.test(ifSha256)) {
        throw new HttpError(400, 'x-if-sha256 must be a hex SHA-256 or "absent"');
      }
    }
    const data = await readBody(ctx, req, res);
    return sendJson(res, 200, await writeWorkspaceFile(path, given, data, ifSha256));
  }
  return sendJson(res, 200, await deleteWorkspaceFile(path, given));
}

/** Entry point: configuration from the environment, one JSON log line per event. */
async function main(): Promise<void> {
  const log = (entry: Record<string, unknown>) => console.log(JSON.stringify({ time: new Date().toISOString(), ...entry }));
  // Read the token, then take it out of the environment so no command can inherit or read it.
  const { token, wiped } = takeToken();
  if (!token) {
    log({ msg: 'SANDBOX_TOKEN (or SANDBOX_TOKEN_FD) is required' });
    process.exit(1);
  }
  const port = Number(process.env.SANDBOX_PORT || 8080);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    log({ msg: 'SANDBOX_PORT must be a port number', value: process.env.SANDBOX_PORT });
    process.exit(1);
  }
  const workspace = process.env.SANDBOX_WORKSPACE || '/workspace';
  const socketPath = process.env.SANDBOX_SOCKET || undefined;
  const sandbox = await startSandboxServer({ token, host: process.env.SANDBOX_HOST || '0.0.0.0', port, socketPath, workspace, log });
  log({
    msg: 'sandbox server listening',
    url: sandbox.url,
    workspace,
    pid: process.pid,
    ...(wiped ? {} : { warning: 'could not wipe the token from /proc/self/environ' }),
  });

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log({ msg: 'stopping', signal });
    sandbox.close().then(
      () => process.exit(0),
      (error: unknown) => {
        log({ msg: 'error while stopping', error: String(error) });
        process.exit(1);
      },
    );
  };
  // ECS sends SIGTERM and waits stopTimeout before SIGKILL; a local Ctrl-C sends SIGINT.
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

function isEntryPoint(): boolean {
  const script = process.argv[1];
  if (!script) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(script)).href;
  } catch {
    return false;
  }
}

if (isEntryPoint()) {
  main().catch((error: unknown) => {
    console.log(JSON.stringify({ msg: 'sandbox server failed to start', error: String(error) }));
    process.exit(1);
  });
}
