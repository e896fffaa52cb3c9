// The local console (`npm start` prints its URL): the threads of the local Slack and Teams stand-ins as
// they happen, streamed to the browser with server-sent events, with each thread's tool calls (inputs
// and results), the buttons the bot's messages carry (Approve / Deny), a box to post as a chosen user,
// a Stop button, and side panels (runs, metrics, budgets, event files and schedules, audit records,
// settings.json's problems). It acts only as a person would, through the stand-ins: a post is a signed
// Slack event or Teams activity, a button press the interaction the client would send, Stop the
// `stop` message.
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as z from 'zod';
import { documentClient } from '../../../../shared/aws/dynamodb.ts';
import { channelKeyOf } from '../../../../shared/ids.ts';
import { foreignRequestRefusal, listenLocally, readRequestBytes } from '../http-server.ts';
import type { LocalCloud } from '../cloud.ts';
import type { SlackStandIn } from '../slack/index.ts';
import type { TeamsStandIn } from '../teams/index.ts';
import { CONSOLE_PAGE } from './page.ts';
import { panelReader, type ConsolePanels, type PanelSources } from './panels.ts';
import { consoleThreads, contextReader, type ThreadSources } from './view.ts';

const slackUser = z.string().regex(/^[UW][A-Z0-9]{1,20}$/);
const slackChannel = z.string().regex(/^[CDG][A-Z0-9]{1,20}$/);
const slackTs = z.string().regex(/^\d+\.\d+$/);
const teamsUser = z.string().trim().min(1).max(100);
const text = z.string().trim().min(1).max(40_000);

const postSchema = z.discriminatedUnion('platform', [
  z.object({ platform: z.literal('slack'), user: slackUser, channel: slackChannel, text, threadTs: slackTs.optional() }),
  z.object({
    platform: z.literal('teams'),
    user: teamsUser,
    text,
    conversationId: z.string().min(1).max(500).optional(),
    kind: z.enum(['channel', 'groupChat', 'personal']).optional(),
  }),
]);
const stopSchema = z.discriminatedUnion('platform', [
  z.object({ platform: z.literal('slack'), user: slackUser, channel: slackChannel, threadTs: slackTs }),
  z.object({ platform: z.literal('teams'), user: teamsUser, conversationId: z.string().min(1).max(500) }),
]);
const pressSchema = z.discriminatedUnion('platform', [
  z.object({
    platform: z.literal('slack'),
    user: slackUser,
    channel: slackChannel,
    messageId: slackTs,
    actionId: z.string().min(1).max(255),
  }),
  z.object({
    platform: z.literal('teams'),
    user: teamsUser,
    conversationId: z.string().min(1).max(500),
    messageId: z.string().min(1).max(100),
    actionId: z.string().min(1).max(255),
  }),
]);

/** How often the view is looked at; a browser is sent it only when it changed. */
const TICK_MS = 250;
/** The side panels read the table and the bucket: at most this often. */
const PANELS_MS = 1000;

export interface LocalConsole {
  url: string;
  close(): Promise<void>;
}

export type ConsoleSources = ThreadSources & Omit<PanelSources, 'spenders'> & { persisted?: string };

/** What the console reads: the stand-ins, and the bucket, table, executions, metrics and schedules of `cloud`. */
export function consoleSources(
  standIns: { slack?: SlackStandIn; teams?: TeamsStandIn },
  cloud: Pick<LocalCloud, 'clients' | 'names' | 'stepFunctions' | 'metrics' | 'scheduler'>,
): ConsoleSources {
  return {
    ...standIns,
    s3: cloud.clients.s3,
    bucket: cloud.names.bucket,
    table: { db: documentClient(cloud.clients.dynamodb), tableName: cloud.names.table },
    executions: () =>
      [...cloud.stepFunctions.executions.values()].map((e) => ({
        threadId: (e.input as { threadId?: string } | undefined)?.threadId ?? '',
        running: e.status === 'RUNNING',
      })),
    metricPoints: () => cloud.metrics.points,
    schedules: () => cloud.scheduler.schedules.values(),
  };
}

/** The body as JSON checked by `schema`, or the 400 answer saying what is wrong. */
async function parseBody<T>(request: IncomingMessage, schema: z.ZodType<T>) {
  let raw: unknown;
  try {
    raw = JSON.parse((await readRequestBytes(request)).toString('utf8'));
  } catch {
    return { error: 'The body must be JSON.' };
  }
  // A post without a platform is a Slack one (the first console spoke Slack only).
  if (raw && typeof raw === 'object' && !('platform' in raw)) raw = { ...raw, platform: 'slack' };
  const parsed = schema.safeParse(raw);
  if (parsed.success) return { data: parsed.data };
  return { error: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') };
}

export async function startConsole(options: ConsoleSources & { port?: number }): Promise<LocalConsole> {
  const readToolCalls = contextReader(options.s3, options.bucket);
  let lastThreads: Awaited<ReturnType<typeof consoleThreads>> | undefined;
  const readPanels = panelReader({
    ...options,
    // Whose budgets apply: the channels and people of the threads shown.
    spenders: () =>
      (lastThreads?.threads ?? []).flatMap((t) => {
        const adapter = t.platform;
        const channel = channelKeyOf(t.threadId);
        const people = lastThreads?.users[t.platform].filter((u) => t.messages.some((m) => !m.bot && m.who === u.name)) ?? [];
        return [{ adapter, channel }, ...people.map((u) => ({ adapter, channel, user: `${adapter}:${u.id}` }))];
      }),
  });
  const clients = new Set<ServerResponse>();
  let last = '';
  let busy = false;
  let panels: ConsolePanels | undefined;
  let panelsAt = 0;
  const tick = setInterval(() => {
    if (busy || clients.size === 0) return;
    busy = true;
    void (async () => {
      lastThreads = await consoleThreads(options, readToolCalls);
      if (Date.now() - panelsAt >= PANELS_MS) {
        panelsAt = Date.now();
        panels = await readPanels().catch((error: unknown) => {
          console.error('console: could not read the side panels', error);
          return panels;
        });
      }
      const json = JSON.stringify({ ...lastThreads, panels, persisted: options.persisted ?? null });
      if (json === last) return;
      last = json;
      for (const client of clients) client.write(`data: ${json}\n\n`);
    })()
      .catch((error: unknown) => console.error('console: could not build the view', error))
      .finally(() => (busy = false));
  }, TICK_MS);

  const { slack, teams } = options;
  type Answer = { status: number; body: unknown };
  const refuse = (why: string): Answer => ({ status: 400, body: why });
  const delivered = (status: number | null, body: unknown): Answer => ({ status: status !== null && status < 300 ? 200 : 502, body });

  async function post(body: z.infer<typeof postSchema>): Promise<Answer> {
    if (body.platform === 'slack') {
      if (!slack) return refuse('This stack has no local Slack stand-in.');
      const message = body.threadTs ? body.text : `<@${slack.botUserId}> ${body.text}`;
      const sent = await slack.postUserMessage({
        channel: body.channel,
        user: body.user,
        text: message,
        ...(body.threadTs ? { threadTs: body.threadTs } : {}),
      });
      return delivered(sent.status, sent);
    }
    if (!teams) return refuse('This stack has no local Teams stand-in.');
    const sent = await teams.sendUserMessage({
      text: body.text,
      user: teams.userNamed(body.user),
      ...(body.conversationId ? { conversationId: body.conversationId } : { kind: body.kind ?? 'channel' }),
    });
    return delivered(sent.delivery.status, {
      conversationId: sent.conversationId,
      activityId: sent.activityId,
      status: sent.delivery.status,
    });
  }

  async function press(body: z.infer<typeof pressSchema>): Promise<Answer> {
    try {
      if (body.platform === 'slack') {
        if (!slack) return refuse('This stack has no local Slack stand-in.');
        const sent = await slack.pressButton({
          user: body.user,
          channel: body.channel,
          messageTs: body.messageId,
          actionId: body.actionId,
        });
        return delivered(sent.status, { status: sent.status });
      }
      if (!teams) return refuse('This stack has no local Teams stand-in.');
      const sent = await teams.pressCardButton({
        conversationId: body.conversationId,
        activityId: body.messageId,
        actionId: body.actionId,
        user: teams.userNamed(body.user),
      });
      return delivered(sent.status, { status: sent.status });
    } catch (error) {
      // No such button (any more): the client would not offer it.
      return { status: 409, body: (error as Error).message };
    }
  }

  const routes: Record<string, (request: IncomingMessage) => Promise<Answer>> = {
    '/post': async (request) => {
      const parsed = await parseBody(request, postSchema);
      return 'error' in parsed ? refuse(parsed.error!) : post(parsed.data!);
    },
    '/stop': async (request) => {
      const parsed = await parseBody(request, stopSchema);
      return 'error' in parsed ? refuse(parsed.error!) : post({ ...parsed.data!, text: 'stop' });
    },
    '/press': async (request) => {
      const parsed = await parseBody(request, pressSchema);
      return 'error' in parsed ? refuse(parsed.error!) : press(parsed.data!);
    },
  };

  let port = 0;
  const server = await listenLocally(
    (request, response) =>
      void (async () => {
        const path = new URL(request.url ?? '/', 'http://console').pathname;
        const route = request.method === 'POST' ? routes[path] : undefined;
        const refused = foreignRequestRefusal(request, port, Boolean(route));
        if (refused) {
          response.writeHead(refused.status, { 'content-type': 'text/plain' }).end(refused.why);
        } else if (request.method === 'GET' && path === '/') {
          response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(CONSOLE_PAGE);
        } else if (request.method === 'GET' && path === '/events') {
          response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
          clients.add(response);
          last = ''; // the newcomer gets the current view at the next tick
          request.on('close', () => clients.delete(response));
        } else if (route) {
          const answer = await route(request);
          const json = typeof answer.body !== 'string';
          response
            .writeHead(answer.status, { 'content-type': json ? 'application/json' : 'text/plain' })
            .end(json ? JSON.stringify(answer.body) : answer.body);
        } else {
          response.writeHead(404, { 'content-type': 'text/plain' }).end('Not found');
        }
      })().catch((error: unknown) => {
        if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain' }).end(String(error));
      }),
    { port: options.port },
  );
  port = server.port;
  return {
    url: server.url,
    async close() {
      clearInterval(tick);
      for (const client of clients) client.end();
      await server.close();
    },
  };
}
