// The Bot Connector API subset the Teams adapter calls on a conversation's serviceUrl: send, reply,
// update and delete activities (targeted ones too), and look up members. Every call needs a token
// the stand-in's token endpoint issued. Updates can be rate-limited to exercise the bot's backoff.
// Native streaming as Teams does it in personal chats: a typing activity with a `streaminfo` entity
// starts a message (its id is the stream's), later ones with that streamId and a higher sequence
// replace its text, and a message activity with streamType "final" ends it; Teams refuses updates
// to a stream more than two minutes old, to an ended stream, and streaming outside personal chats.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { nextActivityId, type StoredActivity, type TeamsState } from './state.ts';

export interface RateLimit {
  limit: number;
  windowMs: number;
}

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  void res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));

export function createConnector(state: TeamsState) {
  const rateLimits: { update?: RateLimit } = {};
  const updateTimes: number[] = [];
  const throttled: { at: number }[] = [];
  /** Every update the bot attempted, answered or refused with 429, in order. */
  const updates: { conversationId: string; activityId: string; at: number; status: number; retryAfterSeconds?: number }[] = [];

  function limited(kind: 'update'): number | undefined {
    const limit = rateLimits[kind];
    if (!limit) return undefined;
    const now = Date.now();
    while (updateTimes.length && updateTimes[0]! <= now - limit.windowMs) updateTimes.shift();
    if (updateTimes.length >= limit.limit) return Math.ceil((updateTimes[0]! + limit.windowMs - now) / 1000);
    updateTimes.push(now);
    return undefined;
  }

  function handle(req: IncomingMessage, res: ServerResponse, path: string, query: URLSearchParams, body: Buffer): void {
    const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!token || !state.issuedTokens.has(token)) return json(res, 401, { error: { code: 'Unauthorized', message: 'no valid bot token' } });
    const parts = path.split('/').filter(Boolean).map(decodeURIComponent); // v3, conversations, id, ...
    const [, , conversationId, collection, itemId] = parts;
    if (!conversationId) return json(res, 404, { error: { code: 'NotFound' } });
    const input = body.length ? (JSON.parse(body.toString('utf8')) as Record<string, unknown>) : {};
    const targeted = query.get('isTargetedActivity') === 'true';
    if (collection === 'members') {
      const member = itemId ? state.users.get(itemId) : undefined;
      if (itemId && !member) return json(res, 404, { error: { code: 'MemberNotFound' } });
      const shape = (u: { id: string; name: string; aadObjectId: string }) => ({
        ...u,
        email: `${u.name.toLowerCase().replace(/\s+/g, '.')}@example.com`,
      });
      return json(res, 200, member ? shape(member) : [...state.users.values()].map(shape));
    }
    if (collection !== 'activities') return json(res, 404, { error: { code: 'NotFound' } });
    const info = (input.entities as { type?: string; streamId?: string; streamType?: string; streamSequence?: number }[] | undefined)?.find(
      (e) => e.type === 'streaminfo',
    );
    if (req.method === 'POST' && info) return stream(res, conversationId, input, info);
    if (req.method === 'POST') {
      const activity: StoredActivity = {
        id: nextActivityId(),
        type: String(input.type ?? 'message'),
        conversationId,
        from: (input.from as StoredActivity['from']) ?? { id: 'bot' },
        text: input.text as string | undefined,
        replyToId: itemId ?? (input.replyToId as string | undefined),
        attachments: input.attachments as unknown[] | undefined,
        entities: input.entities as unknown[] | undefined,
        channelData: input.channelData,
        targeted,
        edits: 0,
        deleted: false,
        timestamp: new Date().toISOString(),
      };
      state.add(activity);
      return json(res, 201, { id: activity.id });
    }
    const existing = itemId ? state.find(conversationId, itemId) : undefined;
    if (!existing) return json(res, 404, { error: { code: 'ActivityNotFound' } });
    if (req.method === 'PUT') {
      const retryAfter = limited('update');
      updates.push({
        conversationId,
        activityId: existing.id,
        at: Date.now(),
        status: retryAfter === undefined ? 200 : 429,
        ...(retryAfter === undefined ? {} : { retryAfterSeconds: retryAfter }),
      });
      if (retryAfter !== undefined) {
        throttled.push({ at: Date.now() });
        return json(res, 429, { error: { code: 'TooManyRequests' } }, { 'retry-after': String(retryAfter) });
      }
      existing.text = input.text as string | undefined;
      existing.attachments = input.attachments as unknown[] | undefined;
      existing.edits++;
      return json(res, 200, { id: existing.id });
    }
    if (req.method === 'DELETE') {
      existing.deleted = true;
      return json(res, 200, {});
    }
    return json(res, 405, { error: { code: 'MethodNotAllowed' } });
  }

  /** Teams' limit on one streamed message. */
  const STREAM_MAX_MS = 2 * 60 * 1000;

  function stream(
    res: ServerResponse,
    conversationId: string,
    input: Record<string, unknown>,
    info: { streamId?: string; streamType?: string; streamSequence?: number },
  ): void {
    const refuse = (message: string) => json(res, 403, { error: { code: 'ContentStreamNotAllowed', message } });
    // A conversation the stand-in did not start (a recorded activity) is personal when its id says so.
    const type = state.conversationTypes.get(conversationId) ?? (conversationId.startsWith('19:') ? 'channel' : 'personal');
    if (type !== 'personal') return refuse('streaming is only supported in personal chats');
    const text = typeof input.text === 'string' ? input.text : '';
    if (!info.streamId) {
      if (info.streamType === 'final') return refuse('a final stream message needs the streamId');
      const activity = state.add({
        id: nextActivityId(),
        type: 'message',
        conversationId,
        from: (input.from as StoredActivity['from']) ?? { id: 'bot' },
        text,
        edits: 0,
        deleted: false,
        timestamp: new Date().toISOString(),
        stream: { startedAt: Date.now(), sequence: info.streamSequence ?? 1, updates: 1, final: false },
      });
      return json(res, 201, { id: activity.id });
    }
    const streamed = state.find(conversationId, info.streamId);
    if (!streamed?.stream) return json(res, 404, { error: { code: 'ActivityNotFound' } });
    if (streamed.stream.final) return refuse('the stream has ended');
    if (Date.now() - streamed.stream.startedAt > STREAM_MAX_MS) return refuse('the stream is older than two minutes');
    if (info.streamType === 'final') {
      streamed.stream.final = true;
      streamed.text = text;
      streamed.attachments = input.attachments as unknown[] | undefined;
      return json(res, 201, { id: streamed.id });
    }
    if ((info.streamSequence ?? 0) <= streamed.stream.sequence)
      return json(res, 400, { error: { code: 'BadArgument', message: 'streamSequence must increase' } });
    streamed.stream.sequence = info.streamSequence!;
    streamed.stream.updates++;
    streamed.text = text;
    return json(res, 201, { id: streamed.id });
  }

  return { handle, rateLimits, throttled, updates };
}
