// The trusted side of the sandbox command server's API (containers/sandbox/README.md): run a
// command, cancel it, move files, list what changed. Every call carries the task's bearer token.
export interface SandboxAddress {
  /** http://<task private ip>:<port> */
  baseUrl: string;
  token: string;
}

export interface ExecRequest {
  id: string;
  command: string;
  cwd?: string;
  timeoutMs?: number;
  maxOutputBytes?: number;
}

/** The command server's own answer type: one contract for both sides. */
export type { ExecResult, ExecRunning } from '../../containers/sandbox/src/exec.ts';
import type { ExecResult, ExecRunning } from '../../containers/sandbox/src/exec.ts';

/** How a waiting exec waits: see execWaiting. */
export interface ExecWait {
  /** Answer after this long with the command's last line if it still runs. */
  waitMs: number;
  /** Cancel it if no caller waits on it for this long after an answer. */
  detachMs: number;
  /** Only attach to a command already running (or ended, result not yet collected) with this id; never start one. */
  attach?: boolean;
}

export interface ManifestEntry {
  size: number;
  mtimeMs: number;
  sha256: string;
}

/** The task could not be reached at all (gone, replaced, not yet listening): the caller may replace it. */
export class SandboxUnreachable extends Error {
  override name = 'SandboxUnreachable';
}

/** The server answered with an error status. */
export class SandboxRequestError extends Error {
  override name = 'SandboxRequestError';
  constructor(
    message: string,
    readonly status: number,
    readonly body: Record<string, unknown>,
  ) {
    super(message);
  }
}

async function call(
  address: SandboxAddress,
  path: string,
  init: Omit<RequestInit, 'signal'> & { timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<Response> {
  let response: Response;
  const timeout = AbortSignal.timeout(init.timeoutMs ?? 30_000);
  try {
    response = await fetch(`${address.baseUrl}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${address.token}`, ...(init.headers as Record<string, string> | undefined) },
      signal: init.signal ? AbortSignal.any([timeout, init.signal]) : timeout,
    });
  } catch (error) {
    // The caller's own abort (a stop) is not a lost sandbox.
    if (init.signal?.aborted) throw init.signal.reason;
    throw new SandboxUnreachable(`sandbox at ${address.baseUrl} unreachable: ${(error as Error).cause ?? (error as Error).message}`);
  }
  return response;
}

async function json<T>(response: Response, what: string): Promise<T> {
  const text = await response.text();
  let body: Record<string, unknown> = {};
  try {
    body = text ? JSON.parse(text) : {};
  } catch {
    body = { error: text.slice(0, 500) };
  }
  if (!response.ok) throw new SandboxRequestError(`${what}: ${String(body.error ?? response.statusText)}`, response.status, body);
  return body as T;
}

export async function health(address: SandboxAddress, timeoutMs = 2000): Promise<boolean> {
  try {
    const response = await call(address, '/health', { timeoutMs });
    return response.ok;
  } catch {
    return false;
  }
}

export async function exec(address: SandboxAddress, request: ExecRequest): Promise<ExecResult> {
  const response = await call(address, '/exec', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(request),
    // The server enforces the command's own timeout; allow for it plus the kill grace period.
    timeoutMs: (request.timeoutMs ?? 120_000) + 15_000,
  });
  return json<ExecResult>(response, 'exec');
}

/**
 * Starts the command, or attaches to the one running with this id and command, and waits for it up
 * to `wait.waitMs`: its result if it ended by then, else that it still runs and its last line.
 */
export async function execWaiting(address: SandboxAddress, request: ExecRequest, wait: ExecWait): Promise<ExecResult | ExecRunning> {
  const response = await call(address, '/exec', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...request, ...wait }),
    // As exec: the answer may be the result of a command that just timed out, after the kill grace period.
    timeoutMs: wait.waitMs + 15_000,
  });
  return json<ExecResult | ExecRunning>(response, 'exec');
}

export async function cancel(address: SandboxAddress, id: string): Promise<boolean> {
  const response = await call(address, `/exec/${encodeURIComponent(id)}/cancel`, { method: 'POST' });
  return (await json<{ cancelled: boolean }>(response, 'cancel')).cancelled;
}

export async function readFile(address: SandboxAddress, path: string): Promise<Buffer | undefined> {
  const response = await call(address, `/files?path=${encodeURIComponent(path)}`);
  if (response.status === 404) return undefined;
  if (!response.ok) await json(response, `read ${path}`);
  return Buffer.from(await response.arrayBuffer());
}

export async function writeFile(
  address: SandboxAddress,
  path: string,
  body: Buffer | string,
  options: { ifSha256?: string | 'absent' } = {},
): Promise<{ path: string; size: number; sha256: string }> {
  const response = await call(address, `/files?path=${encodeURIComponent(path)}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/octet-stream', ...(options.ifSha256 ? { 'x-if-sha256': options.ifSha256 } : {}) },
    body: typeof body === 'string' ? body : new Uint8Array(body),
  });
  return json(response, `write ${path}`);
}

export async function deleteFile(address: SandboxAddress, path: string): Promise<boolean> {
  const response = await call(address, `/files?path=${encodeURIComponent(path)}`, { method: 'DELETE' });
  return (await json<{ deleted: boolean }>(response, `delete ${path}`)).deleted;
}

/** The files under `prefix`; `truncated` when the server stopped at its file limit (the rest are unknown, not gone). */
export async function manifest(
  address: SandboxAddress,
  prefix?: string,
): Promise<{ files: Record<string, ManifestEntry>; truncated: boolean }> {
  const query = prefix ? `?prefix=${encodeURIComponent(prefix)}` : '';
  // Hashing thousands of new files (an npm install) takes a while on a busy task: not a lost sandbox.
  const response = await call(address, `/manifest${query}`, { timeoutMs: 120_000 });
  const body = await json<{ files: Record<string, ManifestEntry>; truncated?: boolean }>(response, 'manifest');
  return { files: body.files, truncated: body.truncated === true };
}

/** How the command server starts a stdio MCP server (containers/sandbox/src/stdio-servers.ts). */
export interface StdioServerSpec {
  command: string;
  args: string[];
  env: Record<string, string>;
}

/** One JSON-RPC message to the task's stdio MCP server `name` (started on first use); the messages that answer it. */
export async function stdioMessage(
  address: SandboxAddress,
  name: string,
  spec: StdioServerSpec,
  message: unknown,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<unknown[]> {
  const response = await call(address, `/mcp/${encodeURIComponent(name)}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...spec, message, timeoutMs }),
    // The server answers within timeoutMs (with an error if the MCP server did not); a first start may take longer.
    timeoutMs: timeoutMs + 15_000,
    signal,
  });
  return (await json<{ messages: unknown[] }>(response, `mcp ${name}`)).messages;
}
