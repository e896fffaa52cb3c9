// The Chat SDK state as a webhook uses it. Every call here is a DynamoDB round trip inside Slack's
// 3-second ack, and the Slack adapter makes several per delivery that the webhook has no use for.
// Slack sends a mention twice (`message` and `app_mention`), so each one costs double. What is kept:
// the SDK's per-message dedupe (one conditional write per delivery: a redelivered or doubled event
// enqueues once), subscriptions, and everything our own handlers write. What is not:
//
// - `slack:event-delivered:<event id>` markers, written on every delivery and read on retries: a
//   retried message event carries the same message ts, which the SDK's dedupe already stops, and
//   the webhook acts on no other event type.
// - `slack:thread-participants:<thread>` lists, read and appended on every delivery: they only help
//   the SDK turn an outgoing `@name` that several users share into a ping; without them such a name
//   stays plain text (a unique name still pings, from the user index lookups keep writing).
// - user profiles are read once per warm function instance and kept for USER_MEMO_MS (the SDK
//   keeps them in the table for days; a renamed user shows the new name within that time).
// - whether a mention's thread is subscribed: the SDK asks it only to choose between the handlers
//   of a new mention and of a subscribed thread's message, and for a mention ours do the same
//   (admit it), the new-mention one also subscribing the thread (one idempotent write, beside the
//   enqueue). So a mention is routed as new without the read (routeMentionsUnread): one round
//   trip less inside the ack. Any other message still reads the subscription.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Adapter, Chat, Message, StateAdapter } from 'chat';

/** How long a warm webhook reuses a user profile it read or wrote. */
export const USER_MEMO_MS = 10 * 60_000;

const SKIPPED_VALUES = ['slack:event-delivered:'];
const SKIPPED_LISTS = ['slack:thread-participants:'];
const MEMOIZED_VALUES = ['slack:user:'];

const startsWithAny = (key: string, prefixes: readonly string[]) => prefixes.some((prefix) => key.startsWith(prefix));

/** The message the SDK is routing in this async context, until it has asked whether its thread is subscribed. */
interface Routing {
  threadId: string;
  message?: Message;
  asked: boolean;
}

const routing = new AsyncLocalStorage<Routing>();

/**
 * Each message `chat` receives is routed in its own context, which remembers the message once the
 * adapter has built it: the webhook state then answers the SDK's subscription check for a mention
 * without reading it (see the top of this file). The SDK marks the message as a mention before it
 * asks; a message it has not marked is read as before.
 */
export function routeMentionsUnread(chat: Pick<Chat, 'processMessage'>): void {
  const processMessage = chat.processMessage.bind(chat);
  chat.processMessage = (adapter: Adapter, threadId: string, message: Message | (() => Promise<Message>), options) => {
    const context: Routing = { threadId, asked: false };
    const remembered = async () => (context.message = typeof message === 'function' ? await message() : message);
    return routing.run(context, () => processMessage(adapter, threadId, remembered, options));
  };
}

/** A mention's subscription check, answered without a read: the first check of its routing, for its own thread. */
function routedAsNewMention(threadId: string): boolean {
  const context = routing.getStore();
  if (!context || context.asked || context.threadId !== threadId) return false;
  context.asked = true;
  return context.message?.isMention === true;
}

export function webhookState(state: StateAdapter, now: () => number = Date.now): StateAdapter {
  const memo = new Map<string, { value: unknown; until: number }>();
  const remember = (key: string, value: unknown) => {
    if (startsWithAny(key, MEMOIZED_VALUES)) memo.set(key, { value, until: now() + USER_MEMO_MS });
  };
  return {
    // The DynamoDB adapter is a plain object of closures: spreading it keeps every other method.
    ...state,
    async get<T>(key: string): Promise<T | null> {
      if (startsWithAny(key, SKIPPED_VALUES)) return null;
      const kept = memo.get(key);
      if (kept && kept.until > now()) return kept.value as T;
      const value = await state.get<T>(key);
      if (value !== null) remember(key, value);
      return value;
    },
    async set(key, value, ttlMs) {
      if (startsWithAny(key, SKIPPED_VALUES)) return;
      await state.set(key, value, ttlMs);
      remember(key, value);
    },
    async delete(key) {
      memo.delete(key);
      await state.delete(key);
    },
    async isSubscribed(threadId) {
      return routedAsNewMention(threadId) ? false : state.isSubscribed(threadId);
    },
    async getList<T>(key: string): Promise<T[]> {
      return startsWithAny(key, SKIPPED_LISTS) ? [] : state.getList<T>(key);
    },
    async appendToList(key, value, options) {
      if (startsWithAny(key, SKIPPED_LISTS)) return;
      await state.appendToList(key, value, options);
    },
  };
}
