// Before a run: messages posted in the thread while the agent was not running (or not addressed to
// it) are added to the log, and those from people, older than the run's prompt, to the context, in
// order, once each (by message id). The bot's own messages are logged but not re-added to the
// context, where its answers already are, and neither are those of people settings.json `access`
// refuses: what they may not ask the agent, they may not slip into its context either.
import type { Message, Thread } from 'chat';
import type { ContextEntry, LogEntry, LogVersion, StoreDeps } from './store.ts';
import { SECRET_PATTERNS, type SecretPattern } from '../policy/secret-filter.ts';
import { appendLog, readLog } from './store.ts';
import type { RunInput } from '../contracts.ts';
import { contextText } from './context-text.ts';
import { OPEN_ACCESS, workspaceOf, useRefusal, type Access } from '../policy/access.ts';
import { channelKeyOf, parseThreadId } from '../ids.ts';

export interface BackfillResult {
  logged: number;
  injected: number;
  /** log.jsonl as the backfill left it (read, or written with what it logged). */
  log: LogVersion;
}

/** How far back a run looks in its thread. */
const MAX_MESSAGES = 500;

function logEntry(message: Message): LogEntry {
  return {
    date: (message.metadata?.dateSent ?? new Date(0)).toISOString(),
    messageId: message.id,
    userId: message.author.userId,
    userName: message.author.userName || message.author.fullName || message.author.userId,
    text: message.text,
    isBot: message.author.isMe || message.author.isBot === true,
  };
}

/** The thread's messages oldest first, at most MAX_MESSAGES. */
async function threadMessages(thread: Thread): Promise<Message[]> {
  const all: Message[] = [];
  for await (const message of thread.allMessages) {
    if (all.length >= MAX_MESSAGES) break;
    all.push(message);
  }
  return all;
}

/** What a backfill compares: the thread's log and its messages, oldest first. */
export type ThreadHistory = [log: LogVersion, messages: Message[]];

/** The log and the thread's messages at once (neither needs the other): a caller may start this early. */
export const readThreadHistory = (store: StoreDeps, thread: Thread, threadId: string): Promise<ThreadHistory> =>
  Promise.all([readLog(store, threadId), threadMessages(thread)]);

export async function backfill(
  store: StoreDeps,
  thread: Thread,
  run: RunInput,
  context: ContextEntry[],
  secrets: SecretPattern[] = SECRET_PATTERNS,
  access: Access = OPEN_ACCESS,
  /** readThreadHistory's answer, when the caller started it (else it is read here). */
  history: Promise<ThreadHistory> = readThreadHistory(store, thread, run.threadId),
): Promise<BackfillResult> {
  const { adapter } = parseThreadId(run.threadId);
  const admitted = (m: Message) =>
    !useRefusal(access, { adapter, userId: m.author.userId, workspace: workspaceOf(adapter, m.raw) }, channelKeyOf(run.threadId));
  const [log, all] = await history;
  const logged = new Set(log.entries.map((e) => e.messageId));
  const inContext = new Set(context.flatMap((e) => (e.meta.messageId ? [e.meta.messageId] : [])));
  // Timestamps can tie at millisecond precision, so "before the prompt" is the platform's order,
  // with the prompt's time as the fallback for prompts (events) that are not messages of the thread.
  const promptIndex = all.findIndex((m) => m.id === run.prompt.messageId);
  const promptTime = Date.parse(run.prompt.postedAt);
  const isEarlier = (m: Message, index: number) =>
    promptIndex >= 0 ? index < promptIndex : (m.metadata?.dateSent?.getTime() ?? 0) <= promptTime;
  const fresh = all.map((m, index) => ({ m, index })).filter(({ m }) => !logged.has(m.id) && m.id !== run.prompt.messageId);
  const written = fresh.length
    ? await appendLog(
        store,
        run.threadId,
        fresh.map(({ m }) => logEntry(m)),
        secrets,
        log,
      )
    : { appended: 0, log };
  // Later messages are prompts of their own and reach the context in their own runs.
  const missed = fresh
    .filter(({ m, index }) => isEarlier(m, index) && !inContext.has(m.id) && m.text.trim() && admitted(m))
    .map(({ m }) => logEntry(m))
    .filter((e) => !e.isBot);
  for (const entry of missed) {
    context.push({
      role: 'user',
      content: [{ text: contextText(entry.userName, entry.text) }],
      meta: { runId: run.runId, messageId: entry.messageId, at: entry.date },
    });
  }
  return { logged: written.appended, injected: missed.length, log: written.log };
}
