// The Web API methods the Chat SDK Slack adapter calls on the product's paths: who the bot is,
// users and channels, thread and channel history, file uploads, and (web-api-chat.ts) posting and
// changing messages.
import { decodeCursor, encodeCursor, fail, inRange, num, str, type Result, type WebApiMethod } from './args.ts';
import { channelShape, fileShape, messageShape, mimeTypeOf, userShape } from './shapes.ts';
import { randomId, storeMessage, type StoredFile, type StoredMessage, type Workspace } from './state.ts';
import { messageMethods } from './web-api-chat.ts';

export function webApiMethods(workspace: Workspace, baseUrl: () => string): Record<string, WebApiMethod> {
  return { ...readMethods(workspace), ...messageMethods(workspace), ...fileMethods(workspace, baseUrl) };
}

function readMethods(workspace: Workspace): Record<string, WebApiMethod> {
  const { identity, ensureChannel, findMessage, threadOf } = workspace;

  /** The first `limit` messages, with a cursor that starts at the next one. */
  const historyPage = (messages: StoredMessage[], limit: number): Result => {
    const next = messages[limit];
    return {
      messages: messages.slice(0, limit).map((m) => messageShape(workspace, m)),
      has_more: next !== undefined,
      response_metadata: { next_cursor: next ? encodeCursor(next.ts) : '' },
    };
  };

  return {
    'auth.test': () => ({
      team: 'Local',
      user: identity.botName,
      team_id: identity.teamId,
      user_id: identity.botUserId,
      bot_id: identity.botId,
    }),
    'users.info': (a) => {
      const user = workspace.users.get(str(a, 'user') ?? '');
      return user ? { user: userShape(user) } : fail('user_not_found');
    },
    'conversations.info': (a) => {
      const id = str(a, 'channel');
      return ensureChannel(id) && id ? { channel: channelShape(workspace, id) } : fail('channel_not_found');
    },
    'conversations.history': (a) => {
      const list = ensureChannel(str(a, 'channel'));
      if (!list) return fail('channel_not_found');
      const limit = Math.min(num(a, 'limit', 100) || 100, 999);
      const before = decodeCursor(str(a, 'cursor'));
      const top = list
        .filter((m) => !m.local.deleted && (!m.thread_ts || m.thread_ts === m.ts))
        .filter(inRange(a))
        .filter((m) => before === undefined || Number(m.ts) <= Number(before))
        .reverse();
      return historyPage(top, limit);
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
      return historyPage(matching, limit);
    },
  };
}

/** files.uploadV2 of @slack/web-api: get an upload URL, POST the bytes there, complete the upload. */
function fileMethods(workspace: Workspace, baseUrl: () => string): Record<string, WebApiMethod> {
  const toFile = (f: StoredFile) => fileShape(f, baseUrl());
  return {
    'files.getUploadURLExternal': (a) => {
      const name = str(a, 'filename');
      const length = num(a, 'length', -1);
      if (!name || length < 0) return fail('invalid_arguments');
      const id = randomId('F0');
      const created = Math.floor(Date.now() / 1000);
      workspace.files.set(id, { id, name, title: name, mimetype: mimeTypeOf(name), length, created });
      return { upload_url: `${baseUrl()}/_upload/${id}`, file_id: id };
    },
    'files.completeUploadExternal': (a) => {
      const stored: StoredFile[] = [];
      for (const entry of (Array.isArray(a.files) ? a.files : []) as { id?: string; title?: string }[]) {
        const f = workspace.files.get(entry.id ?? '');
        if (!f || !f.bytes) return fail('file_not_found');
        if (entry.title) f.title = entry.title;
        stored.push(f);
      }
      const id = str(a, 'channel_id');
      if (id) {
        if (!workspace.ensureChannel(id)) return fail('channel_not_found');
        const fields = { text: str(a, 'initial_comment') ?? '', thread_ts: str(a, 'thread_ts'), files: stored.map(toFile) };
        storeMessage(workspace, id, fields, 'files.completeUploadExternal');
      }
      return { files: stored.map(toFile) };
    },
  };
}
