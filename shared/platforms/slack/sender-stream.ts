// A reply streamed natively into a Slack thread, as the Chat SDK's Slack adapter streams it: the text
// that can be shown safely (the SDK's StreamingMarkdownRenderer holds back an unfinished line, table
// or fence) goes out through chat.startStream / chat.appendStream / chat.stopStream, gathered into
// pieces of at least 256 characters (a reply that ends before its first piece is simply posted). Slack
// ends a stream after about five minutes, so a reply that
// streams longer is finished at a paragraph break and continues in a new message (an open code fence
// closed and reopened, a table's header repeated). When Slack refuses the first piece, the reply is
// posted and edited instead.
import { SlackApiError, type SlackApiResponse } from '@chat-adapter/slack/api';
import { StreamingMarkdownRenderer, type AdapterPostableMessage, type Logger, type RawMessage, type StreamChunk } from 'chat';

/** Text gathered before a start or append call, as @slack/web-api's chat streamer does. */
export const STREAM_PIECE_CHARS = 256;
/** A streamed message older than this continues in a new one at the next paragraph break… */
export const SEGMENT_MAX_AGE_MS = 240_000;
/** …or, without one, once it is this much older still. */
export const SEGMENT_GRACE_MS = 30_000;
/** Slack's answers that mean this app cannot stream at all. */
const CANNOT_STREAM = new Set(['feature_not_enabled', 'method_deprecated', 'unknown_method']);
const STREAM_EXPIRED = 'message_not_in_streaming_state';
const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/;
const TABLE_ROW = /^\|.*\|$/;
const TABLE_RULE = /^\|[\s:]*-+[\s:]*(?:\|[\s:]*-+[\s:]*)*\|$/;

export interface StreamTarget {
  channel: string;
  thread_ts: string;
  recipient_user_id?: string;
  recipient_team_id?: string;
}

export interface SlackStreamOptions {
  call(method: string, body: Record<string, unknown>): Promise<SlackApiResponse>;
  /** Posting and editing, for a reply Slack would not stream. */
  post(message: AdapterPostableMessage): Promise<RawMessage<unknown>>;
  edit(messageId: string, message: AdapterPostableMessage): Promise<RawMessage<unknown>>;
  target: StreamTarget;
  textStream: AsyncIterable<string | StreamChunk>;
  signal?: AbortSignal;
  /** How often a posted-and-edited reply is edited. */
  updateIntervalMs: number;
  logger: Logger;
  /** Slack answered that this app cannot stream: later replies should not try. */
  onUnsupported(): void;
  now?: () => number;
}

const slackError = (error: unknown) => (error instanceof SlackApiError ? error.response?.error : undefined);

/** The code fence `text` leaves open, if any: its opening line and marker. */
function openFence(text: string): { opening: string; marker: string } | undefined {
  let open: { opening: string; marker: string } | undefined;
  for (const line of text.split('\n')) {
    const match = FENCE.exec(line);
    if (!match) continue;
    const [, marker, info] = match as unknown as [string, string, string];
    if (!open) {
      // A backtick fence's info string may not hold a backtick (then the line is not a fence).
      if (!(marker.startsWith('`') && info.includes('`'))) open = { opening: line.trimEnd(), marker };
    } else if (marker[0] === open.marker[0] && marker.length >= open.marker.length && info.trim() === '') {
      open = undefined;
    }
  }
  return open;
}

/** The header and rule of the table `text` ends in (complete lines), to repeat before its next rows; '' when none. */
function tableHead(text: string): string {
  if (!text.endsWith('\n')) return '';
  const lines = text.split('\n').slice(0, -1);
  let first = lines.length;
  while (first > 0 && TABLE_ROW.test(lines[first - 1]!.trim())) first--;
  const rows = lines.slice(first);
  const rule = rows.findIndex((row) => TABLE_RULE.test(row.trim()));
  return rule >= 1 ? `${rows[rule - 1]}\n${rows[rule]}\n` : '';
}

/** Where a segment's text is cut at rotation: after its last paragraph break, else its last line. */
function cutAt(text: string): number {
  const paragraph = text.lastIndexOf('\n\n');
  return paragraph >= 0 ? paragraph + 2 : text.lastIndexOf('\n') + 1;
}

/** One streamed message: text gathered into pieces, started on the first piece, stopped with the rest. */
class Segment {
  ts: string | undefined;
  startedAt: number | undefined;
  private pending = '';
  /** Set on a segment that continues a reply: its first text goes out at once. */
  private flushNext = false;
  /** Put before this segment's first text: a reopened fence, or a table header before a table row. */
  private fence = '';
  private header = '';

  constructor(
    private readonly options: SlackStreamOptions,
    /** The text earlier segments showed, when this one continues them. */
    continues?: string,
  ) {
    if (continues === undefined) return;
    this.flushNext = true;
    const fence = openFence(continues);
    if (fence) this.fence = `${fence.opening}\n`;
    else this.header = tableHead(continues);
  }

  /** Adds text; answers whether a call was made (the text so far reached Slack). */
  async append(text: string): Promise<boolean> {
    this.pending += text;
    if (this.pending.length < STREAM_PIECE_CHARS && !this.flushNext) return false;
    this.flushNext = false;
    const chunks = [{ type: 'markdown_text', text: this.pending }];
    const { target } = this.options;
    if (this.ts === undefined) {
      const started = await this.options.call('chat.startStream', { ...target, chunks });
      this.ts = String(started.ts);
    } else {
      await this.options.call('chat.appendStream', { channel: target.channel, ts: this.ts, chunks });
    }
    this.pending = '';
    return true;
  }

  async stop(text = ''): Promise<SlackApiResponse> {
    this.pending += text;
    const { target } = this.options;
    if (this.ts === undefined) {
      const started = await this.options.call('chat.startStream', { ...target });
      if (!started.ts) throw new Error('failed to stop stream: stream not started');
      this.ts = String(started.ts);
    }
    const chunks = this.pending ? [{ type: 'markdown_text', text: this.pending }] : [];
    this.pending = '';
    return this.options.call('chat.stopStream', { channel: target.channel, ts: this.ts, chunks });
  }

  /** The text with what must come before this segment's first text. */
  led(text: string): string {
    const header = TABLE_ROW.test(text.split('\n', 1)[0]!.trim()) ? this.header : '';
    const led = this.fence + header + text;
    this.fence = this.header = '';
    return led;
  }
}

/** Streams the reply; answers its last message, or null when nothing was posted (the caller then posts and edits). */
export async function streamToSlack(options: SlackStreamOptions): Promise<{ id: string; raw: unknown } | null> {
  const now = options.now ?? Date.now;
  const renderer = new StreamingMarkdownRenderer({ wrapTablesForAppend: false });
  let segment = new Segment(options);
  /** Committed text handed to segments so far, and the part of it Slack confirmed. */
  let given = '';
  let confirmed = '';
  let shown = false;
  let fallback: { message: RawMessage<unknown> | null; sent: string; at: number } | undefined;

  const age = () => (segment.startedAt === undefined ? 0 : now() - segment.startedAt);
  const started = () => {
    segment.startedAt ??= now();
    shown = true;
  };

  /** A new segment after `sent`, which the last one showed (or was to show). */
  const nextSegment = (sent: string) => (segment = new Segment(options, sent));

  /** Finishes the current segment with the head of `delta`; answers the rest, for the next segment. */
  const rotate = async (delta: string): Promise<string> => {
    let head = delta.slice(0, cutAt(delta));
    let tail = delta.slice(head.length);
    let sent = given + head;
    let fence = openFence(sent);
    // A fence closed by the very next line is closed in this segment, not carried over.
    if (fence && sent.endsWith('\n') && openFence(`${fence.opening}\n${tail.split('\n', 1)[0]}`) === undefined) {
      head += tail;
      sent += tail;
      tail = '';
      fence = undefined;
    }
    const closer = fence ? `${sent.endsWith('\n') ? '' : '\n'}${fence.marker}` : '';
    try {
      await segment.stop((head ? segment.led(head) : '') + closer);
      confirmed = sent;
    } catch (error) {
      if (slackError(error) !== STREAM_EXPIRED) throw error;
      options.logger.warn('Slack: stream segment expired before rotation, continuing in a new message', {
        channel: options.target.channel,
      });
      tail = given.slice(confirmed.length) + delta;
      sent = confirmed;
    }
    nextSegment(sent);
    return tail;
  };

  const flushFallback = async (force: boolean) => {
    const text = renderer.getCommittableText();
    if (!fallback || !text || text === fallback.sent) return;
    if (!force && now() - fallback.at < options.updateIntervalMs) return;
    if (fallback.message) await options.edit(fallback.message.id, { markdown: text });
    else fallback.message = await options.post({ markdown: text });
    fallback.sent = text;
    fallback.at = now();
  };

  const toFallback = (error: unknown) => {
    fallback = { message: null, sent: '', at: 0 };
    if (CANNOT_STREAM.has(slackError(error) ?? '')) options.onUnsupported();
    options.logger.warn('Slack native streaming unavailable, falling back to post-and-edit', { channel: options.target.channel, error });
  };

  const flush = async (force: boolean) => {
    if (fallback) return flushFallback(force);
    const delta = renderer.getCommittableText().slice(given.length);
    if (!delta) return;
    try {
      const due = age() >= SEGMENT_MAX_AGE_MS && (delta.includes('\n\n') || age() >= SEGMENT_MAX_AGE_MS + SEGMENT_GRACE_MS);
      const text = due ? await rotate(delta) : delta;
      if (text && (await segment.append(segment.led(text)))) {
        started();
        confirmed = given + delta;
      }
      given += delta;
    } catch (error) {
      if (shown) throw error;
      toFallback(error);
      await flushFallback(force);
    }
  };

  for await (const chunk of options.textStream) {
    if (options.signal?.aborted) break;
    const text = typeof chunk === 'string' ? chunk : chunk.type === 'markdown_text' ? chunk.text : '';
    // Task and plan cards are not streamed here: the agent's replies are text.
    if (!text) continue;
    renderer.push(text);
    await flush(false);
  }
  renderer.finish();
  await flush(true);
  if (fallback) return fallback.message && { id: fallback.message.id, raw: fallback.message.raw };
  if (segment.ts === undefined && given) {
    // The whole reply came before its first piece filled (most short answers): one chat.postMessage
    // of the same markdown instead of chat.startStream and chat.stopStream, a round trip fewer.
    const posted = await options.post({ markdown: given });
    return { id: posted.id, raw: posted.raw };
  }
  let stopped: SlackApiResponse;
  try {
    stopped = await segment.stop();
  } catch (error) {
    if (!shown) {
      toFallback(error);
      await flushFallback(true);
      return fallback!.message && { id: fallback!.message.id, raw: fallback!.message.raw };
    }
    if (slackError(error) !== STREAM_EXPIRED) throw error;
    const unconfirmed = given.slice(confirmed.length);
    if (!unconfirmed) {
      if (!segment.ts) throw error;
      options.logger.warn('Slack: stream expired before stop', { channel: options.target.channel, messageId: segment.ts });
      return { id: segment.ts, raw: { ts: segment.ts } };
    }
    options.logger.warn('Slack: stream expired before stop, delivering the rest in a new message', { channel: options.target.channel });
    nextSegment(confirmed);
    stopped = await segment.stop(segment.led(unconfirmed));
  }
  const message = stopped.message as { ts?: string } | undefined;
  return { id: String(message?.ts ?? stopped.ts), raw: stopped };
}
