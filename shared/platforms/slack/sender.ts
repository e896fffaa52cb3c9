// Slack for the functions that only send (the agent's steps): a Chat SDK adapter over the Slack
// package's SDK-free parts (its fetch-based Web API calls, Block Kit cards and mrkdwn conversion),
// without the full adapter and the @slack/web-api client under it (axios and its kin), which cost
// the agent-step bundle about 280 KB. It sends what the full adapter sends where these functions
// use it: the full adapter there has no Chat instance (only a webhook initializes one), so it
// resolves no @name mentions and does not know its own bot id; neither does this. Unlike it, this one
// keeps the names it looked up for a while (NAME_CACHE_MS): without a Chat instance the full adapter
// asked users.info once per message read (a thread of 500 messages, 500 calls, on every run's
// backfill). The Slack webhook keeps the full adapter, which receives.
import {
  AdapterRateLimitError,
  downloadAttachment,
  extractCard,
  extractFiles,
  NetworkError,
  replaceBareMentions,
  toBuffer,
  ValidationError,
  type AttachmentTransport,
} from '@chat-adapter/shared';
import { callSlackApi, SlackApiError, uploadSlackFiles, type SlackApiResponse } from '@chat-adapter/slack/api';
import { cardToBlockKit, cardToFallbackText } from '@chat-adapter/slack/blocks';
import { slackMrkdwnToMarkdown } from '@chat-adapter/slack/format';
import {
  convertEmojiPlaceholders,
  Message,
  NotImplementedError,
  parseMarkdown,
  stringifyMarkdown,
  toPlainText,
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
  type StreamOptions,
  type ThreadInfo,
} from 'chat';
import { streamToSlack } from './sender-stream.ts';
import { recentlyUsed } from '../../support/recent.ts';

/** Hosts that may receive the bot token with a file download (besides the configured API's own). */
const FILE_ORIGINS = new Set([
  'https://files.slack.com',
  'https://files.slack-gov.com',
  'https://slack-files.com',
  'https://slack-files-gov.com',
  'https://slack.com',
  'https://slack-gov.com',
]);
/** How long a person's or a channel's name, once looked up, is used before it is asked again. */
export const NAME_CACHE_MS = 10 * 60_000;
/** Names kept per container (the most recently used). */
const NAMES_KEPT = 1000;
/** A rate-limited call is sent again after Slack's Retry-After, at most this many times. */
const RATE_LIMIT_RETRIES = 5;
/** A call that failed (no answer, or a 5xx) is sent again this many times, after 1, 2 and 4 seconds. */
const FAILURE_RETRIES = 3;
const FAILURE_BACKOFF_MS = 1000;
const USER_ID = /^[A-Z0-9_]+$/;

export interface SlackThreadId {
  channel: string;
  threadTs: string;
}

export interface SlackSenderConfig {
  botToken: string;
  /** The Web API's base URL (the local stand-in); slack.com's when absent. */
  apiUrl?: string;
  logger: Logger;
  userName?: string;
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<unknown>;
  /** Epoch milliseconds (names are kept NAME_CACHE_MS). */
  now?: () => number;
  /** How file downloads reach the network (the Chat SDK's guarded HTTPS transport when absent). */
  fileTransport?: AttachmentTransport;
}

/** A Slack event message as conversations.replies and conversations.history list it (the fields read here). */
interface SlackEventMessage {
  ts?: string;
  text?: string;
  user?: string;
  username?: string;
  bot_id?: string;
  bot_profile?: { user_id?: string };
  edited?: { ts: string };
  files?: SlackFile[];
  team?: string;
  team_id?: string;
}

interface SlackFile {
  url_private?: string;
  name?: string;
  mimetype?: string;
  size?: number;
  original_w?: number;
  original_h?: number;
}

/** Who a user is, as users.info tells. */
interface SlackUser {
  displayName: string;
  realName: string;
  email?: string;
}

/** Slack's `@name` placeholders and emoji as the full adapter writes them into text it sends. */
const slackText = (text: string) =>
  convertEmojiPlaceholders(
    replaceBareMentions(text, (_mention, name) => `<@${name}>`),
    'slack',
  );

/** A message's text fields: plain text as `text`, markdown as `markdown_text` (Slack renders it). */
function textFields(message: AdapterPostableMessage): Record<string, string> {
  if (typeof message === 'string') return { text: slackText(message) };
  if ('raw' in message) return { text: slackText(message.raw) };
  if ('markdown' in message) return { markdown_text: slackText(message.markdown) };
  if ('ast' in message) return { markdown_text: slackText(stringifyMarkdown(message.ast)) };
  return { text: '' };
}

function hasText(message: AdapterPostableMessage): boolean {
  if (typeof message === 'string') return message !== '';
  return Boolean(('raw' in message && message.raw) || ('markdown' in message && message.markdown) || ('ast' in message && message.ast));
}

const slackDate = (ts: string | undefined) => new Date(Number.parseFloat(ts || '0') * 1000);

export class SlackSenderAdapter implements Adapter<SlackThreadId, unknown> {
  readonly name = 'slack';
  readonly userName: string;
  private readonly logger: Logger;
  private readonly apiUrl: string | undefined;
  /** Set once Slack has refused native streaming for this app: later replies are posted and edited. */
  private nativeStreamingBroken = false;
  /** Names looked up (users.info, conversations.info) by `user:` or `channel:` and id; a failed lookup is not kept. */
  private readonly names = recentlyUsed<{ at: number; name: Promise<SlackUser | undefined> }>(NAMES_KEPT);

  constructor(private readonly config: SlackSenderConfig) {
    this.userName = config.userName || 'bot';
    this.logger = config.logger;
    this.apiUrl = config.apiUrl;
  }

  /** One Web API call; a 429 waits Slack's Retry-After and is sent again. A reply without `ok` throws. */
  async call<T extends SlackApiResponse = SlackApiResponse>(method: string, body: Record<string, unknown>): Promise<T> {
    const request = this.config.fetch ?? fetch;
    const wait = this.config.sleep ?? ((ms: number) => new Promise((resolve) => setTimeout(resolve, ms)));
    // As @slack/web-api under the full adapter: a 429 waits Slack's Retry-After; a failed request or a
    // 5xx is sent again after a growing pause (that client kept trying for half an hour; a step's
    // Lambda would be cut off long before, so a few tries here).
    const retrying: typeof fetch = async (input, init) => {
      for (let attempt = 1, failures = 0; ; attempt++) {
        let response: Response;
        try {
          response = await request(input, init);
        } catch (error) {
          if (++failures > FAILURE_RETRIES) throw error;
          this.logger.warn('a Slack call failed: sending it again', { method, error });
          await wait(FAILURE_BACKOFF_MS * 2 ** (failures - 1));
          continue;
        }
        if (response.status >= 500) {
          if (++failures > FAILURE_RETRIES)
            throw new SlackApiError(`Slack ${method} returned HTTP ${response.status}`, { method, status: response.status });
          this.logger.warn('Slack answered a call with a server error: sending it again', { method, status: response.status });
          await wait(FAILURE_BACKOFF_MS * 2 ** (failures - 1));
          continue;
        }
        if (response.status !== 429 || attempt > RATE_LIMIT_RETRIES) return response;
        const seconds = Number(response.headers.get('retry-after')) || 1;
        this.logger.warn('Slack rate-limited a call: waiting before sending it again', { method, seconds });
        await wait(seconds * 1000);
      }
    };
    let result: T;
    try {
      result = await callSlackApi<T>(method, body, { token: this.config.botToken, apiUrl: this.apiUrl, fetch: retrying });
    } catch (error) {
      if (error instanceof SlackApiError && error.status === 429) throw new AdapterRateLimitError('slack');
      throw error;
    }
    if (result.ok !== true) {
      if (result.error === 'ratelimited') throw new AdapterRateLimitError('slack');
      throw new SlackApiError(`Slack ${method} failed: ${result.error ?? 'unknown_error'}`, { method, response: result });
    }
    return result;
  }

  async initialize(chat: ChatInstance): Promise<void> {
    void chat;
  }

  async handleWebhook(): Promise<Response> {
    return new Response('Slack events are received by the Slack webhook function', { status: 404 });
  }

  encodeThreadId({ channel, threadTs }: SlackThreadId): string {
    return `slack:${channel}:${threadTs}`;
  }

  decodeThreadId(threadId: string): SlackThreadId {
    const parts = threadId.split(':');
    if (parts.length < 2 || parts.length > 3 || parts[0] !== 'slack')
      throw new ValidationError('slack', `Invalid Slack thread ID: ${threadId}`);
    return { channel: parts[1]!, threadTs: parts[2] ?? '' };
  }

  isDM(threadId: string): boolean {
    return this.decodeThreadId(threadId).channel.startsWith('D');
  }

  channelIdFromThreadId(threadId: string): string {
    return `slack:${this.decodeThreadId(threadId).channel}`;
  }

  async postMessage(threadId: string, message: AdapterPostableMessage): Promise<RawMessage<unknown>> {
    const { channel, threadTs } = this.decodeThreadId(threadId);
    const thread_ts = threadTs || undefined;
    const files = extractFiles(message);
    let uploadedFileIds: string[] | undefined;
    if (files.length > 0) {
      uploadedFileIds = await this.upload(files, channel, thread_ts);
      if (!hasText(message) && !extractCard(message)) return { id: `file-${Date.now()}`, threadId, raw: { files, uploadedFileIds } };
    }
    const sent = await this.call('chat.postMessage', {
      channel,
      thread_ts,
      ...this.content(message),
      unfurl_links: false,
      unfurl_media: false,
    });
    return { id: String(sent.ts), threadId, raw: uploadedFileIds === undefined ? sent : { ...sent, uploadedFileIds } };
  }

  /** A post to a channel opens a thread there: the post's own ts names it. */
  async postChannelMessage(channelId: string, message: AdapterPostableMessage): Promise<RawMessage<unknown>> {
    const channel = channelId.split(':')[1];
    if (!channel) throw new ValidationError('slack', `Invalid Slack channel ID: ${channelId}`);
    const sent = await this.postMessage(`slack:${channel}:`, message);
    const ts = (sent.raw as { ts?: unknown } | null)?.ts;
    return typeof ts === 'string' ? { ...sent, threadId: this.encodeThreadId({ channel, threadTs: ts }) } : sent;
  }

  async postEphemeral(threadId: string, userId: string, message: AdapterPostableMessage): Promise<EphemeralMessage<unknown>> {
    const { channel, threadTs } = this.decodeThreadId(threadId);
    const sent = await this.call('chat.postEphemeral', {
      channel,
      thread_ts: threadTs || undefined,
      user: userId,
      ...this.content(message),
    });
    return { id: typeof sent.message_ts === 'string' ? sent.message_ts : '', threadId, usedFallback: false, raw: sent };
  }

  async editMessage(threadId: string, messageId: string, message: AdapterPostableMessage): Promise<RawMessage<unknown>> {
    if (messageId.startsWith('ephemeral:')) throw new ValidationError('slack', 'An ephemeral Slack message cannot be edited from here');
    const { channel } = this.decodeThreadId(threadId);
    const sent = await this.call('chat.update', { channel, ts: messageId, ...this.content(message) });
    return { id: String(sent.ts), threadId, raw: sent };
  }

  async deleteMessage(threadId: string, messageId: string): Promise<void> {
    if (messageId.startsWith('ephemeral:')) throw new ValidationError('slack', 'An ephemeral Slack message cannot be deleted from here');
    await this.call('chat.delete', { channel: this.decodeThreadId(threadId).channel, ts: messageId });
  }

  /** The status line under the thread (assistant.threads.setStatus); a failure is logged, not thrown. */
  async startTyping(threadId: string, status?: string): Promise<void> {
    const { channel, threadTs } = this.decodeThreadId(threadId);
    if (!threadTs) return;
    try {
      await this.call('assistant.threads.setStatus', {
        channel_id: channel,
        thread_ts: threadTs,
        status: status ?? 'Typing...',
        loading_messages: [status ?? 'Typing...'],
      });
    } catch (error) {
      this.logger.warn('Slack API: assistant.threads.setStatus failed', { channel, threadTs, error });
    }
  }

  /**
   * Native streaming (chat.startStream / appendStream / stopStream) in a thread with a known
   * recipient or in a DM; null elsewhere, and the Chat SDK then posts and edits.
   */
  async stream(
    threadId: string,
    textStream: AsyncIterable<string | StreamChunk>,
    options?: StreamOptions,
  ): Promise<RawMessage<unknown> | null> {
    const { channel, threadTs } = this.decodeThreadId(threadId);
    if (!threadTs) return null;
    if (!(channel.startsWith('D') || (options?.recipientUserId && options.recipientTeamId))) return null;
    if (this.nativeStreamingBroken) return null;
    const ended = await streamToSlack({
      call: (method, body) => this.call(method, body),
      post: (message) => this.postMessage(threadId, message),
      edit: (id, message) => this.editMessage(threadId, id, message),
      target: {
        channel,
        thread_ts: threadTs,
        ...(options?.recipientUserId && { recipient_user_id: options.recipientUserId }),
        ...(options?.recipientTeamId && { recipient_team_id: options.recipientTeamId }),
      },
      textStream,
      signal: options?.signal,
      updateIntervalMs: options?.updateIntervalMs ?? 1000,
      logger: this.logger,
      onUnsupported: () => (this.nativeStreamingBroken = true),
    });
    return ended && { id: ended.id, threadId, raw: ended.raw };
  }

  rehydrateAttachment(attachment: Attachment): Attachment {
    const url = attachment.fetchMetadata?.url ?? attachment.url;
    if (!url) return attachment;
    return { ...attachment, fetchData: () => this.download(url) };
  }

  async fetchMessages(threadId: string, options: FetchOptions = {}): Promise<FetchResult<unknown>> {
    const { channel, threadTs } = this.decodeThreadId(threadId);
    const limit = options.limit || 100;
    if ((options.direction ?? 'backward') === 'forward') {
      const page = await this.call<{ ok: boolean; messages?: SlackEventMessage[]; response_metadata?: { next_cursor?: string } }>(
        'conversations.replies',
        { channel, ts: threadTs, limit, cursor: options.cursor },
      );
      const messages = await Promise.all((page.messages ?? []).map((event) => this.message(event, threadId)));
      return { messages, nextCursor: page.response_metadata?.next_cursor || undefined };
    }
    // Slack lists replies oldest first: the newest `limit` of a larger page, and older ones before the oldest of those.
    const page = await this.call<{ ok: boolean; messages?: SlackEventMessage[]; has_more?: boolean }>('conversations.replies', {
      channel,
      ts: threadTs,
      limit: Math.min(1000, Math.max(limit * 2, 200)),
      latest: options.cursor || undefined,
      inclusive: false,
    });
    const listed = page.messages ?? [];
    const from = Math.max(0, listed.length - limit);
    const selected = listed.slice(from);
    const messages = await Promise.all(selected.map((event) => this.message(event, threadId)));
    const nextCursor = from > 0 || page.has_more ? selected[0]?.ts : undefined;
    return { messages, nextCursor: nextCursor || undefined };
  }

  async fetchChannelMessages(channelId: string, options: FetchOptions = {}): Promise<FetchResult<unknown>> {
    const channel = channelId.split(':')[1];
    if (!channel) throw new ValidationError('slack', `Invalid Slack channel ID: ${channelId}`);
    const forward = options.direction === 'forward';
    const page = await this.call<{ ok: boolean; messages?: SlackEventMessage[]; has_more?: boolean }>('conversations.history', {
      channel,
      limit: options.limit || 100,
      ...(forward ? { oldest: options.cursor } : { latest: options.cursor }),
      inclusive: options.cursor ? false : undefined,
    });
    // conversations.history lists newest first; pages are given oldest first.
    const listed = [...(page.messages ?? [])].reverse();
    const messages = await Promise.all(listed.map((event) => this.message(event, `slack:${channel}:${event.ts ?? ''}`)));
    const edge = forward ? listed.at(-1) : listed[0];
    return { messages, nextCursor: page.has_more && edge?.ts ? edge.ts : undefined };
  }

  async fetchThread(threadId: string): Promise<ThreadInfo> {
    const { channel } = this.decodeThreadId(threadId);
    return { id: threadId, channelId: channel, isDM: channel.startsWith('D'), metadata: {} };
  }

  parseMessage(): Message<unknown> {
    throw new NotImplementedError('Slack events are parsed by the Slack webhook function', 'parseMessage');
  }

  renderFormatted(content: FormattedContent): string {
    return stringifyMarkdown(content);
  }

  async addReaction(): Promise<void> {
    throw new NotImplementedError('reactions are sent by the Slack webhook function', 'addReaction');
  }

  async removeReaction(): Promise<void> {
    throw new NotImplementedError('reactions are sent by the Slack webhook function', 'removeReaction');
  }

  /** A card as Block Kit with its fallback text; otherwise the text fields. */
  private content(message: AdapterPostableMessage): Record<string, unknown> {
    const card = extractCard(message);
    if (!card) return textFields(message);
    return { text: cardToFallbackText(card as never), blocks: cardToBlockKit(card as never) };
  }

  private async upload(files: ReturnType<typeof extractFiles>, channel: string, threadTs: string | undefined): Promise<string[]> {
    const uploads = [];
    for (const file of files) {
      const data = await toBuffer(file.data, { platform: 'slack' }).catch((error: unknown) => {
        this.logger.error('Failed to convert file to buffer', { filename: file.filename, error });
        return null;
      });
      if (data) uploads.push({ data, filename: file.filename });
    }
    if (uploads.length === 0) return [];
    const uploaded = await uploadSlackFiles(uploads, {
      token: this.config.botToken,
      apiUrl: this.apiUrl,
      fetch: this.config.fetch,
      channelId: channel,
      threadTs,
    });
    return uploaded.fileIds;
  }

  /** A file's bytes; the bot token goes only to Slack's file hosts (and the configured API's), on every hop. */
  private async download(url: string): Promise<Buffer> {
    const token = this.config.botToken;
    const trusted = (href: string) => {
      try {
        const origin = new URL(href).origin;
        return FILE_ORIGINS.has(origin) || (this.apiUrl !== undefined && origin === new URL(this.apiUrl).origin);
      } catch {
        return false;
      }
    };
    try {
      return await downloadAttachment(url, {
        adapter: 'slack',
        transport: this.config.fileTransport,
        headers: (target) => (trusted(target.href) ? { authorization: `Bearer ${token}` } : undefined),
        onResponse: (response) => {
          if ((response.headers['content-type'] ?? '').includes('text/html')) {
            throw new NetworkError(
              'slack',
              `Failed to download file from Slack: received HTML login page instead of file data. Ensure your Slack app has the "files:read" OAuth scope. URL: ${url}`,
            );
          }
        },
      });
    } catch (error) {
      if (error instanceof NetworkError) throw error;
      throw new NetworkError('slack', 'Failed to fetch Slack file', error instanceof Error ? error : undefined);
    }
  }

  private user(userId: string): Promise<SlackUser | undefined> {
    return this.remembered(`user:${userId}`, () => this.lookUpUser(userId));
  }

  /** A name looked up within NAME_CACHE_MS, or `lookUp`'s (concurrent readers share one call). */
  private remembered(key: string, lookUp: () => Promise<SlackUser | undefined>): Promise<SlackUser | undefined> {
    const now = (this.config.now ?? Date.now)();
    const kept = this.names.get(key);
    if (kept && now - kept.at < NAME_CACHE_MS) return kept.name;
    const name = lookUp();
    this.names.set(key, { at: now, name });
    void name.then((found) => found === undefined && this.names.get(key)?.name === name && this.names.delete(key));
    return name;
  }

  private async lookUpUser(userId: string): Promise<SlackUser | undefined> {
    try {
      const { user } = await this.call<{
        ok: boolean;
        user?: { name?: string; real_name?: string; profile?: { display_name?: string; real_name?: string; email?: string } };
      }>('users.info', { user: userId });
      const displayName = user?.profile?.display_name || user?.profile?.real_name || user?.real_name || user?.name || userId;
      return { displayName, realName: user?.real_name || user?.profile?.real_name || displayName, email: user?.profile?.email };
    } catch (error) {
      this.logger.warn('Could not fetch user info', { userId, error });
      return undefined;
    }
  }

  private async channelName(channelId: string): Promise<string> {
    const found = await this.remembered(`channel:${channelId}`, async () => {
      try {
        const { channel } = await this.call<{ ok: boolean; channel?: { name?: string } }>('conversations.info', { channel: channelId });
        const name = channel?.name || channelId;
        return { displayName: name, realName: name };
      } catch (error) {
        this.logger.warn('Could not fetch channel info', { channelId, error });
        return undefined;
      }
    });
    return found?.displayName ?? channelId;
  }

  /** `<@U…>` and `<#C…>` in a message's text with the names they stand for, which the markdown conversion then shows. */
  private async withMentionNames(text: string): Promise<string> {
    const users = new Set<string>();
    const channels = new Set<string>();
    for (const [, kind, id, label] of text.matchAll(/<([@#])([^|>]+)(\|[^>]*)?>/g)) {
      if (!USER_ID.test(id!)) continue;
      if (kind === '@') users.add(id!);
      else if (label === undefined) channels.add(id!);
    }
    if (users.size === 0 && channels.size === 0) return text;
    const [userNames, channelNames] = await Promise.all([
      Promise.all([...users].map(async (id) => [id, (await this.user(id))?.displayName ?? id] as const)),
      Promise.all([...channels].map(async (id) => [id, await this.channelName(id)] as const)),
    ]);
    const names = { '@': new Map(userNames), '#': new Map(channelNames) };
    return text.replace(/<([@#])([^|>]+)(\|[^>]*)?>/g, (whole, kind: '@' | '#', id: string, label?: string) => {
      if (kind === '#' && label !== undefined) return whole;
      const name = names[kind].get(id);
      return name === undefined ? whole : `<${kind}${id}|${name}>`;
    });
  }

  private async message(event: SlackEventMessage, threadId: string): Promise<Message<unknown>> {
    let userName = event.username || 'unknown';
    let fullName = userName;
    let email: string | undefined;
    // The author and the people the text mentions, looked up at once.
    const [author, text] = await Promise.all([
      event.user && !event.username ? this.user(event.user) : undefined,
      this.withMentionNames(event.text || ''),
    ]);
    if (event.user && !event.username) {
      userName = author?.displayName ?? event.user;
      fullName = author?.realName ?? userName;
      email = author?.email;
    }
    const formatted = parseMarkdown(slackMrkdwnToMarkdown(text));
    const teamId = event.team_id ?? event.team;
    return new Message({
      id: event.ts || '',
      threadId,
      text: toPlainText(formatted),
      formatted,
      raw: event,
      author: {
        userId: event.user || event.bot_profile?.user_id || event.bot_id || 'unknown',
        userName,
        fullName,
        email,
        isBot: Boolean(event.bot_id),
        isSystem: event.user === 'USLACK',
        isMe: false,
      },
      metadata: {
        dateSent: slackDate(event.ts),
        edited: Boolean(event.edited),
        editedAt: event.edited ? slackDate(event.edited.ts) : undefined,
      },
      attachments: (event.files ?? []).map((file) => this.attachment(file, teamId)),
      links: [],
    });
  }

  private attachment(file: SlackFile, teamId: string | undefined): Attachment {
    const url = file.url_private;
    const kind = file.mimetype?.split('/')[0];
    const fetchMetadata = { ...(url && { url }), ...(teamId && { teamId }) };
    return {
      type: kind === 'image' || kind === 'video' || kind === 'audio' ? kind : 'file',
      url,
      name: file.name,
      mimeType: file.mimetype,
      size: file.size,
      width: file.original_w,
      height: file.original_h,
      fetchMetadata: Object.keys(fetchMetadata).length > 0 ? fetchMetadata : undefined,
      fetchData: url ? () => this.download(url) : undefined,
    };
  }
}
