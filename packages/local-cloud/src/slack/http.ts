// The stand-in's HTTP routes: the Web API under /api/, file uploads and downloads, the read-only
// page, and the /_local/ endpoints the chat CLI uses (post as a user, read a thread, who the bot is).
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { foreignRequestRefusal, readRequestBytes } from '../http-server.ts';
import { str } from './args.ts';
import type { EventSource } from './events.ts';
import { renderPage } from './page.ts';
import type { Workspace } from './state.ts';
import { parseMultipart, sendJson, type WebApiServer } from './web-api-http.ts';

export interface RequestHandlerParts {
  workspace: Workspace;
  webApi: WebApiServer;
  events: EventSource;
  botToken: string;
  baseUrl(): string;
}

export function createRequestHandler(parts: RequestHandlerParts): RequestListener {
  const { workspace, webApi, events } = parts;

  const local = {
    /** Who the bot is, for the chat CLI. */
    info: () => ({
      ok: true,
      eventsUrl: events.eventsUrl() ?? null,
      botUserId: workspace.identity.botUserId,
      botName: workspace.identity.botName,
    }),
    messages(query: URLSearchParams) {
      const channel = query.get('channel') ?? undefined;
      const threadTs = query.get('thread_ts') ?? undefined;
      const list =
        channel && threadTs
          ? workspace.threadOf(channel, threadTs)
          : channel
            ? (workspace.channels.get(channel) ?? [])
            : workspace.allMessages();
      const status = channel && threadTs ? (workspace.statuses.get(`${channel}:${threadTs}`) ?? null) : null;
      // What the bot showed one person only (a refusal, a usage report): the chat CLI shows its user theirs.
      const ephemeral = channel && threadTs ? workspace.ephemeral.filter((m) => m.channel === channel && m.thread_ts === threadTs) : [];
      return {
        ok: true,
        channel: channel ?? null,
        thread_ts: threadTs ?? null,
        status,
        messages: list.filter((m) => !m.local.deleted),
        ephemeral,
      };
    },
    async post(body: Buffer) {
      const input = JSON.parse(body.toString('utf8') || '{}') as Record<string, unknown>;
      if (typeof input.text !== 'string') return undefined;
      const result = await events.postUserMessage({
        channel: str(input, 'channel'),
        text: input.text,
        threadTs: str(input, 'threadTs'),
        user: str(input, 'user'),
      });
      return { ok: true, ...result, deliveries: result.deliveries.map(({ payload: _payload, ...delivery }) => delivery) };
    },
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', parts.baseUrl());
    const path = url.pathname;
    // The page and the /_local/ endpoints are for this machine's tools, never for a page elsewhere.
    if (path === '/' || path.startsWith('/_local/')) {
      const refused = foreignRequestRefusal(req, Number(new URL(parts.baseUrl()).port), req.method === 'POST');
      if (refused) return void res.writeHead(refused.status, { 'Content-Type': 'text/plain' }).end(refused.why);
    }
    const body = await readRequestBytes(req);
    if (path.startsWith('/api/')) return webApi.handle(path.slice('/api/'.length), req, res, body, url.searchParams);
    if (req.method === 'POST' && path.startsWith('/_upload/')) return upload(path.slice('/_upload/'.length), req, res, body);
    if (req.method === 'GET' && path.startsWith('/files/')) return download(path.split('/')[2] ?? '', req, res);
    if (req.method === 'POST' && path === '/_local/post') {
      const posted = await local.post(body);
      return posted ? sendJson(res, 200, posted) : sendJson(res, 400, { ok: false, error: 'text is required' });
    }
    if (req.method === 'GET' && path === '/_local/info') return sendJson(res, 200, local.info());
    if (req.method === 'GET' && path === '/_local/messages') return sendJson(res, 200, local.messages(url.searchParams));
    if (req.method === 'GET' && path === '/') {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(renderPage(workspace, events.eventsUrl()));
      return;
    }
    res.writeHead(404, { 'Content-Type': 'text/plain' }).end('Not found');
  }

  function upload(fileId: string, req: IncomingMessage, res: ServerResponse, body: Buffer): void {
    const file = workspace.files.get(fileId);
    if (!file) return void res.writeHead(404).end('Not found');
    const contentType = req.headers['content-type'] ?? '';
    const part = contentType.includes('multipart/form-data') ? parseMultipart(body, contentType)[0]?.data : undefined;
    file.bytes = Buffer.from(part ?? body);
    res.writeHead(200, { 'Content-Type': 'text/plain' }).end(`OK - ${file.bytes.length}`);
  }

  function download(fileId: string, req: IncomingMessage, res: ServerResponse): void {
    // Like Slack: without a valid token a file URL answers with the HTML login page.
    if (req.headers.authorization !== `Bearer ${parts.botToken}`) {
      res.writeHead(200, { 'Content-Type': 'text/html' }).end('<html><body>Sign in to Slack</body></html>');
      return;
    }
    const file = workspace.files.get(fileId);
    if (!file?.bytes) return void res.writeHead(404).end('Not found');
    res.writeHead(200, { 'Content-Type': file.mimetype, 'Content-Length': file.bytes.length }).end(file.bytes);
  }

  return (req, res) =>
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { ok: false, error: 'internal_error', detail: String(error) });
      else res.end();
    });
}
