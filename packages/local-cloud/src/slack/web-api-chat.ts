// The Web API methods that post and change messages: chat.postMessage / update / delete /
// postEphemeral, native streaming (chat.startStream / appendStream / stopStream), reactions.add,
// and the assistant status shown in a thread while the bot works.
import { chunkText, contentOf, fail, str, type Args, type WebApiMethod } from './args.ts';
import { messageShape } from './shapes.ts';
import { nextTs, storeMessage, type StoredMessage, type Workspace } from './state.ts';

export function messageMethods(workspace: Workspace): Record<string, WebApiMethod> {
  const { identity, ensureChannel, findMessage } = workspace;
  const toSlack = (m: StoredMessage) => messageShape(workspace, m);

  const streamCall = (method: string, m: StoredMessage, args: Args): void => {
    const chunks = Array.isArray(args.chunks) ? args.chunks : [];
    const text = (str(args, 'markdown_text') ?? '') + chunkText(chunks);
    m.text += text;
    m.local.stream?.appends.push({ method, text, chunks, at: Date.now() });
    m.local.versions.push({ text: m.text, at: Date.now(), method });
  };

  return {
    'chat.postMessage': (a) => {
      const id = str(a, 'channel');
      if (!ensureChannel(id) || !id) return fail('channel_not_found');
      const content = contentOf(a);
      if (!content) return fail('no_text');
      const m = storeMessage(workspace, id, { ...content, thread_ts: str(a, 'thread_ts') }, 'chat.postMessage');
      return { channel: id, ts: m.ts, message: toSlack(m) };
    },
    'chat.update': (a) => {
      const id = str(a, 'channel');
      const m = findMessage(id, str(a, 'ts'));
      if (!m || !id) return fail('message_not_found');
      if (m.user !== identity.botUserId) return fail('cant_update_message');
      const content = contentOf(a);
      if (!content) return fail('no_text');
      m.text = content.text;
      m.blocks = content.blocks;
      m.attachments = content.attachments;
      if (!m.blocks) delete m.blocks;
      if (!m.attachments) delete m.attachments;
      m.edited = { user: identity.botUserId, ts: nextTs() };
      m.local.versions.push({ text: m.text, at: Date.now(), method: 'chat.update' });
      return { channel: id, ts: m.ts, text: m.text, message: toSlack(m) };
    },
    'chat.delete': (a) => {
      const m = findMessage(str(a, 'channel'), str(a, 'ts'));
      if (!m) return fail('message_not_found');
      if (m.user !== identity.botUserId) return fail('cant_delete_message');
      m.local.deleted = true;
      return { channel: m.channel, ts: m.ts };
    },
    'chat.postEphemeral': (a) => {
      const id = str(a, 'channel');
      const user = str(a, 'user');
      if (!ensureChannel(id) || !id) return fail('channel_not_found');
      if (!user) return fail('user_not_in_channel');
      const content = contentOf(a);
      if (!content) return fail('no_text');
      const thread = workspace.threadRoot(id, str(a, 'thread_ts'));
      const via = 'chat.postEphemeral';
      const message: StoredMessage & { visibleTo: string } = {
        channel: id,
        ts: nextTs(),
        user: identity.botUserId,
        bot_id: identity.botId,
        team: identity.teamId,
        ...content,
        visibleTo: user,
        ...(thread ? { thread_ts: thread } : {}),
        local: { createdAt: Date.now(), via, versions: [{ text: content.text, at: Date.now(), method: via }] },
      };
      workspace.ephemeral.push(message);
      return { message_ts: message.ts };
    },
    'chat.startStream': (a) => {
      const id = str(a, 'channel');
      if (!ensureChannel(id) || !id) return fail('channel_not_found');
      if (!id.startsWith('D')) {
        if (!str(a, 'recipient_team_id')) return fail('missing_recipient_team_id');
        if (!str(a, 'recipient_user_id')) return fail('missing_recipient_user_id');
      }
      const m = storeMessage(workspace, id, { text: '', thread_ts: str(a, 'thread_ts') }, 'chat.startStream');
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
      if (reaction?.users.includes(identity.botUserId)) return fail('already_reacted');
      if (!reaction) m.reactions.push((reaction = { name, users: [], count: 0 }));
      reaction.users.push(identity.botUserId);
      reaction.count = reaction.users.length;
      return {};
    },
    'assistant.threads.setStatus': (a) => {
      const key = `${str(a, 'channel_id') ?? ''}:${str(a, 'thread_ts') ?? ''}`;
      const status = str(a, 'status');
      if (status) workspace.statuses.set(key, status);
      else workspace.statuses.delete(key);
      return {};
    },
  };
}
