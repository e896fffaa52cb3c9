// Who sent something, as settings.json `access` names people: their platform, id and workspace.
import { EVENT_AUTHOR_ID, workspaceOf, type Person } from '../policy/access.ts';
import { parseThreadId } from '../ids.ts';
import type { Prompt } from '../contracts.ts';

/** The sender of a platform payload (`raw`: a message's, a slash command's, a button press's). */
export const personFrom = (adapter: string, author: { userId: string }, raw: unknown): Person => ({
  adapter,
  userId: author.userId,
  workspace: workspaceOf(adapter, raw),
});

/** The person behind a prompt; none for an event's prompt. */
export function personOf(prompt: Prompt): Person | undefined {
  if (prompt.author.userId === EVENT_AUTHOR_ID) return undefined;
  const raw = (prompt.thread as { currentMessage?: { raw?: unknown } }).currentMessage?.raw;
  return personFrom(parseThreadId(prompt.threadId).adapter, prompt.author, raw);
}

/** How a sender is named in the thread. */
export const nameOf = (author: { userId: string; userName?: string; fullName?: string }): string =>
  author.userName || author.fullName || author.userId;
