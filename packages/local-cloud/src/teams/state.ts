// What the Teams stand-in remembers: conversations (channel threads, group chats, personal chats) and
// every activity in them, the user's and the bot's, with edits and deletions; typing indicators;
// the tokens it issued to the bot.
import { randomBytes } from 'node:crypto';

export type ConversationType = 'channel' | 'groupChat' | 'personal';

export interface TeamsUser {
  id: string;
  name: string;
  aadObjectId: string;
}

export interface StoredActivity {
  id: string;
  type: string;
  conversationId: string;
  from: { id: string; name?: string; role?: string };
  text?: string;
  replyToId?: string;
  attachments?: unknown[];
  entities?: unknown[];
  channelData?: unknown;
  /** Sent only to one member of the conversation (a targeted, ephemeral message). */
  targeted?: boolean;
  edits: number;
  deleted: boolean;
  timestamp: string;
  /** A reply streamed natively (personal chats): its updates, and whether the final message closed it. */
  stream?: { startedAt: number; sequence: number; updates: number; final: boolean };
}

export const DEFAULT_TEAMS_USER: TeamsUser = {
  id: '29:1local-user',
  name: 'Local User',
  aadObjectId: '00000000-0000-4000-8000-000000000001',
};
export const DEFAULT_TENANT_ID = '00000000-0000-4000-8000-00000000aaaa';
export const DEFAULT_TEAM_CHANNEL = '19:local-general@thread.tacv2';

let counter = Date.now();
export const nextActivityId = () => String(++counter);
export const randomId = (bytes = 8) => randomBytes(bytes).toString('hex');

export function createTeamsState() {
  const activities = new Map<string, StoredActivity[]>();
  const conversationTypes = new Map<string, ConversationType>();
  return {
    activities,
    conversationTypes,
    users: new Map<string, TeamsUser>([[DEFAULT_TEAMS_USER.id, DEFAULT_TEAMS_USER]]),
    issuedTokens: new Set<string>(),
    /** Files users attached, served at {serviceUrl}v3/attachments/{id}/views/original to the bot's token only. */
    files: new Map<string, { name: string; contentType: string; data: Buffer }>(),
    /** Attachment downloads asked for, and whether they carried a token the stand-in issued. */
    fileDownloads: [] as { id: string; authorized: boolean }[],
    /** Token requests the endpoint answered (the bot should reuse one token, not ask per call). */
    tokenRequests: [] as { clientId: string; scope: string }[],
    add(activity: StoredActivity) {
      const list = activities.get(activity.conversationId) ?? [];
      list.push(activity);
      activities.set(activity.conversationId, list);
      return activity;
    },
    find(conversationId: string, id: string) {
      return activities.get(conversationId)?.find((a) => a.id === id);
    },
    /** Messages in a conversation (no typing indicators), oldest first. */
    messages(conversationId: string) {
      return (activities.get(conversationId) ?? []).filter((a) => a.type === 'message');
    },
  };
}

export type TeamsState = ReturnType<typeof createTeamsState>;
