// Workspace objects as the Web API returns them: the fields the Chat SDK Slack adapter reads.
import { DEFAULT_USER, type SlackUser, type StoredFile, type StoredMessage, type Workspace } from './state.ts';

type Result = Record<string, unknown>;

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

export function mimeTypeOf(name: string): string {
  return MIME_TYPES[name.split('.').pop()?.toLowerCase() ?? ''] ?? 'application/octet-stream';
}

/** A message without local bookkeeping; a thread's parent with its reply summary. */
export function messageShape(workspace: Workspace, m: StoredMessage): Result {
  const { local: _local, channel, ...rest } = m;
  const out: Result = { type: 'message', ...rest };
  if (!m.thread_ts || m.thread_ts === m.ts) {
    const replies = workspace.threadOf(channel, m.ts).filter((r) => r.ts !== m.ts);
    if (replies.length > 0) Object.assign(out, { thread_ts: m.ts, reply_count: replies.length, latest_reply: replies.at(-1)?.ts });
  }
  return out;
}

/** `baseUrl` serves the file's bytes to a request with the bot token. */
export function fileShape(f: StoredFile, baseUrl: string): Result {
  return {
    id: f.id,
    name: f.name,
    title: f.title,
    mimetype: f.mimetype,
    size: f.bytes?.length ?? f.length,
    url_private: `${baseUrl}/files/${f.id}/${encodeURIComponent(f.name)}`,
  };
}

export function userShape(u: SlackUser): Result {
  return {
    id: u.id,
    name: u.name,
    real_name: u.real_name,
    is_bot: u.is_bot,
    profile: {
      real_name: u.real_name,
      display_name: u.name,
      email: u.is_bot ? undefined : `${u.name}@local.test`,
      image_192: `https://local.slack.test/avatars/${u.id}.png`,
    },
  };
}

export function channelShape(workspace: Workspace, id: string): Result {
  if (id.startsWith('D')) return { id, is_im: true, user: DEFAULT_USER };
  const name = workspace.channelNames.get(id) ?? `channel-${id.toLowerCase()}`;
  return { id, name, is_im: false, is_private: id.startsWith('G'), is_ext_shared: false };
}
