// The Web API over HTTP, as @slack/web-api speaks it: POST <apiUrl><method> with form, multipart
// or JSON arguments and a bot token (Authorization header or `token` argument); answers are HTTP
// 200 with {"ok": ...}, or 429 with Retry-After past a method's rate limit. Every call is recorded.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fail, type Args, type Result, type WebApiMethod } from './args.ts';
import type { Workspace } from './state.ts';

export interface RateLimit {
  /** How many calls of the method are allowed per window. */
  limit: number;
  windowMs: number;
  /** Retry-After sent with the 429; defaults to the time until the window frees a slot. */
  retryAfterSeconds?: number;
}

/** Form fields @slack/web-api JSON-encodes (nested objects and arrays). */
const JSON_FIELDS = ['blocks', 'attachments', 'chunks', 'files'];

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', ...headers });
  res.end(JSON.stringify(body));
}

export function parseMultipart(body: Buffer, contentType: string): { name: string; data: Buffer }[] {
  const boundary = /boundary="?([^";]+)"?/.exec(contentType)?.[1];
  if (!boundary) return [];
  const parts: { name: string; data: Buffer }[] = [];
  const delimiter = Buffer.from(`--${boundary}`);
  let start = body.indexOf(delimiter);
  while (start !== -1) {
    const next = body.indexOf(delimiter, start + delimiter.length);
    if (next === -1) break;
    const part = body.subarray(start + delimiter.length + 2, next - 2); // skip CRLFs
    const headerEnd = part.indexOf('\r\n\r\n');
    if (headerEnd !== -1) {
      const name = /name="([^"]*)"/.exec(part.subarray(0, headerEnd).toString('utf8'))?.[1] ?? '';
      parts.push({ name, data: part.subarray(headerEnd + 4) });
    }
    start = next;
  }
  return parts;
}

function parseArgs(body: Buffer, contentType: string, query: URLSearchParams): Args {
  const args: Args = Object.fromEntries(query);
  if (contentType.includes('application/json')) {
    const text = body.toString('utf8');
    if (text.trim()) Object.assign(args, JSON.parse(text) as Args);
    return args;
  }
  const fields: [string, string][] = contentType.includes('multipart/form-data')
    ? parseMultipart(body, contentType).map((p) => [p.name, p.data.toString('utf8')])
    : [...new URLSearchParams(body.toString('utf8'))];
  for (const [key, value] of fields) {
    args[key] = value;
    if (!JSON_FIELDS.includes(key)) continue;
    try {
      args[key] = JSON.parse(value);
    } catch {
      // Not JSON: keep the string, as Slack would reject it anyway.
    }
  }
  return args;
}

export function createWebApiServer(workspace: Workspace, methods: Record<string, WebApiMethod>, botToken: string) {
  const rateLimits: Record<string, RateLimit> = {};
  const rateWindows = new Map<string, number[]>();

  /** Seconds to wait if the method is over its limit now, else undefined (and the call counts). */
  function retryAfter(method: string): number | undefined {
    const limit = rateLimits[method];
    if (!limit) return undefined;
    const now = Date.now();
    const recent = (rateWindows.get(method) ?? []).filter((t) => t > now - limit.windowMs);
    rateWindows.set(method, recent);
    if (recent.length >= limit.limit) {
      const first = recent[0] ?? now;
      return limit.retryAfterSeconds ?? Math.max(1, Math.ceil((first + limit.windowMs - now) / 1000));
    }
    recent.push(now);
    return undefined;
  }

  function call(method: string, req: IncomingMessage, args: Args): { status: number; body: Result; headers?: Record<string, string> } {
    const handler = methods[method];
    if (!handler) return { status: 200, body: { ok: false, error: 'unknown_method', req_method: method } };
    const header = req.headers.authorization;
    const token = header?.startsWith('Bearer ') ? header.slice('Bearer '.length) : typeof args.token === 'string' ? args.token : undefined;
    if (!token) return { status: 200, body: fail('not_authed') };
    if (token !== botToken) return { status: 200, body: fail('invalid_auth') };
    const wait = retryAfter(method);
    if (wait !== undefined) return { status: 429, body: fail('ratelimited'), headers: { 'Retry-After': String(wait) } };
    const result = handler(args);
    return { status: 200, body: result.ok === false ? result : { ok: true, ...result } };
  }

  function handle(method: string, req: IncomingMessage, res: ServerResponse, body: Buffer, query: URLSearchParams): void {
    let args: Args;
    try {
      args = parseArgs(body, req.headers['content-type'] ?? '', query);
    } catch {
      return sendJson(res, 200, { ok: false, error: 'invalid_json' });
    }
    const { status, body: answer, headers } = call(method, req, args);
    const { token: _token, ...logged } = args;
    const failed = answer.ok === true ? {} : { error: String(answer.error) };
    workspace.calls.push({ method, args: logged, at: Date.now(), status, ok: answer.ok === true, ...failed });
    sendJson(res, status, answer, headers);
  }

  return { rateLimits, handle };
}

export type WebApiServer = ReturnType<typeof createWebApiServer>;
