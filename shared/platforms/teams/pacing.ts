// How the agent's replies are edited in Teams. Outside personal chats (which stream natively) a reply
// is posted and then edited as the model writes, like Slack's fallback. Teams throttles edits of one
// message hard, so edits of a message are at least MIN_EDIT_INTERVAL_MS apart, and an edit answered
// with 429 waits (Retry-After, or a doubling backoff) and is sent again rather than dropped.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Adapter } from 'chat';

export const MIN_EDIT_INTERVAL_MS = 1500;
const MAX_EDIT_ATTEMPTS = 5;

export interface PacingOptions {
  minEditIntervalMs?: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<unknown>;
}

const isRateLimited = (error: unknown): error is { retryAfter?: number } =>
  typeof error === 'object' &&
  error !== null &&
  ((error as { code?: string }).code === 'RATE_LIMITED' || (error as Error).name === 'AdapterRateLimitError');

export function paceTeamsReplies<A extends Adapter>(adapter: A, options: PacingOptions = {}): A {
  const minInterval = options.minEditIntervalMs ?? MIN_EDIT_INTERVAL_MS;
  const now = options.now ?? Date.now;
  const wait = options.sleep ?? sleep;
  const lastEdit = new Map<string, number>();
  const edit = adapter.editMessage.bind(adapter);
  adapter.editMessage = async (threadId, messageId, message) => {
    for (let attempt = 1; ; attempt++) {
      const due = (lastEdit.get(messageId) ?? 0) + minInterval;
      if (now() < due) await wait(due - now());
      try {
        const edited = await edit(threadId, messageId, message);
        // Counted from the answer: the next edit then reaches Teams at least the interval after this one.
        lastEdit.set(messageId, now());
        return edited;
      } catch (error) {
        if (!isRateLimited(error) || attempt >= MAX_EDIT_ATTEMPTS) throw error;
        // Retry-After when Teams gives one, never sooner than the usual interval; else a doubling backoff.
        const backoff = error.retryAfter ? Math.max(error.retryAfter * 1000, minInterval) : minInterval * 2 ** attempt;
        lastEdit.set(messageId, now() + backoff - minInterval);
      }
    }
  };
  return adapter;
}
