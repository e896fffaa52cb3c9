// Teams' native streaming, for personal chats: the reply appears as it is written, through typing
// activities that carry the text so far and a `streaminfo` entity (the first one's id names the
// stream), then one final message activity. Teams takes at most one update a second and ends a
// stream two minutes after it began: an update is sent only a second after the last one, and at
// STREAM_LIMIT_MS the stream is closed with the text so far and the rest of the reply follows as
// a normal message.
import type { Logger, StreamChunk } from 'chat';

export const STREAM_UPDATE_MS = 1000;
/** Under Teams' two minutes, with room for the final activity. */
export const STREAM_LIMIT_MS = 110_000;

export interface NativeStreamOptions {
  textStream: AsyncIterable<string | StreamChunk>;
  /** Sends an activity to the conversation; answers its id. */
  send(activity: Record<string, unknown>): Promise<string | undefined>;
  logger: Logger;
  now?: () => number;
  limitMs?: number;
}

const streamInfo = (fields: Record<string, unknown>) => [{ type: 'streaminfo', ...fields }];

/** Streams the text; answers the id and text of the last message it posted. */
export async function streamNatively(options: NativeStreamOptions): Promise<{ id: string; text: string }> {
  const now = options.now ?? Date.now;
  const limit = options.limitMs ?? STREAM_LIMIT_MS;
  const startedAt = now();
  let streamId: string | undefined;
  let sequence = 0;
  let streamed = '';
  let rest = '';
  let sentAt = -Infinity;
  let closed = false;
  const final = async () => {
    closed = true;
    const body = { type: 'message', text: streamed, textFormat: 'markdown', entities: streamInfo({ streamId, streamType: 'final' }) };
    return (await options.send(body)) ?? streamId ?? '';
  };
  let lastId = '';
  for await (const chunk of options.textStream) {
    const text = typeof chunk === 'string' ? chunk : chunk.type === 'markdown_text' ? chunk.text : '';
    if (!text) continue;
    if (closed) {
      rest += text;
      continue;
    }
    streamed += text;
    if (now() - startedAt >= limit) {
      options.logger.info('Teams stream at its time limit: the rest of the reply follows as a message', { streamId });
      lastId = await final();
      continue;
    }
    if (now() - sentAt < STREAM_UPDATE_MS) continue;
    sentAt = now();
    const id = await options.send({
      type: 'typing',
      text: streamed,
      entities: streamInfo({ ...(streamId ? { streamId } : {}), streamType: 'streaming', streamSequence: ++sequence }),
    });
    streamId ??= id;
  }
  if (!closed && streamed) lastId = await final();
  if (rest) {
    lastId = (await options.send({ type: 'message', text: rest, textFormat: 'markdown' })) ?? '';
    return { id: lastId, text: rest };
  }
  return { id: lastId, text: streamed };
}
