// How the agent's replies stream into Teams. Replies are sent from agent-step, long after the
// webhook request, so the adapter's native stream (bound to the request) never exists: a reply is
// posted and then edited as the model writes, like Slack's fallback. Teams throttles edits of one
// message hard, so edits of a message are at least MIN_EDIT_INTERVAL_MS apart, and an edit answered
// with 429 waits (Retry-After, or a doubling backoff) and is sent again rather than dropped.
import { setTimeout as sleep } from 'node:timers/promises';
import type { TeamsAdapter } from './chat.ts';

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

export function paceTeamsReplies(adapter: TeamsAdapter, options: PacingOptions = {}): TeamsAdapter {
  const minInterval = options.minEditIntervalMs ?? MIN_EDIT_INTERVAL_MS;
  const now = options.now ?? Date.now;
  const wait = options.sleep ?? sleep;
  const lastEdit = new Map<string, number>();
  const edit = adapter.editMessage.bind(adapter);
  // Without the request's native stream the adapter would buffer the whole reply and post it at the
  // end; without `stream` the Chat SDK posts and edits instead.
  Object.defineProperty(adapter, 'stream', { value: undefined, configurable: true });
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
        const backoff = error.retryAfter ? error.retryAfter * 1000 : minInterval * 2 ** attempt;
        lastEdit.set(messageId, now() + backoff - minInterval);
      }
    }
  };
  return adapter;
}
