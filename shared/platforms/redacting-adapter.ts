// The one place every message the bot sends passes the secret filter: createAgentChat wraps each
// platform adapter in this before the Chat SDK sees it, so a post, an edit, a streamed reply, an
// ephemeral reply, a file's comment, a card or a status line cannot leave unfiltered, whichever
// function or step sends it. Reading, deleting and everything else pass through unchanged.
import {
  ThreadImpl,
  type Adapter,
  type AdapterPostableMessage,
  type PostEphemeralOptions,
  type StateAdapter,
  type StreamChunk,
  type StreamOptions,
} from 'chat';
import { createStreamRedactor, redactSecrets, type SecretPattern } from '../policy/secret-filter.ts';

/** The patterns to redact with now: the built-in ones and the deployment's own. */
export type SecretSource = () => Promise<SecretPattern[]>;

const isPlainObject = (value: object) => [Object.prototype, null].includes(Object.getPrototypeOf(value));

/** Every string in `value`, at any depth of plain objects and arrays, redacted; bytes, functions and class instances as they are. */
export function redactValue<T>(value: T, patterns: SecretPattern[]): T {
  if (typeof value === 'string') return redactSecrets(value, patterns) as T;
  if (Array.isArray(value)) return value.map((item: unknown) => redactValue(item, patterns)) as T;
  if (value && typeof value === 'object' && isPlainObject(value)) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, redactValue(item, patterns)])) as T;
  }
  return value;
}

/** A stream of text with the secrets redacted: text is held back until no secret can be arriving (createStreamRedactor). */
async function* redactedStream(
  source: AsyncIterable<string | StreamChunk>,
  patterns: SecretPattern[],
): AsyncIterable<string | StreamChunk> {
  const redactor = createStreamRedactor(patterns);
  for await (const piece of source) {
    if (typeof piece === 'string' || piece.type === 'markdown_text') {
      const safe = redactor.push(typeof piece === 'string' ? piece : piece.text);
      if (safe) yield safe;
      continue;
    }
    // A task or plan update goes out after the text before it.
    const held = redactor.flush();
    if (held) yield held;
    yield redactValue(piece, patterns);
  }
  const rest = redactor.flush();
  if (rest) yield rest;
}

/**
 * Every member of the Chat SDK's Adapter, and whether it sends text to the platform (then it is
 * redacted here). `satisfies` makes a Chat SDK upgrade that adds a member fail the typecheck until
 * the member is placed, so a new way to send cannot slip past the filter.
 */
const SENDS = {
  postMessage: true,
  editMessage: true,
  postEphemeral: true,
  postChannelMessage: true,
  reply: true,
  scheduleMessage: true,
  postObject: true,
  editObject: true,
  openModal: true,
  startTyping: true,
  stream: true,
  // Reading, deleting, reactions (an emoji name), webhooks, ids, and the adapter's own settings.
  addReaction: false,
  removeReaction: false,
  deleteMessage: false,
  endTyping: false,
  markAsRead: false,
  fetchChannelInfo: false,
  fetchChannelMessages: false,
  fetchMessage: false,
  fetchMessages: false,
  fetchSubject: false,
  fetchThread: false,
  listThreads: false,
  getUser: false,
  getChannelVisibility: false,
  openDM: false,
  onThreadSubscribe: false,
  handleWebhook: false,
  initialize: false,
  disconnect: false,
  parseMessage: false,
  renderFormatted: false,
  rehydrateAttachment: false,
  channelIdFromThreadId: false,
  decodeThreadId: false,
  encodeThreadId: false,
  isDM: false,
  lockScope: false,
  persistMessageHistory: false,
  persistThreadHistory: false,
  supportsTurnCancellation: false,
  name: false,
  userName: false,
  botUserId: false,
} as const satisfies Record<keyof Adapter, boolean>;

type Sending = { [K in keyof typeof SENDS]: (typeof SENDS)[K] extends true ? K : never }[keyof typeof SENDS];

/** The adapter's own functions, bound to it (some adapters keep private state a proxy could not reach). */
function bound(adapter: Adapter, key: string | symbol): unknown {
  const value: unknown = Reflect.get(adapter, key, adapter);
  return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(adapter) : value;
}

/** The adapter seen without native streaming: the Chat SDK then posts a reply and edits it as text arrives. */
const withoutStream = (adapter: Adapter): Adapter =>
  new Proxy(adapter, { get: (target, key) => (key === 'stream' ? undefined : bound(target, key)) });

/**
 * `adapter` with every message it sends redacted with `secrets()`. A streamed reply is redacted as it
 * streams; where the platform cannot stream (a Slack thread without a recipient, a Teams channel),
 * the SDK's post-and-edit runs here, on the redacted text, rather than on the original.
 */
export function redactingAdapter<A extends Adapter>(adapter: A, secrets: SecretSource, state: StateAdapter): A {
  const redacting: Record<Sending, (...args: never[]) => unknown> = {
    postMessage: async (threadId: string, message: AdapterPostableMessage) =>
      adapter.postMessage(threadId, redactValue(message, await secrets())),
    editMessage: async (threadId: string, messageId: string, message: AdapterPostableMessage) =>
      adapter.editMessage(threadId, messageId, redactValue(message, await secrets())),
    postEphemeral: async (threadId: string, userId: string, message: AdapterPostableMessage, options?: PostEphemeralOptions) =>
      adapter.postEphemeral!(threadId, userId, redactValue(message, await secrets()), options),
    postChannelMessage: async (channelId: string, message: AdapterPostableMessage) =>
      adapter.postChannelMessage!(channelId, redactValue(message, await secrets())),
    reply: async (threadId: string, messageId: string, message: AdapterPostableMessage) =>
      adapter.reply!(threadId, messageId, redactValue(message, await secrets())),
    scheduleMessage: async (threadId: string, message: AdapterPostableMessage, options: { postAt: Date }) =>
      adapter.scheduleMessage!(threadId, redactValue(message, await secrets()), options),
    postObject: async (threadId: string, kind: string, data: unknown) =>
      adapter.postObject!(threadId, kind, redactValue(data, await secrets())),
    editObject: async (threadId: string, messageId: string, kind: string, data: unknown) =>
      adapter.editObject!(threadId, messageId, kind, redactValue(data, await secrets())),
    openModal: async (triggerId: string, modal: object, contextId?: string) =>
      adapter.openModal!(triggerId, redactValue(modal, await secrets()) as never, contextId),
    startTyping: async (threadId: string, status?: string, options?: object) =>
      adapter.startTyping(threadId, status === undefined ? status : redactSecrets(status, await secrets()), options),
    stream: async (threadId: string, textStream: AsyncIterable<string | StreamChunk>, options?: StreamOptions) => {
      const safe = redactedStream(textStream, await secrets());
      const native = await adapter.stream?.(threadId, safe, options);
      if (native) return native;
      const thread = new ThreadImpl({
        id: threadId,
        channelId: adapter.channelIdFromThreadId(threadId),
        adapter: withoutStream(adapter),
        stateAdapter: state,
        streamingUpdateIntervalMs: options?.updateIntervalMs,
        ...(options?.fallbackStreamingPlaceholderText !== undefined && {
          fallbackStreamingPlaceholderText: options.fallbackStreamingPlaceholderText,
        }),
        ...(options?.signal && { signal: options.signal }),
      });
      // Typed as text only, but the SDK reads chunks too (post-and-edit shows their text and skips the rest).
      const sent = await thread.post(safe as AsyncIterable<string>);
      return { id: sent.id, threadId: sent.threadId, raw: sent.raw };
    },
  };
  return new Proxy(adapter, {
    get(target, key) {
      const own = bound(target, key);
      // Always a stream (the SDK's own post-and-edit would read the unredacted text); the rest only where the platform has it.
      if (key === 'stream' || (typeof own === 'function' && SENDS[key as keyof Adapter] === true)) return redacting[key as Sending];
      return own;
    },
  });
}
