// A local stand-in for Slack: the Web API methods the Chat SDK Slack adapter (@chat-adapter/slack,
// through @slack/web-api) calls on the product's paths, and an Events API source that delivers
// signed `event_callback` POSTs. Point the adapter at it with `SLACK_API_URL` (or the adapter's
// `apiUrl` option) set to `apiUrl`; @slack/web-api appends the method name to it.
//
// Everything lives in memory. `GET /` is a read-only page of the channels and threads;
// `GET /_local/messages` is the same data as JSON, `GET /_local/info` says who the bot is, and
// `POST /_local/post` lets another process (the chat CLI) post as a user.
import { pollerFor } from '../wait-for.ts';
import { listenLocally } from '../http-server.ts';
import { createEventSource } from './events.ts';
import { createRequestHandler } from './http.ts';
import { createWorkspace } from './state.ts';
import { webApiMethods } from './web-api.ts';
import { createWebApiServer } from './web-api-http.ts';

export type { MessageButton, PostUserMessageInput, PostUserMessageResult, PressButtonInput } from './events.ts';
export { buttonsOf, signSlackRequest } from './events.ts';
export type { ApiCall, Delivery, SlackUser, StoredMessage, StreamAppend } from './state.ts';
export type { RateLimit } from './web-api-http.ts';
export { DEFAULT_CHANNEL, DEFAULT_USER } from './state.ts';

export interface SlackStandInOptions {
  port?: number;
  signingSecret: string;
  botToken: string;
  botUserId?: string;
}

export type SlackStandIn = Awaited<ReturnType<typeof startSlackStandIn>>;

export async function startSlackStandIn(options: SlackStandInOptions) {
  const workspace = createWorkspace({
    teamId: 'T0LOCAL',
    appId: 'A0LOCALAPP',
    botUserId: options.botUserId ?? 'U0LOCALBOT',
    botId: 'B0LOCALBOT',
    botName: 'bot',
  });
  let baseUrl = '';
  const webApi = createWebApiServer(
    workspace,
    webApiMethods(workspace, () => baseUrl),
    options.botToken,
  );
  const events = createEventSource(workspace, options.signingSecret, () => baseUrl);
  const messages = {
    channels: workspace.channels,
    get: workspace.findMessage,
    /** The thread's parent followed by its replies, in ts order. */
    thread: workspace.threadOf,
    all: workspace.allMessages,
  };

  const handle = createRequestHandler({ workspace, webApi, events, botToken: options.botToken, baseUrl: () => baseUrl });
  const server = await listenLocally(handle, { port: options.port });
  baseUrl = server.url;

  return {
    apiUrl: `${baseUrl}/api/`,
    url: baseUrl,
    botUserId: workspace.identity.botUserId,
    botId: workspace.identity.botId,
    messages,
    calls: workspace.calls,
    deliveries: workspace.deliveries,
    ephemeral: workspace.ephemeral,
    statuses: workspace.statuses,
    users: workspace.users,
    /** Mutable: set rateLimits['chat.update'] = { limit, windowMs } to emulate HTTP 429s. */
    rateLimits: webApi.rateLimits,
    postUserMessage: events.postUserMessage,
    /** A user's click on a message's button: a signed block_actions interaction to the events URL. */
    pressButton: events.pressButton,
    envelope: events.envelope,
    waitFor: pollerFor('Slack'),
    setEventsUrl: events.setEventsUrl,
    close: server.close,
  };
}
