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
import type { StateAdapter } from 'chat';

/** How long a warm webhook reuses a user profile it read or wrote. */
export const USER_MEMO_MS = 10 * 60_000;

const SKIPPED_VALUES = ['slack:event-delivered:'];
const SKIPPED_LISTS = ['slack:thread-participants:'];
const MEMOIZED_VALUES = ['slack:user:'];

const startsWithAny = (key: string, prefixes: readonly string[]) => prefixes.some((prefix) => key.startsWith(prefix));

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
    async getList<T>(key: string): Promise<T[]> {
      return startsWithAny(key, SKIPPED_LISTS) ? [] : state.getList<T>(key);
    },
    async appendToList(key, value, options) {
      if (startsWithAny(key, SKIPPED_LISTS)) return;
      await state.appendToList(key, value, options);
    },
  };
}
