// The local console (`npm start` prints its URL): the threads of the local Slack stand-in as they
// happen, streamed to the browser with server-sent events, with each thread's tool calls (inputs and
// results), the runs going, a box to post as a chosen user and a Stop button. It acts only as a person
// would, through the stand-in: a post is a signed Slack event, Stop is the `stop` message.
import type { ServerResponse } from 'node:http';
import * as z from 'zod';
import { listenLocally, readRequestBytes } from '../http-server.ts';
import type { LocalCloud } from '../cloud.ts';
import type { SlackStandIn } from '../slack/index.ts';
import { CONSOLE_PAGE } from './page.ts';
import { consoleView, contextReader, type ViewSources } from './view.ts';

const postSchema = z.object({
  user: z.string().regex(/^[UW][A-Z0-9]{1,20}$/),
  channel: z.string().regex(/^[CDG][A-Z0-9]{1,20}$/),
  text: z.string().trim().min(1).max(40_000),
  threadTs: z
    .string()
    .regex(/^\d+\.\d+$/)
    .optional(),
});
const stopSchema = postSchema.omit({ text: true }).required({ threadTs: true });

/** How often the view is looked at; a browser is sent it only when it changed. */
const TICK_MS = 250;

export interface LocalConsole {
  url: string;
  close(): Promise<void>;
}

/** What the console reads: the Slack stand-in, the data bucket and the state machine's executions of `cloud`. */
export function consoleSources(slack: SlackStandIn, cloud: Pick<LocalCloud, 'clients' | 'names' | 'stepFunctions'>): ViewSources {
  return {
    slack,
    s3: cloud.clients.s3,
    bucket: cloud.names.bucket,
    executions: () =>
      [...cloud.stepFunctions.executions.values()].map((e) => ({
        threadId: (e.input as { threadId?: string } | undefined)?.threadId ?? '',
        running: e.status === 'RUNNING',
      })),
  };
}

export async function startConsole(options: ViewSources & { port?: number }): Promise<LocalConsole> {
  const readToolCalls = contextReader(options.s3, options.bucket);
  const clients = new Set<ServerResponse>();
  let last = '';
  let busy = false;
  const tick = setInterval(() => {
    if (busy || clients.size === 0) return;
    busy = true;
    void consoleView(options, readToolCalls)
      .then((view) => {
        const json = JSON.stringify(view);
        if (json === last) return;
        last = json;
        for (const client of clients) client.write(`data: ${json}\n\n`);
      })
      .catch((error: unknown) => console.error('console: could not build the view', error))
      .finally(() => (busy = false));
  }, TICK_MS);

  const post = async (slack: SlackStandIn, body: z.infer<typeof postSchema>) => {
    const text = body.threadTs ? body.text : `<@${slack.botUserId}> ${body.text}`;
    return slack.postUserMessage({ channel: body.channel, user: body.user, text, ...(body.threadTs ? { threadTs: body.threadTs } : {}) });
  };

  const server = await listenLocally(
    (request, response) =>
      void (async () => {
        const path = new URL(request.url ?? '/', 'http://console').pathname;
        if (request.method === 'GET' && path === '/') {
          response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(CONSOLE_PAGE);
        } else if (request.method === 'GET' && path === '/events') {
          response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
          clients.add(response);
          last = ''; // the newcomer gets the current view at the next tick
          request.on('close', () => clients.delete(response));
        } else if (request.method === 'POST' && (path === '/post' || path === '/stop')) {
          let raw: unknown;
          try {
            raw = JSON.parse((await readRequestBytes(request)).toString('utf8'));
          } catch {
            response.writeHead(400, { 'content-type': 'text/plain' }).end('The body must be JSON.');
            return;
          }
          const parsed = path === '/post' ? postSchema.safeParse(raw) : stopSchema.safeParse(raw);
          if (!parsed.success) {
            response
              .writeHead(400, { 'content-type': 'text/plain' })
              .end(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
            return;
          }
          const body = path === '/post' ? (parsed.data as z.infer<typeof postSchema>) : { ...parsed.data, text: 'stop' };
          const sent = await post(options.slack, body);
          response.writeHead(sent.status === 200 ? 200 : 502, { 'content-type': 'application/json' }).end(JSON.stringify(sent));
        } else {
          response.writeHead(404, { 'content-type': 'text/plain' }).end('Not found');
        }
      })().catch((error: unknown) => {
        if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain' }).end(String(error));
      }),
    { port: options.port },
  );
  return {
    url: server.url,
    async close() {
      clearInterval(tick);
      for (const client of clients) client.end();
      await server.close();
    },
  };
}
