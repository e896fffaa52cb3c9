// Teams for every function: a Chat SDK adapter that sends activities straight to the conversation's
// Bot Connector serviceUrl with plain fetch (the Teams adapter package's own SDK-free Connector,
// card and Graph helpers) and an app token from the cached client-credentials grant; in the Teams
// webhook it also receives (receive.ts). The full Teams adapter would bring the Teams SDK (over
// 2 MB bundled); thread ids are its, so ids stored before stay valid. This is the one place the bot's token
// goes to a serviceUrl: each call first checks that the thread's serviceUrl is the conversation's
// own (shared/platforms/teams/service-url.ts), whoever wrote the thread id.
import { Buffer } from 'node:buffer';
import {
  AdapterRateLimitError,
  bufferToDataUri,
  downloadAttachment,
  extractCard,
  extractFiles,
  NetworkError,
  toBuffer,
} from '@chat-adapter/shared';
import {
  buildTeamsMessageActivity,
  callTeamsConnectorApi,
  deleteTeamsMessage,
  postTeamsMessage,
  sendTeamsTyping,
  updateTeamsMessage,
} from '@chat-adapter/teams/api';
import { cardToAdaptiveCard } from '@chat-adapter/teams/cards';
import {
  listTeamsChannelMessages,
  listTeamsChatMessages,
  listTeamsMessageReplies,
  paginateTeamsGraph,
  toGraphMessage,
} from '@chat-adapter/teams/graph';
import {
  Message,
  NotImplementedError,
  stringifyMarkdown,
  type Adapter,
  type AdapterPostableMessage,
  type Attachment,
  type ChatInstance,
  type EphemeralMessage,
  type FetchOptions,
  type FetchResult,
  type FormattedContent,
  type Logger,
  type RawMessage,
  type StreamChunk,
  type ThreadInfo,
  type WebhookOptions,
} from 'chat';
import { streamNatively } from './native-stream.ts';
import { assertTrustedServiceUrl, attachmentUrlProblem, type ServiceUrlTrust } from './service-url.ts';
import { baseConversationId, decodeTeamsThreadId, encodeTeamsThreadId, teamsConversationType, type TeamsThreadId } from './thread-id.ts';
import { CHAT_VALUE } from '../../table.ts';

export const BOT_SCOPE = 'https://api.botframework.com/.default';
const GRAPH_SCOPE = 'https://graph.microsoft.com/.default';

export interface TeamsConnectorConfig {
  appId: string;
  /** shared/platforms/teams/token.ts's cached client-credentials tokens for this app. */
  tokens(scope: string): Promise<string>;
  logger: Logger;
  userName?: string;
  fetch?: typeof fetch;
  /** Microsoft Graph's base URL (tests); Graph calls go only to Microsoft's hosts. */
  graphUrl?: string;
  /** Which serviceUrls the bot's token may go to (shared/platforms/teams/service-url.ts). */
  serviceUrls: ServiceUrlTrust;
  /**
   * Only the Teams webhook's adapter receives activities: adapter.ts passes receive.ts here, so the
   * other functions' bundles do not carry it.
   */
  receive?(adapter: Adapter, chat: ChatInstance, request: Request, options?: WebhookOptions): Promise<Response>;
}

type Activity = Parameters<typeof postTeamsMessage>[0];

/** The text, card and files of a message as the Connector takes them (files inline as data URIs, as the adapter sends them). */
async function activityOf(message: AdapterPostableMessage): Promise<Pick<Activity, 'markdownText' | 'adaptiveCard' | 'attachments'>> {
  const attachments = [];
  for (const file of extractFiles(message)) {
    const data = await toBuffer(file.data, { platform: 'teams', throwOnUnsupported: false });
    const contentType = file.mimeType || 'application/octet-stream';
    if (data) attachments.push({ contentType, contentUrl: bufferToDataUri(data, contentType), name: file.filename });
  }
  const card = extractCard(message);
  // The same Adaptive Card the full adapter sends (buttons submit {actionId, value}).
  if (card) return { adaptiveCard: cardToAdaptiveCard(card as Parameters<typeof cardToAdaptiveCard>[0]), attachments };
  const text =
    typeof message === 'string'
      ? message
      : 'raw' in message
        ? message.raw
        : 'markdown' in message
          ? message.markdown
          : 'ast' in message
            ? stringifyMarkdown(message.ast)
            : '';
  return { markdownText: text || undefined, attachments };
}

export class TeamsConnectorAdapter implements Adapter<TeamsThreadId, unknown> {
  readonly name = 'teams';
  readonly userName: string;
  readonly botUserId: string;
  private chat?: ChatInstance;
  private readonly logger: Logger;

  constructor(private readonly config: TeamsConnectorConfig) {
    this.userName = config.userName ?? 'agent';
    this.botUserId = `28:${config.appId}`;
    this.logger = config.logger;
  }

  /**
   * Connector options for a thread: where to, with which token, and a 429 turned into the Chat SDK's
   * rate-limit error. Refuses (before any token is fetched) a serviceUrl that is not the conversation's.
   */
  private async connector(threadId: string, scope = BOT_SCOPE) {
    await assertTrustedServiceUrl(this.config.serviceUrls, threadId);
    const target = decodeTeamsThreadId(threadId);
    const fetchFn = this.config.fetch ?? fetch;
    return {
      serviceUrl: target.serviceUrl,
      conversationId: target.conversationId,
      credentials: { accessToken: () => this.config.tokens(scope) },
      fetch: (async (url: string | URL | Request, init?: RequestInit) => {
        const response = await fetchFn(url, init);
        if (response.status === 429) throw new AdapterRateLimitError('teams', Number(response.headers.get('retry-after')) || undefined);
        return response;
      }) as typeof fetch,
    };
  }

  async initialize(chat: ChatInstance): Promise<void> {
    this.chat = chat;
  }

  async handleWebhook(request: Request, options?: WebhookOptions): Promise<Response> {
    const { receive } = this.config;
    if (!receive || !this.chat) return new Response('Teams activities are received by the Teams webhook function', { status: 404 });
    return receive(this, this.chat, request, options);
  }

  encodeThreadId(platformData: TeamsThreadId): string {
    return encodeTeamsThreadId(platformData);
  }

  decodeThreadId(threadId: string): TeamsThreadId {
    return decodeTeamsThreadId(threadId);
  }

  isDM(threadId: string): boolean {
    return teamsConversationType(decodeTeamsThreadId(threadId)) === 'personal';
  }

  channelIdFromThreadId(threadId: string): string {
    const target = decodeTeamsThreadId(threadId);
    return encodeTeamsThreadId({ ...target, conversationId: baseConversationId(target.conversationId) });
  }

  async postMessage(threadId: string, message: AdapterPostableMessage): Promise<RawMessage<unknown>> {
    const sent = await postTeamsMessage({ ...(await this.connector(threadId)), ...(await activityOf(message)) });
    return { id: sent.id, threadId, raw: sent.raw };
  }

  /** Only the user sees it (a targeted activity); in a personal chat, a plain message. */
  async postEphemeral(threadId: string, userId: string, message: AdapterPostableMessage): Promise<EphemeralMessage<unknown>> {
    if (this.isDM(threadId)) return { ...(await this.postMessage(threadId, message)), usedFallback: true };
    const target = decodeTeamsThreadId(threadId);
    const { markdownText, adaptiveCard, attachments } = await activityOf(message);
    const body = {
      ...buildTeamsMessageActivity({ markdownText, adaptiveCard, attachments }),
      recipient: { id: userId, name: userId, role: 'user', isTargeted: true },
    };
    const path = `v3/conversations/${encodeURIComponent(target.conversationId)}/activities?isTargetedActivity=true`;
    const sent = await callTeamsConnectorApi<{ id?: string }>({ ...(await this.connector(threadId)), method: 'POST', path, body });
    return { id: sent.body?.id ?? '', threadId, usedFallback: false, raw: body };
  }

  /** A post to a channel starts a new thread there (a chat is one thread: the post joins it). */
  async postChannelMessage(channelId: string, message: AdapterPostableMessage): Promise<RawMessage<unknown>> {
    return this.postMessage(this.channelIdFromThreadId(channelId), message);
  }

  async editMessage(threadId: string, messageId: string, message: AdapterPostableMessage): Promise<RawMessage<unknown>> {
    const activity = await activityOf(message);
    await updateTeamsMessage({ ...(await this.connector(threadId)), ...activity, messageId });
    return { id: messageId, threadId, raw: activity };
  }

  async deleteMessage(threadId: string, messageId: string): Promise<void> {
    await deleteTeamsMessage({ ...(await this.connector(threadId)), messageId });
  }

  async startTyping(threadId: string): Promise<void> {
    await sendTeamsTyping(await this.connector(threadId));
  }

  /**
   * Personal chats stream natively (Teams' streaming protocol, within its time limit); elsewhere
   * there is no `stream`, so the Chat SDK posts and edits (paced by shared/platforms/teams/pacing.ts).
   */
  async stream(threadId: string, textStream: AsyncIterable<string | StreamChunk>): Promise<RawMessage<unknown> | null> {
    const target = decodeTeamsThreadId(threadId);
    if (teamsConversationType(target) !== 'personal') return null;
    const options = await this.connector(threadId);
    const path = `v3/conversations/${encodeURIComponent(target.conversationId)}/activities`;
    const send = async (body: Record<string, unknown>) =>
      (await callTeamsConnectorApi<{ id?: string }>({ ...options, method: 'POST', path, body })).body?.id;
    const sent = await streamNatively({ textStream, send, logger: this.logger });
    return { id: sent.id, threadId, raw: { text: sent.text } };
  }

  /**
   * Downloads a file of a message in `threadId`: one Teams keeps behind its Connector with the bot's
   * token, only from the conversation's own Connector (the thread's trusted serviceUrl); any other
   * file as given, without the token. Without the thread no file gets the token.
   */
  rehydrateAttachment(attachment: Attachment, threadId?: string): Attachment {
    const url = attachment.fetchMetadata?.url ?? attachment.url;
    if (!url) return attachment;
    const botAuth = attachment.fetchMetadata?.auth === 'bot';
    const fetchData = async () => {
      if (!botAuth) return downloadAttachment(url, { adapter: 'teams' });
      const problem = threadId
        ? await attachmentUrlProblem(this.config.serviceUrls, threadId, url)
        : 'no thread to check its Connector against';
      if (problem) throw new NetworkError('teams', `Refusing to send the bot's token with a file download: ${problem}`);
      const response = await (this.config.fetch ?? fetch)(url, {
        headers: { authorization: `Bearer ${await this.config.tokens(BOT_SCOPE)}` },
        redirect: 'error',
      });
      if (!response.ok) throw new NetworkError('teams', `Failed to fetch authenticated file: ${response.status}`);
      return Buffer.from(await response.arrayBuffer());
    };
    return { ...attachment, fetchData };
  }

  /** A thread's messages, read through Microsoft Graph (permissions an admin grants the app). */
  async fetchMessages(threadId: string, options: FetchOptions = {}): Promise<FetchResult<unknown>> {
    const target = decodeTeamsThreadId(threadId);
    const rootId = /;messageid=(\d+)/.exec(target.conversationId)?.[1];
    return this.readGraph(threadId, target, rootId, options);
  }

  async fetchChannelMessages(channelId: string, options: FetchOptions = {}): Promise<FetchResult<unknown>> {
    return this.readGraph(channelId, decodeTeamsThreadId(channelId), undefined, options);
  }

  private async readGraph(threadId: string, target: TeamsThreadId, rootId: string | undefined, options: FetchOptions) {
    const base = baseConversationId(target.conversationId);
    // The Teams webhook's adapter keeps where Graph finds the conversation (team and channel, or a personal chat's id).
    const cached = await this.chat?.getState().get<string>(CHAT_VALUE.teamsChannelContext(base));
    const { teamId, channelId, graphChatId } = (cached ? JSON.parse(cached) : {}) as Record<string, string | undefined>;
    const graph = {
      credentials: { accessToken: () => this.config.tokens(GRAPH_SCOPE) },
      fetch: this.config.fetch,
      graphUrl: this.config.graphUrl,
      limit: Math.min(options.limit ?? 50, 50),
    };
    let page: {
      cursor?: string;
      items: { id: string; text: string; createdAt?: string; from?: { id?: string; displayName?: string }; raw: unknown }[];
    };
    if (options.cursor) {
      const raw = await paginateTeamsGraph<{ value?: []; '@odata.nextLink'?: string }>(options.cursor, graph);
      page = { cursor: raw['@odata.nextLink'], items: (raw.value ?? []).map(toGraphMessage) };
    } else if (teamId && channelId) {
      const where = { ...graph, teamId, channelId };
      page = await (rootId ? listTeamsMessageReplies({ ...where, messageId: rootId }) : listTeamsChannelMessages(where));
    } else {
      page = await listTeamsChatMessages({ ...graph, chatId: graphChatId ?? base });
    }
    const messages = page.items.map((item) => {
      const name = item.from?.displayName ?? 'unknown';
      return new Message({
        id: item.id,
        threadId,
        text: item.text,
        formatted: { type: 'root', children: [] },
        raw: item.raw,
        author: { userId: item.from?.id ?? 'unknown', userName: name, fullName: name, isBot: false, isMe: false },
        metadata: { dateSent: new Date(item.createdAt ?? 0), edited: false },
        attachments: [],
      });
    });
    return { messages, nextCursor: page.cursor };
  }

  async fetchThread(threadId: string): Promise<ThreadInfo> {
    return { id: threadId, channelId: this.channelIdFromThreadId(threadId), isDM: this.isDM(threadId), metadata: {} };
  }

  parseMessage(): Message<unknown> {
    throw new NotImplementedError('Teams activities are parsed by the Teams webhook function', 'parseMessage');
  }

  renderFormatted(content: FormattedContent): string {
    return stringifyMarkdown(content);
  }

  async addReaction(): Promise<void> {
    throw new NotImplementedError('reactions are not sent to Teams', 'addReaction');
  }

  async removeReaction(): Promise<void> {
    throw new NotImplementedError('reactions are not sent to Teams', 'removeReaction');
  }
}
