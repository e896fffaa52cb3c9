// A local stand-in for Slack: the subset of the Web API that the Chat SDK Slack adapter
// (@chat-adapter/slack 4.41.1, through @slack/web-api) calls on a bot's normal paths, plus an
// Events API source that delivers signed `event_callback` POSTs shaped like the recorded payloads
// in test/fixtures/chat-sdk-replay/. Point the adapter at it with `SLACK_API_URL` (or the
// adapter's `apiUrl` option) set to `apiUrl`; @slack/web-api appends the method name to it and
// adds the trailing slash itself when missing.
//
// Everything lives in memory. `GET /` is a read-only page that shows the channels and threads
// (refreshing every second); `GET /_local/messages` is the same data as JSON, and
// `POST /_local/post` lets another process (the chat CLI) post as a user.
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

// ---------------------------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------------------------

export interface StreamAppend {
  method: string;
  /** The markdown text this call added to the message. */
  text: string;
  /** The raw chunks sent with the call (markdown_text, task_update, plan_update...). */
  chunks: unknown[];
  at: number;
}

export interface StoredMessage {
  channel: string;
  ts: string;
  thread_ts?: string;
  parent_user_id?: string;
  user: string;
  bot_id?: string;
  app_id?: string;
  team: string;
  text: string;
  blocks?: unknown[];
  attachments?: unknown[];
  files?: Record<string, unknown>[];
  client_msg_id?: string;
  subtype?: string;
  edited?: { user: string; ts: string };
  reactions?: { name: string; users: string[]; count: number }[];
  bot_profile?: Record<string, unknown>;
  /** Local bookkeeping, stripped from Web API responses. */
  local: {
    createdAt: number;
    /** Who created it: 'user' or the Web API method. */
    via: string;
    /** Every version of the text, the first being the original (chat.update adds one each). */
    versions: { text: string; at: number; method: string }[];
    /** Set for messages created by chat.startStream. */
    stream?: { state: 'streaming' | 'stopped'; appends: StreamAppend[] };
    deleted?: boolean;
  };
}

export interface ApiCall {
  method: string;
  args: Record<string, unknown>;
  at: number;
  status: number;
  ok: boolean;
  error?: string;
}

export interface Delivery {
  url: string;
  eventId: string;
  type: string;
  status: number | null;
  ms: number;
  error?: string;
  payload: Record<string, unknown>;
}

export interface RateLimit {
  /** How many calls of the method are allowed per window. */
  limit: number;
  windowMs: number;
  /** Retry-After sent with the 429; defaults to the time until the window frees a slot. */
  retryAfterSeconds?: number;
}

export interface StoredFile {
  id: string;
  name: string;
  title: string;
  mimetype: string;
  length: number;
  bytes?: Buffer;
  created: number;
}

export interface SlackUser {
  id: string;
  name: string;
  real_name: string;
  is_bot: boolean;
}

export interface PostUserMessageInput {
  channel?: string;
  text: string;
  threadTs?: string;
  user?: string;
  /** Which events to deliver; by default what Slack sends an app subscribed to app_mention,
   * message.channels, message.groups and message.im. */
  events?: ('message' | 'app_mention')[];
  /** Files the user attaches (as Slack shares them: url_private, downloadable with the bot token). */
  files?: { name: string; content: Buffer | string; mimetype?: string }[];
}

export interface PostUserMessageResult {
  ts: string;
  channel: string;
  /** The thread the message belongs to (its own ts when it starts one). */
  threadTs: string;
  /** HTTP status of the delivery (the first failing one if any failed); null when no events URL
   * is set or the request never got a response. */
  status: number | null;
  deliveries: Delivery[];
}

export interface SlackStandInOptions {
  port?: number;
  host?: string;
  signingSecret: string;
  botToken: string;
  botUserId?: string;
  botId?: string;
  botName?: string;
  eventsUrl?: string;
  teamId?: string;
  appId?: string;
  /** Per-method rate limits, e.g. { 'chat.update': { limit: 1, windowMs: 1000 } }. Off by default. */
  rateLimits?: Record<string, RateLimit>;
}

export const DEFAULT_CHANNEL = 'C0LOCAL';
export const DEFAULT_USER = 'U0LOCALUSER';

type Args = Record<string, unknown>;
type Result = Record<string, unknown>;

// ---------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------

/** Slack's v0 request signature: HMAC-SHA256 of `v0:{timestamp}:{body}` with the signing secret. */
export function signSlackRequest(body: string, secret: string, timestamp: number = Math.floor(Date.now() / 1000)): Record<string, string> {
  const digest = createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex');
  return { 'X-Slack-Signature': `v0=${digest}`, 'X-Slack-Request-Timestamp': String(timestamp) };
}

let lastMicros = 0;
/** Slack-style message timestamps ("1767224888.280449"), strictly increasing. */
function nextTs(): string {
  lastMicros = Math.max(Date.now() * 1000 + Math.floor(Math.random() * 1000), lastMicros + 1);
  return `${Math.floor(lastMicros / 1e6)}.${String(lastMicros % 1e6).padStart(6, '0')}`;
}

function randomId(prefix: string, length = 10): string {
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZ0123456789';
  const bytes = randomBytes(length);
  return prefix + Array.from(bytes, (b) => alphabet[b % alphabet.length]).join('');
}

const str = (args: Args, key: string): string | undefined => {
  const value = args[key];
  return typeof value === 'string' && value !== '' ? value : typeof value === 'number' ? String(value) : undefined;
};
const num = (args: Args, key: string, fallback: number): number => {
  const n = Number(args[key]);
  return Number.isFinite(n) && args[key] !== undefined && args[key] !== '' ? n : fallback;
};
const bool = (args: Args, key: string): boolean => args[key] === true || args[key] === 'true' || args[key] === '1' || args[key] === 1;
const arr = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const fail = (error: string, extra: Result = {}): Result => ({ ok: false, error, ...extra });

const encodeCursor = (ts: string): string => Buffer.from(`next_ts:${ts}`).toString('base64');
const decodeCursor = (cursor: string | undefined): string | undefined => {
  if (!cursor) return undefined;
  const decoded = Buffer.from(cursor, 'base64').toString('utf8');
  return decoded.startsWith('next_ts:') ? decoded.slice('next_ts:'.length) : undefined;
};

const channelType = (channel: string): string => (channel.startsWith('D') ? 'im' : channel.startsWith('G') ? 'group' : 'channel');

/** Form fields @slack/web-api JSON-encodes (nested objects and arrays). */
const JSON_FIELDS = ['blocks', 'attachments', 'chunks', 'files', 'prompts', 'loading_messages', 'view', 'metadata'];

function parseMultipart(body: Buffer, contentType: string): { name: string; data: Buffer }[] {
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
      const headers = part.subarray(0, headerEnd).toString('utf8');
      const name = /name="([^"]*)"/.exec(headers)?.[1] ?? '';
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
    if (JSON_FIELDS.includes(key)) {
      try {
        args[key] = JSON.parse(value);
        continue;
      } catch {
        // Not JSON: keep the string, as Slack would reject it anyway.
      }
    }
    args[key] = value;
  }
  return args;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', ...headers });
  res.end(JSON.stringify(body));
}

/** Text from the markdown_text chunks of a streaming call. */
function chunkText(chunks: unknown[]): string {
  return chunks
    .map((c) => (c && typeof c === 'object' && (c as Args).type === 'markdown_text' ? String((c as Args).text ?? '') : ''))
    .join('');
}

/** rich_text blocks like the Slack client sends with a user's message. */
function richTextBlocks(text: string): unknown[] {
  const elements: Record<string, unknown>[] = [];
  const pattern = /<([@#])([A-Z0-9]+)(?:\|[^>]*)?>|<(https?:\/\/[^>|]+)(?:\|([^>]*))?>/g;
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    if (match.index > last) elements.push({ type: 'text', text: text.slice(last, match.index) });
    if (match[1] === '@') elements.push({ type: 'user', user_id: match[2] });
    else if (match[1] === '#') elements.push({ type: 'channel', channel_id: match[2] });
    else elements.push({ type: 'link', url: match[3], ...(match[4] ? { text: match[4] } : {}) });
    last = match.index + match[0].length;
  }
  if (last < text.length) elements.push({ type: 'text', text: text.slice(last) });
  return [{ type: 'rich_text', block_id: randomId('', 5), elements: [{ type: 'rich_text_section', elements }] }];
}

const MIME_TYPES: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  txt: 'text/plain',
  md: 'text/markdown',
  json: 'application/json',
  csv: 'text/csv',
  pdf: 'application/pdf',
  html: 'text/html',
};

// ---------------------------------------------------------------------------------------------
// The stand-in
// ---------------------------------------------------------------------------------------------

export type SlackStandIn = Awaited<ReturnType<typeof startSlackStandIn>>;

export async function startSlackStandIn(options: SlackStandInOptions) {
  const teamId = options.teamId ?? 'T0LOCAL';
  const appId = options.appId ?? 'A0LOCALAPP';
  const botUserId = options.botUserId ?? 'U0LOCALBOT';
  const botId = options.botId ?? 'B0LOCALBOT';
  const botName = options.botName ?? 'bot';
  const verificationToken = 'localverificationtoken';
  let eventsUrl = options.eventsUrl;

  // --- state (plain data, inspectable by tests) ---
  const channels = new Map<string, StoredMessage[]>();
  const channelNames = new Map<string, string>([[DEFAULT_CHANNEL, 'local']]);
  const users = new Map<string, SlackUser>([
    [botUserId, { id: botUserId, name: botName, real_name: botName, is_bot: true }],
    [DEFAULT_USER, { id: DEFAULT_USER, name: 'local-user', real_name: 'Local User', is_bot: false }],
  ]);
  const calls: ApiCall[] = [];
  const deliveries: Delivery[] = [];
  const ephemeral: (StoredMessage & { visibleTo: string })[] = [];
  const statuses = new Map<string, string>(); // `${channel}:${thread_ts}` -> assistant status
  const assistantThreads = new Map<string, Args>(); // titles, suggested prompts, agent sessions
  const files = new Map<string, StoredFile>();
  const views = new Map<string, Args>();
  const scheduled = new Map<string, { channel: string; postAt: number; args: Args; timer: NodeJS.Timeout }>();
  const rateLimits: Record<string, RateLimit> = { ...options.rateLimits };
  const rateWindows = new Map<string, number[]>();
  const channelCreated = new Map<string, number>();

  const ensureChannel = (id: string | undefined): StoredMessage[] | undefined => {
    if (!id || !/^[CDG][A-Z0-9]{2,}$/.test(id)) return undefined;
    let list = channels.get(id);
    if (!list) {
      list = [];
      channels.set(id, list);
      channelCreated.set(id, Math.floor(Date.now() / 1000));
    }
    return list;
  };
  const findMessage = (channel: string | undefined, ts: string | undefined): StoredMessage | undefined =>
    channel && ts ? channels.get(channel)?.find((m) => m.ts === ts && !m.local.deleted) : undefined;
  const threadRoot = (channel: string, threadTs: string | undefined): string | undefined => {
    if (!threadTs) return undefined;
    const target = channels.get(channel)?.find((m) => m.ts === threadTs);
    return target?.thread_ts ?? threadTs; // a reply's ts means its parent's thread
  };
  const threadOf = (channel: string, threadTs: string): StoredMessage[] =>
    (channels.get(channel) ?? []).filter((m) => !m.local.deleted && (m.ts === threadTs || m.thread_ts === threadTs));
  const userOf = (m: StoredMessage) => users.get(m.user);

  const messages = {
    channels,
    get: findMessage,
    /** The thread's parent followed by its replies, in ts order. */
    thread: threadOf,
    all: (): StoredMessage[] => [...channels.values()].flat(),
  };

  /** A message in Slack's Web API shape (no local bookkeeping; thread summary on parents). */
  const toSlack = (m: StoredMessage): Result => {
    const { local: _local, channel, ...rest } = m;
    const out: Result = { type: 'message', ...rest };
    if (!m.thread_ts || m.thread_ts === m.ts) {
      const replies = threadOf(channel, m.ts).filter((r) => r.ts !== m.ts);
      if (replies.length > 0) {
        const replyUsers = [...new Set(replies.map((r) => r.user))];
        Object.assign(out, {
          thread_ts: m.ts,
          reply_count: replies.length,
          reply_users_count: replyUsers.length,
          latest_reply: replies.at(-1)?.ts,
          reply_users: replyUsers,
          is_locked: false,
          subscribed: false,
        });
      }
    }
    return out;
  };

  const botProfile = () => ({
    id: botId,
    app_id: appId,
    name: botName,
    icons: {},
    deleted: false,
    updated: 1767225600,
    team_id: teamId,
  });

  const storeMessage = (channel: string, fields: Partial<StoredMessage> & { text: string }, via: string): StoredMessage => {
    const list = ensureChannel(channel) ?? [];
    const ts = nextTs();
    const threadTs = threadRoot(channel, fields.thread_ts);
    const parent = threadTs ? list.find((m) => m.ts === threadTs) : undefined;
    const isBot = via !== 'user';
    const message: StoredMessage = {
      channel,
      ts,
      user: fields.user ?? botUserId,
      ...(isBot ? { bot_id: botId, app_id: appId } : {}),
      team: teamId,
      ...fields,
      thread_ts: threadTs,
      ...(threadTs ? { parent_user_id: parent?.user ?? fields.user ?? botUserId } : {}),
      ...(isBot ? { bot_profile: botProfile() } : {}),
      local: { createdAt: Date.now(), via, versions: [{ text: fields.text, at: Date.now(), method: via }] },
    };
    if (!threadTs) delete message.thread_ts;
    list.push(message);
    if (isBot && threadTs) statuses.delete(`${channel}:${threadTs}`); // Slack clears the status on reply
    return message;
  };

  /** The content fields of chat.postMessage / chat.update / chat.scheduleMessage. */
  const contentOf = (args: Args): { text: string; blocks?: unknown[]; attachments?: unknown[] } | undefined => {
    const text = str(args, 'markdown_text') ?? str(args, 'text');
    const blocks = Array.isArray(args.blocks) ? args.blocks : undefined;
    const attachments = Array.isArray(args.attachments) ? args.attachments : undefined;
    if (text === undefined && !blocks && !attachments) return undefined;
    return { text: text ?? '', ...(blocks ? { blocks } : {}), ...(attachments ? { attachments } : {}) };
  };

  const slackFile = (f: StoredFile): Result => ({
    id: f.id,
    created: f.created,
    timestamp: f.created,
    name: f.name,
    title: f.title,
    mimetype: f.mimetype,
    filetype: f.name.split('.').pop() ?? 'binary',
    pretty_type: f.mimetype,
    user: botUserId,
    user_team: teamId,
    editable: false,
    size: f.bytes?.length ?? f.length,
    mode: 'hosted',
    is_external: false,
    is_public: true,
    url_private: `${baseUrl}/files/${f.id}/${encodeURIComponent(f.name)}`,
    url_private_download: `${baseUrl}/files/${f.id}/download/${encodeURIComponent(f.name)}`,
    permalink: `${baseUrl}/files/${f.id}`,
  });

  const userInfo = (u: SlackUser): Result => ({
    id: u.id,
    team_id: teamId,
    name: u.name,
    deleted: false,
    real_name: u.real_name,
    tz: 'UTC',
    is_admin: false,
    is_owner: false,
    is_bot: u.is_bot,
    is_app_user: false,
    updated: 1767225600,
    profile: {
      real_name: u.real_name,
      display_name: u.name,
      real_name_normalized: u.real_name,
      display_name_normalized: u.name,
      email: u.is_bot ? undefined : `${u.name}@local.test`,
      image_192: `https://local.slack.test/avatars/${u.id}.png`,
      team: teamId,
      ...(u.is_bot ? { bot_id: botId, api_app_id: appId } : {}),
    },
  });

  const channelInfo = (id: string): Result => {
    const created = channelCreated.get(id) ?? 0;
    if (id.startsWith('D')) {
      return { id, created, is_im: true, is_org_shared: false, user: DEFAULT_USER, is_user_deleted: false, priority: 0 };
    }
    const name = channelNames.get(id) ?? `channel-${id.toLowerCase()}`;
    return {
      id,
      name,
      is_channel: id.startsWith('C'),
      is_group: id.startsWith('G'),
      is_im: false,
      is_mpim: false,
      is_private: id.startsWith('G'),
      created,
      is_archived: false,
      is_general: id === DEFAULT_CHANNEL,
      name_normalized: name,
      is_shared: false,
      is_ext_shared: false,
      is_org_shared: false,
      is_member: true,
      topic: { value: '', creator: '', last_set: 0 },
      purpose: { value: 'Local stand-in channel', creator: '', last_set: 0 },
      num_members: users.size,
    };
  };

  // ts-range filter shared by conversations.history and conversations.replies
  const inRange = (args: Args) => {
    const oldest = Number(str(args, 'oldest') ?? '0');
    const latest = Number(str(args, 'latest') ?? 'Infinity');
    const inclusive = bool(args, 'inclusive');
    return (m: StoredMessage) => {
      const t = Number(m.ts);
      return inclusive ? t >= oldest && t <= latest : t > oldest && t < latest;
    };
  };

  const streamCall = (method: string, m: StoredMessage, args: Args): void => {
    const chunks = arr(args.chunks);
    const text = (str(args, 'markdown_text') ?? '') + chunkText(chunks);
    m.text += text;
    m.local.stream?.appends.push({ method, text, chunks, at: Date.now() });
    m.local.versions.push({ text: m.text, at: Date.now(), method });
  };

  // --- Web API methods ---
  const methods: Record<string, (args: Args) => Result> = {
    'auth.test': () => ({
      url: 'https://local.slack.test/',
      team: 'Local',
      user: botName,
      team_id: teamId,
      user_id: botUserId,
      bot_id: botId,
      is_enterprise_install: false,
    }),
    'bots.info': (a) =>
      !str(a, 'bot') || str(a, 'bot') === botId
        ? { bot: { id: botId, deleted: false, name: botName, updated: 1767225600, app_id: appId, user_id: botUserId, icons: {} } }
        : fail('bot_not_found'),
    'users.info': (a) => {
      const user = users.get(str(a, 'user') ?? '');
      return user ? { user: userInfo(user) } : fail('user_not_found');
    },
    'conversations.info': (a) => {
      const id = str(a, 'channel');
      return ensureChannel(id) && id ? { channel: channelInfo(id) } : fail('channel_not_found');
    },
    'conversations.open': (a) => {
      const user = str(a, 'users')?.split(',')[0];
      if (!user) return fail('users_list_not_supplied');
      const id = `D${user.replace(/^[UW]/, '')}`;
      const existed = channels.has(id);
      ensureChannel(id);
      return { no_op: existed, already_open: existed, channel: { id } };
    },
    'conversations.history': (a) => {
      const id = str(a, 'channel');
      const list = ensureChannel(id);
      if (!list) return fail('channel_not_found');
      const limit = Math.min(num(a, 'limit', 100) || 100, 999);
      const before = decodeCursor(str(a, 'cursor'));
      const top = list
        .filter((m) => !m.local.deleted && (!m.thread_ts || m.thread_ts === m.ts || m.subtype === 'thread_broadcast'))
        .filter(inRange(a))
        .filter((m) => before === undefined || Number(m.ts) <= Number(before))
        .reverse();
      const page = top.slice(0, limit);
      const next = top[limit];
      return {
        messages: page.map(toSlack),
        has_more: next !== undefined,
        pin_count: 0,
        channel_actions_ts: null,
        channel_actions_count: 0,
        response_metadata: { next_cursor: next ? encodeCursor(next.ts) : '' },
      };
    },
    'conversations.replies': (a) => {
      const id = str(a, 'channel');
      const ts = str(a, 'ts');
      if (!ensureChannel(id) || !id) return fail('channel_not_found');
      const target = findMessage(id, ts);
      if (!ts || (!target && threadOf(id, ts).length === 0)) return fail('thread_not_found');
      // A reply's ts returns only that reply; a parent's ts returns the whole thread.
      const all = target && target.thread_ts && target.thread_ts !== target.ts ? [target] : threadOf(id, ts);
      const limit = Math.min(num(a, 'limit', 1000) || 1000, 1000);
      const from = decodeCursor(str(a, 'cursor'));
      const matching = all.filter(inRange(a)).filter((m) => from === undefined || Number(m.ts) >= Number(from));
      const page = matching.slice(0, limit);
      const next = matching[limit];
      return {
        messages: page.map(toSlack),
        has_more: next !== undefined,
        response_metadata: { next_cursor: next ? encodeCursor(next.ts) : '' },
      };
    },
    'chat.postMessage': (a) => {
      const id = str(a, 'channel');
      if (!ensureChannel(id) || !id) return fail('channel_not_found');
      const content = contentOf(a);
      if (!content) return fail('no_text');
      const m = storeMessage(id, { ...content, thread_ts: str(a, 'thread_ts') }, 'chat.postMessage');
      return { channel: id, ts: m.ts, message: toSlack(m) };
    },
    'chat.update': (a) => {
      const id = str(a, 'channel');
      const m = findMessage(id, str(a, 'ts'));
      if (!m || !id) return fail('message_not_found');
      if (m.user !== botUserId) return fail('cant_update_message');
      const content = contentOf(a);
      if (!content) return fail('no_text');
      m.text = content.text;
      m.blocks = content.blocks;
      m.attachments = content.attachments;
      if (!m.blocks) delete m.blocks;
      if (!m.attachments) delete m.attachments;
      m.edited = { user: botUserId, ts: nextTs() };
      m.local.versions.push({ text: m.text, at: Date.now(), method: 'chat.update' });
      return { channel: id, ts: m.ts, text: m.text, message: toSlack(m) };
    },
    'chat.delete': (a) => {
      const id = str(a, 'channel');
      const m = findMessage(id, str(a, 'ts'));
      if (!m) return fail('message_not_found');
      if (m.user !== botUserId) return fail('cant_delete_message');
      m.local.deleted = true;
      return { channel: id, ts: m.ts };
    },
    'chat.postEphemeral': (a) => {
      const id = str(a, 'channel');
      const user = str(a, 'user');
      if (!ensureChannel(id) || !id) return fail('channel_not_found');
      if (!user) return fail('user_not_in_channel');
      const content = contentOf(a);
      if (!content) return fail('no_text');
      const ts = nextTs();
      const thread = threadRoot(id, str(a, 'thread_ts'));
      ephemeral.push({
        channel: id,
        ts,
        user: botUserId,
        bot_id: botId,
        team: teamId,
        ...content,
        visibleTo: user,
        ...(thread ? { thread_ts: thread } : {}),
        local: {
          createdAt: Date.now(),
          via: 'chat.postEphemeral',
          versions: [{ text: content.text, at: Date.now(), method: 'chat.postEphemeral' }],
        },
      });
      return { message_ts: ts };
    },
    'chat.scheduleMessage': (a) => {
      const id = str(a, 'channel');
      if (!ensureChannel(id) || !id) return fail('channel_not_found');
      const postAt = num(a, 'post_at', 0);
      if (postAt <= Date.now() / 1000) return fail('time_in_past');
      const content = contentOf(a);
      if (!content) return fail('no_text');
      const scheduledId = randomId('Q0');
      const timer = setTimeout(
        () => {
          scheduled.delete(scheduledId);
          storeMessage(id, { ...content, thread_ts: str(a, 'thread_ts') }, 'chat.scheduleMessage');
        },
        postAt * 1000 - Date.now(),
      );
      timer.unref();
      scheduled.set(scheduledId, { channel: id, postAt, args: a, timer });
      return {
        channel: id,
        scheduled_message_id: scheduledId,
        post_at: postAt,
        message: { type: 'delayed_message', subtype: 'bot_message', bot_id: botId, user: botUserId, text: content.text, team: teamId },
      };
    },
    'chat.deleteScheduledMessage': (a) => {
      const entry = scheduled.get(str(a, 'scheduled_message_id') ?? '');
      if (!entry) return fail('invalid_scheduled_message_id');
      clearTimeout(entry.timer);
      scheduled.delete(str(a, 'scheduled_message_id') ?? '');
      return {};
    },
    'chat.startStream': (a) => {
      const id = str(a, 'channel');
      if (!ensureChannel(id) || !id) return fail('channel_not_found');
      if (!id.startsWith('D')) {
        if (!str(a, 'recipient_team_id')) return fail('missing_recipient_team_id');
        if (!str(a, 'recipient_user_id')) return fail('missing_recipient_user_id');
      }
      const m = storeMessage(id, { text: '', thread_ts: str(a, 'thread_ts') }, 'chat.startStream');
      m.local.stream = { state: 'streaming', appends: [] };
      m.local.versions = [];
      streamCall('chat.startStream', m, a);
      return { channel: id, ts: m.ts };
    },
    'chat.appendStream': (a) => {
      const m = findMessage(str(a, 'channel'), str(a, 'ts'));
      if (!m) return fail('message_not_found');
      if (m.local.stream?.state !== 'streaming') return fail('message_not_in_streaming_state');
      streamCall('chat.appendStream', m, a);
      return { channel: m.channel, ts: m.ts };
    },
    'chat.stopStream': (a) => {
      const m = findMessage(str(a, 'channel'), str(a, 'ts'));
      if (!m?.local.stream) return fail('message_not_found');
      if (m.local.stream.state !== 'streaming') return fail('message_not_in_streaming_state');
      streamCall('chat.stopStream', m, a);
      if (Array.isArray(a.blocks)) m.blocks = a.blocks;
      m.local.stream.state = 'stopped';
      return { channel: m.channel, ts: m.ts, message: toSlack(m) };
    },
    'reactions.add': (a) => {
      const m = findMessage(str(a, 'channel'), str(a, 'timestamp'));
      const name = str(a, 'name');
      if (!m) return fail('message_not_found');
      if (!name) return fail('invalid_name');
      m.reactions ??= [];
      let reaction = m.reactions.find((r) => r.name === name);
      if (reaction?.users.includes(botUserId)) return fail('already_reacted');
      if (!reaction) m.reactions.push((reaction = { name, users: [], count: 0 }));
      reaction.users.push(botUserId);
      reaction.count = reaction.users.length;
      return {};
    },
    'reactions.remove': (a) => {
      const m = findMessage(str(a, 'channel'), str(a, 'timestamp'));
      if (!m) return fail('message_not_found');
      const reaction = m.reactions?.find((r) => r.name === str(a, 'name') && r.users.includes(botUserId));
      if (!reaction || !m.reactions) return fail('no_reaction');
      reaction.users = reaction.users.filter((u) => u !== botUserId);
      reaction.count = reaction.users.length;
      m.reactions = m.reactions.filter((r) => r.count > 0);
      return {};
    },
    'files.getUploadURLExternal': (a) => {
      const name = str(a, 'filename');
      const length = num(a, 'length', -1);
      if (!name) return fail('invalid_arguments');
      if (length < 0) return fail('invalid_arguments');
      const id = randomId('F0');
      const ext = name.split('.').pop()?.toLowerCase() ?? '';
      files.set(id, {
        id,
        name,
        title: name,
        mimetype: MIME_TYPES[ext] ?? 'application/octet-stream',
        length,
        created: Math.floor(Date.now() / 1000),
      });
      return { upload_url: `${baseUrl}/_upload/${id}`, file_id: id };
    },
    'files.completeUploadExternal': (a) => {
      const list = arr(a.files) as { id?: string; title?: string }[];
      const stored: StoredFile[] = [];
      for (const entry of list) {
        const f = files.get(entry.id ?? '');
        if (!f || !f.bytes) return fail('file_not_found');
        if (entry.title) f.title = entry.title;
        stored.push(f);
      }
      const id = str(a, 'channel_id');
      if (id) {
        if (!ensureChannel(id)) return fail('channel_not_found');
        storeMessage(
          id,
          { text: str(a, 'initial_comment') ?? '', thread_ts: str(a, 'thread_ts'), files: stored.map(slackFile) },
          'files.completeUploadExternal',
        );
      }
      return { files: stored.map(slackFile) };
    },
    'files.info': (a) => {
      const f = files.get(str(a, 'file') ?? '');
      return f ? { file: slackFile(f) } : fail('file_not_found');
    },
    'assistant.threads.setStatus': (a) => {
      const key = `${str(a, 'channel_id') ?? ''}:${str(a, 'thread_ts') ?? ''}`;
      const status = str(a, 'status');
      if (status) statuses.set(key, status);
      else statuses.delete(key);
      return {};
    },
    'assistant.threads.setSuggestedPrompts': (a) => {
      const key = `${str(a, 'channel_id') ?? ''}:${str(a, 'thread_ts') ?? ''}`;
      assistantThreads.set(key, { ...assistantThreads.get(key), prompts: a.prompts, title: a.title });
      return {};
    },
    'assistant.threads.setTitle': (a) => {
      const key = `${str(a, 'channel_id') ?? ''}:${str(a, 'thread_ts') ?? ''}`;
      assistantThreads.set(key, { ...assistantThreads.get(key), title: a.title });
      return {};
    },
    'agents.sessions.setStatus': (a) => {
      const key = `${str(a, 'channel_id') ?? ''}:${str(a, 'thread_ts') ?? ''}`;
      assistantThreads.set(key, { ...assistantThreads.get(key), sessionStatus: a.status });
      return {};
    },
    'agents.sessions.rename': (a) => {
      const key = `${str(a, 'channel_id') ?? ''}:${str(a, 'thread_ts') ?? ''}`;
      assistantThreads.set(key, { ...assistantThreads.get(key), title: a.title });
      return {};
    },
    'views.open': (a) => {
      if (!str(a, 'trigger_id')) return fail('invalid_trigger_id');
      const id = randomId('V0');
      const view = { id, team_id: teamId, app_id: appId, bot_id: botId, hash: randomId(''), ...(a.view as Args) };
      views.set(id, view);
      return { view };
    },
    'views.update': (a) => {
      const existing = views.get(str(a, 'view_id') ?? '');
      if (!existing) return fail('not_found');
      const view = { ...existing, ...(a.view as Args), id: existing.id, hash: randomId('') };
      views.set(String(existing.id), view);
      return { view };
    },
    'views.publish': (a) => {
      const id = randomId('V0');
      const view = { id, team_id: teamId, app_id: appId, bot_id: botId, hash: randomId(''), ...(a.view as Args), user_id: a.user_id };
      views.set(id, view);
      return { view };
    },
  };

  const rateLimited = (method: string): number | undefined => {
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
  };

  const handleApi = (method: string, req: IncomingMessage, args: Args, res: ServerResponse): void => {
    const { token: bodyToken, ...logged } = args;
    const record = (status: number, body: Result) => {
      calls.push({ method, args: logged, at: Date.now(), status, ok: body.ok === true, ...(body.ok ? {} : { error: String(body.error) }) });
      sendJson(res, status, body);
    };
    const handler = methods[method];
    if (!handler) return record(200, { ok: false, error: 'unknown_method', req_method: method });
    const header = req.headers.authorization;
    const token = header?.startsWith('Bearer ') ? header.slice('Bearer '.length) : typeof bodyToken === 'string' ? bodyToken : undefined;
    if (!token) return record(200, fail('not_authed'));
    if (token !== options.botToken) return record(200, fail('invalid_auth'));
    const retryAfter = rateLimited(method);
    if (retryAfter !== undefined) {
      calls.push({ method, args: logged, at: Date.now(), status: 429, ok: false, error: 'ratelimited' });
      return sendJson(res, 429, { ok: false, error: 'ratelimited' }, { 'Retry-After': String(retryAfter) });
    }
    const result = handler(args);
    record(200, result.ok === false ? result : { ok: true, ...result });
  };

  // --- Events API source ---

  /** Sign and POST an Events API envelope (or any payload) to the events URL. */
  const deliver = async (payload: Record<string, unknown>, opts: { retryNum?: number } = {}): Promise<Delivery> => {
    const event = payload.event as Args | undefined;
    const base = { url: eventsUrl ?? '', eventId: String(payload.event_id ?? ''), type: String(event?.type ?? payload.type), payload };
    if (!eventsUrl) {
      const d = { ...base, status: null, ms: 0, error: 'no events URL set' };
      deliveries.push(d);
      return d;
    }
    const body = JSON.stringify(payload);
    const started = Date.now();
    let d: Delivery;
    try {
      const response = await fetch(eventsUrl, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'User-Agent': 'Slackbot 1.0 (+https://api.slack.com/robots)',
          ...signSlackRequest(body, options.signingSecret),
          ...(opts.retryNum ? { 'X-Slack-Retry-Num': String(opts.retryNum), 'X-Slack-Retry-Reason': 'http_error' } : {}),
        },
        body,
        signal: AbortSignal.timeout(30_000),
      });
      await response.arrayBuffer();
      d = { ...base, status: response.status, ms: Date.now() - started };
    } catch (error) {
      d = { ...base, status: null, ms: Date.now() - started, error: error instanceof Error ? error.message : String(error) };
    }
    if (d.ms > 3000) d.error = `took ${d.ms} ms; Slack gives up after 3 s and retries`;
    deliveries.push(d);
    return d;
  };

  const envelope = (event: Args): Record<string, unknown> => {
    const eventTime = Math.floor(Date.now() / 1000);
    const context = { et: event.type, tid: teamId, aid: appId, cid: event.channel };
    return {
      token: verificationToken,
      team_id: teamId,
      context_team_id: teamId,
      context_enterprise_id: null,
      api_app_id: appId,
      event,
      type: 'event_callback',
      event_id: randomId('Ev0', 9),
      event_time: eventTime,
      authorizations: [{ enterprise_id: null, team_id: teamId, user_id: botUserId, is_bot: true, is_enterprise_install: false }],
      is_ext_shared_channel: false,
      event_context: `4-${Buffer.from(JSON.stringify(context)).toString('base64url')}`,
    };
  };

  /** Store a user's message and deliver it as Slack would (app_mention + message for a mention
   * in a channel, message only otherwise; DMs as message with channel_type "im"). */
  const postUserMessage = async (input: PostUserMessageInput): Promise<PostUserMessageResult> => {
    const channel = input.channel ?? DEFAULT_CHANNEL;
    if (!ensureChannel(channel)) throw new Error(`Invalid Slack channel id: ${channel}`);
    const user = input.user ?? DEFAULT_USER;
    if (!users.has(user)) users.set(user, { id: user, name: user.toLowerCase(), real_name: user, is_bot: false });
    const attached = (input.files ?? []).map((f) => {
      const bytes = Buffer.isBuffer(f.content) ? f.content : Buffer.from(f.content);
      const ext = f.name.split('.').pop()?.toLowerCase() ?? '';
      const stored: StoredFile = {
        id: randomId('F0'),
        name: f.name,
        title: f.name,
        mimetype: f.mimetype ?? MIME_TYPES[ext] ?? 'application/octet-stream',
        length: bytes.length,
        bytes,
        created: Math.floor(Date.now() / 1000),
      };
      files.set(stored.id, stored);
      return { ...slackFile(stored), user };
    });
    const m = storeMessage(
      channel,
      {
        user,
        text: input.text,
        thread_ts: input.threadTs,
        client_msg_id: randomUUID(),
        blocks: richTextBlocks(input.text),
        ...(attached.length ? { files: attached } : {}),
      },
      'user',
    );
    const base: Args = {
      user,
      ts: m.ts,
      client_msg_id: m.client_msg_id,
      text: m.text,
      team: teamId,
      ...(m.thread_ts ? { thread_ts: m.thread_ts, parent_user_id: m.parent_user_id } : {}),
      blocks: m.blocks,
      channel,
      event_ts: m.ts,
      ...(attached.length ? { files: attached, subtype: undefined } : {}),
    };
    const mentioned = new RegExp(`<@${botUserId}(\\|[^>]*)?>`).test(input.text);
    const types = input.events ?? (mentioned && !channel.startsWith('D') ? ['message', 'app_mention'] : ['message']);
    const results: Delivery[] = [];
    for (const type of types) {
      const event = type === 'message' ? { type, ...base, channel_type: channelType(channel) } : { type, ...base };
      results.push(await deliver(envelope(event)));
    }
    const failed = results.find((d) => d.status === null || d.status >= 300);
    return {
      ts: m.ts,
      channel,
      threadTs: m.thread_ts ?? m.ts,
      status: failed ? failed.status : (results[0]?.status ?? null),
      deliveries: results,
    };
  };

  // --- HTTP server ---
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', baseUrl);
    const path = url.pathname;
    const body = await readBody(req);
    const contentType = req.headers['content-type'] ?? '';

    if (path.startsWith('/api/')) {
      let args: Args;
      try {
        args = parseArgs(body, contentType, url.searchParams);
      } catch {
        return sendJson(res, 200, { ok: false, error: 'invalid_json' });
      }
      return handleApi(path.slice('/api/'.length), req, args, res);
    }
    if (req.method === 'POST' && path.startsWith('/_upload/')) {
      const file = files.get(path.slice('/_upload/'.length));
      if (!file) return void res.writeHead(404).end('Not found');
      const part = contentType.includes('multipart/form-data') ? parseMultipart(body, contentType)[0]?.data : undefined;
      file.bytes = Buffer.from(part ?? body);
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end(`OK - ${file.bytes.length}`);
      return;
    }
    if (req.method === 'GET' && path.startsWith('/files/')) {
      const file = files.get(path.split('/')[2] ?? '');
      if (req.headers.authorization !== `Bearer ${options.botToken}`) {
        // Like Slack: without a valid token a file URL answers with the HTML login page.
        res.writeHead(200, { 'Content-Type': 'text/html' }).end('<html><body>Sign in to Slack</body></html>');
        return;
      }
      if (!file?.bytes) return void res.writeHead(404).end('Not found');
      res.writeHead(200, { 'Content-Type': file.mimetype, 'Content-Length': file.bytes.length }).end(file.bytes);
      return;
    }
    if (req.method === 'POST' && path === '/_local/post') {
      const input = JSON.parse(body.toString('utf8') || '{}') as Args;
      if (typeof input.text !== 'string') return sendJson(res, 400, { ok: false, error: 'text is required' });
      const result = await postUserMessage({
        channel: str(input, 'channel'),
        text: input.text,
        threadTs: str(input, 'threadTs'),
        user: str(input, 'user'),
      });
      return sendJson(res, 200, { ok: true, ...result, deliveries: result.deliveries.map(({ payload: _p, ...d }) => d) });
    }
    if (req.method === 'GET' && path === '/_local/info') {
      return sendJson(res, 200, {
        ok: true,
        apiUrl,
        eventsUrl: eventsUrl ?? null,
        teamId,
        appId,
        botUserId,
        botId,
        botName,
        defaultChannel: DEFAULT_CHANNEL,
        defaultUser: DEFAULT_USER,
      });
    }
    if (req.method === 'GET' && path === '/_local/messages') {
      const channel = url.searchParams.get('channel') ?? undefined;
      const threadTs = url.searchParams.get('thread_ts') ?? undefined;
      const list = channel && threadTs ? threadOf(channel, threadTs) : channel ? (channels.get(channel) ?? []) : messages.all();
      return sendJson(res, 200, {
        ok: true,
        channel: channel ?? null,
        thread_ts: threadTs ?? null,
        status: channel && threadTs ? (statuses.get(`${channel}:${threadTs}`) ?? null) : null,
        messages: list.filter((m) => !m.local.deleted),
      });
    }
    if (req.method === 'GET' && path === '/') {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(renderPage());
      return;
    }
    res.writeHead(404, { 'Content-Type': 'text/plain' }).end('Not found');
  };

  const escapeHtml = (s: string) =>
    s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

  const renderMessage = (m: StoredMessage): string => {
    const who = userOf(m)?.name ?? m.user;
    const badges: string[] = [];
    if (m.local.stream) {
      const n = m.local.stream.appends.filter((a) => a.text).length;
      badges.push(m.local.stream.state === 'streaming' ? `streaming… ${n} pieces` : `streamed in ${n} pieces`);
    }
    const edits = m.local.versions.filter((v) => v.method === 'chat.update').length;
    if (edits > 0) badges.push(`edited ×${edits}`);
    for (const r of m.reactions ?? []) badges.push(`:${r.name}: ${r.count}`);
    const fileLinks = (m.files ?? []).map((f) => `<div class="file">📎 ${escapeHtml(String(f.name))}</div>`).join('');
    const text = (m.text || (m.blocks ? '[blocks]' : '')).replace(
      /<@([UW][A-Z0-9]+)(?:\|([^>]+))?>/g,
      (_, id: string, name?: string) => `@${name ?? users.get(id)?.name ?? id}`,
    );
    return `<div class="msg ${m.bot_id ? 'bot' : 'user'}"><div class="meta"><b>${escapeHtml(who)}</b> <span>${m.ts}</span> ${badges
      .map((b) => `<span class="badge">${escapeHtml(b)}</span>`)
      .join(' ')}</div><pre>${escapeHtml(text)}</pre>${fileLinks}</div>`;
  };

  const renderPage = (): string => {
    const sections = [...channels.entries()].map(([id, list]) => {
      const live = list.filter((m) => !m.local.deleted);
      const tops = live.filter((m) => !m.thread_ts || m.thread_ts === m.ts);
      const threads = tops.map((top) => {
        const replies = live.filter((r) => r.thread_ts === top.ts && r.ts !== top.ts);
        const status = statuses.get(`${id}:${top.ts}`);
        const eph = ephemeral.filter((e) => e.channel === id && e.thread_ts === top.ts);
        return `<div class="thread">${renderMessage(top)}<div class="replies">${replies.map(renderMessage).join('')}${eph
          .map((e) => `<div class="msg eph"><i>only visible to ${escapeHtml(e.visibleTo)}</i><pre>${escapeHtml(e.text)}</pre></div>`)
          .join('')}${status ? `<div class="status">${escapeHtml(botName)} ${escapeHtml(status)}</div>` : ''}</div></div>`;
      });
      const name = id.startsWith('D') ? `DM ${id}` : `#${channelNames.get(id) ?? id.toLowerCase()} (${id})`;
      return `<section><h2>${escapeHtml(name)}</h2>${threads.join('') || '<p>No messages yet.</p>'}</section>`;
    });
    return `<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="refresh" content="1">
<title>Local Slack</title><style>
body{font-family:system-ui,sans-serif;margin:1.5rem;background:#f8f8f8;color:#1d1c1d}
section{margin-bottom:2rem}.thread{background:#fff;border:1px solid #ddd;border-radius:6px;padding:.5rem;margin:.5rem 0}
.replies{margin-left:1.5rem;border-left:3px solid #eee;padding-left:.75rem}.msg{margin:.35rem 0}
.msg.bot b{color:#1264a3}.meta span{color:#888;font-size:.8em}.badge{background:#eef;border-radius:4px;padding:0 .3rem}
pre{white-space:pre-wrap;margin:.15rem 0;font-family:inherit}.status{color:#888;font-style:italic}.eph{color:#666}
</style></head><body><h1>Local Slack — ${escapeHtml(teamId)}</h1>
<p>Bot ${escapeHtml(botName)} (${escapeHtml(botUserId)}) · events → ${escapeHtml(eventsUrl ?? 'not set')}</p>
${sections.join('') || '<p>No channels yet.</p>'}</body></html>`;
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { ok: false, error: 'internal_error', detail: String(error) });
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const baseUrl = `http://${options.host ?? '127.0.0.1'}:${port}`;
  const apiUrl = `${baseUrl}/api/`;

  /** Resolve with the predicate's first truthy result, polling every 20 ms. */
  const waitFor = async <T>(predicate: () => T | undefined | null | false, timeoutMs = 5000): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = predicate();
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`Slack stand-in: condition not met within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  return {
    apiUrl,
    port,
    url: baseUrl,
    teamId,
    appId,
    botUserId,
    botId,
    messages,
    calls,
    deliveries,
    ephemeral,
    statuses,
    assistantThreads,
    files,
    views,
    scheduled,
    users,
    channelNames,
    /** Mutable: set rateLimits['chat.update'] = { limit, windowMs } to emulate HTTP 429s. */
    rateLimits,
    postUserMessage,
    deliver,
    envelope,
    waitFor,
    setEventsUrl(url: string | undefined): void {
      eventsUrl = url;
    },
    close(): Promise<void> {
      for (const entry of scheduled.values()) clearTimeout(entry.timer);
      server.closeAllConnections();
      return new Promise((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
    },
  };
}
