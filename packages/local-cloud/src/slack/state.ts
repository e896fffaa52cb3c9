// The local Slack workspace, in memory: channels and their messages, users, files, ephemeral
// messages, assistant statuses, and the record of Web API calls and event deliveries. Plain data,
// inspectable by tests.
import { randomBytes } from 'node:crypto';

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

/** Who the bot is, in this workspace. */
export interface SlackIdentity {
  teamId: string;
  appId: string;
  botUserId: string;
  botId: string;
  botName: string;
}

export const DEFAULT_CHANNEL = 'C0LOCAL';
export const DEFAULT_USER = 'U0LOCALUSER';

let lastMicros = 0;
/** Slack-style message timestamps ("1767224888.280449"), strictly increasing. */
export function nextTs(): string {
  lastMicros = Math.max(Date.now() * 1000 + Math.floor(Math.random() * 1000), lastMicros + 1);
  return `${Math.floor(lastMicros / 1e6)}.${String(lastMicros % 1e6).padStart(6, '0')}`;
}

export function randomId(prefix: string, length = 10): string {
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZ0123456789';
  return prefix + Array.from(randomBytes(length), (b) => alphabet[b % alphabet.length]).join('');
}

export function createWorkspace(identity: SlackIdentity) {
  const { botUserId, botName } = identity;
  const channels = new Map<string, StoredMessage[]>();
  const users = new Map<string, SlackUser>([
    [botUserId, { id: botUserId, name: botName, real_name: botName, is_bot: true }],
    [DEFAULT_USER, { id: DEFAULT_USER, name: 'local-user', real_name: 'Local User', is_bot: false }],
  ]);

  /** The channel's messages, creating the channel on first use; undefined for an id Slack would refuse. */
  function ensureChannel(id: string | undefined): StoredMessage[] | undefined {
    if (!id || !/^[CDG][A-Z0-9]{2,}$/.test(id)) return undefined;
    let list = channels.get(id);
    if (!list) {
      list = [];
      channels.set(id, list);
    }
    return list;
  }

  const findMessage = (channel: string | undefined, ts: string | undefined): StoredMessage | undefined =>
    channel && ts ? channels.get(channel)?.find((m) => m.ts === ts && !m.local.deleted) : undefined;

  /** The thread a reply with this thread_ts belongs to: a reply's ts means its parent's thread. */
  function threadRoot(channel: string, threadTs: string | undefined): string | undefined {
    if (!threadTs) return undefined;
    return channels.get(channel)?.find((m) => m.ts === threadTs)?.thread_ts ?? threadTs;
  }

  /** The thread's parent followed by its replies, in ts order. */
  const threadOf = (channel: string, threadTs: string): StoredMessage[] =>
    (channels.get(channel) ?? []).filter((m) => !m.local.deleted && (m.ts === threadTs || m.thread_ts === threadTs));

  return {
    identity,
    channels,
    channelNames: new Map<string, string>([[DEFAULT_CHANNEL, 'local']]),
    users,
    files: new Map<string, StoredFile>(),
    ephemeral: [] as (StoredMessage & { visibleTo: string })[],
    /** `${channel}:${thread_ts}` → the assistant status shown in the thread. */
    statuses: new Map<string, string>(),
    calls: [] as ApiCall[],
    deliveries: [] as Delivery[],
    ensureChannel,
    findMessage,
    threadRoot,
    threadOf,
    allMessages: (): StoredMessage[] => [...channels.values()].flat(),
  };
}

export type Workspace = ReturnType<typeof createWorkspace>;

/** Stores a message from the bot (via a Web API method) or a user (via 'user'), in its thread if any. */
export function storeMessage(
  workspace: Workspace,
  channel: string,
  fields: Partial<StoredMessage> & { text: string },
  via: string,
): StoredMessage {
  const { botUserId, botId, appId, teamId } = workspace.identity;
  const list = workspace.ensureChannel(channel) ?? [];
  const threadTs = workspace.threadRoot(channel, fields.thread_ts);
  const parent = threadTs ? list.find((m) => m.ts === threadTs) : undefined;
  const isBot = via !== 'user';
  const message: StoredMessage = {
    channel,
    ts: nextTs(),
    user: fields.user ?? botUserId,
    ...(isBot ? { bot_id: botId, app_id: appId } : {}),
    team: teamId,
    ...fields,
    thread_ts: threadTs,
    ...(threadTs ? { parent_user_id: parent?.user ?? fields.user ?? botUserId } : {}),
    ...(isBot ? { bot_profile: botProfile(workspace.identity) } : {}),
    local: { createdAt: Date.now(), via, versions: [{ text: fields.text, at: Date.now(), method: via }] },
  };
  if (!threadTs) delete message.thread_ts;
  list.push(message);
  if (isBot && threadTs) workspace.statuses.delete(`${channel}:${threadTs}`); // Slack clears the status on reply
  return message;
}

function botProfile(identity: SlackIdentity): Record<string, unknown> {
  return { id: identity.botId, app_id: identity.appId, name: identity.botName, team_id: identity.teamId, deleted: false };
}
