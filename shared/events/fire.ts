// An event firing becomes a prompt: for a thread, in that thread's actor (same queue and busy rules
// as a person's message); for a channel, the text is first posted to the channel, which creates a
// new thread, and the prompt runs there, so its replies stay together instead of filling the channel.
import type { SerializedThread } from 'chat';
import * as z from 'zod';
import type { AgentChat } from '../platforms/chat.ts';
import { platformOf } from '../platforms/platforms.ts';
import { postOnce, type LedgerDeps } from '../run/ledger.ts';
import { EVENT_RECORD, EVENTS_LEDGER } from '../table.ts';
import { causedBySchema, promptSourceSchema, promptTextSchema, type Prompt, type PromptFile } from '../contracts.ts';
import type { JsonLogger } from '../observability/log.ts';
import { checkEventTarget, eventTargetShape } from './target.ts';
import { EVENT_AUTHOR_ID } from '../policy/access.ts';

export const firingSchema = z
  .object({
    kind: z.enum(['scheduled', 'immediate', 'bus', 'trigger', 'upload']),
    /** The event file (or bus event source) this came from, for logs and the prompt's author name. */
    origin: z.string().min(1),
    /** Unique per firing: periodic schedules fire many times, and each firing must run. */
    firingId: z.string().min(1),
    text: promptTextSchema.min(1),
    note: z.string().optional(),
    heartbeat: z.boolean().optional(),
    /** The event file was written by a run this many events deep (see shared/events/chain.ts). */
    eventDepth: z.number().int().min(1).optional(),
    /** The person whose run wrote the event file: the prompt spends their budgets (shared/events/chain.ts). */
    causedBy: causedBySchema.optional(),
    /** An agent's periodic file: each firing first checks that it has not run out (shared/events/expiry.ts). */
    expiring: z.literal(true).optional(),
    /** What opens a new thread in a channel, when it should differ from the prompt's text. */
    announcement: z.string().min(1).optional(),
    /** Where a trigger's firing came from: carried into the prompt and the logs. */
    source: promptSourceSchema.optional(),
    ...eventTargetShape,
  })
  .superRefine(checkEventTarget);
export type Firing = z.infer<typeof firingSchema>;

/** What another AWS service (or anyone with events:PutEvents) sends on the custom bus. */
export const busDetailSchema = z.strictObject({ text: promptTextSchema.min(1), ...eventTargetShape }).superRefine(checkEventTarget);

export interface FireDeps {
  chat: AgentChat;
  enqueue(prompt: Prompt): Promise<void>;
  ledger: LedgerDeps;
  logger: JsonLogger;
  now?: () => Date;
}

/** The firing's messages are keyed by its id, so a retried firing posts and enqueues once. */
const safeId = (firingId: string) => firingId.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 100);

async function threadForChannel(deps: FireDeps, firing: Firing): Promise<{ threadId: string; messageId: string }> {
  const record = EVENT_RECORD.channelPost(safeId(firing.firingId));
  const platform = platformOf(firing.adapterId!);
  const posted = await postOnce(deps.ledger, EVENTS_LEDGER, record, () =>
    platform.openThread(deps.chat, deps.ledger, firing.channelId!, firing.announcement ?? firing.text),
  );
  // The bot keeps answering in the thread it started, as in one it was mentioned in.
  await deps.chat.thread(posted.threadId).subscribe();
  return posted;
}

/** Stores files for the prompt in its thread (known only once a channel firing has opened it). */
export type AttachFiles = (threadId: string) => Promise<PromptFile[]>;

export async function fireEvent(deps: FireDeps, firing: Firing, attach?: AttachFiles): Promise<Prompt> {
  const now = (deps.now ?? (() => new Date()))();
  const { threadId, messageId } = firing.threadId
    ? { threadId: firing.threadId, messageId: `event-${safeId(firing.firingId)}` }
    : await threadForChannel(deps, firing);
  const files = attach ? await attach(threadId) : [];
  const thread = deps.chat.thread(threadId);
  const prompt: Prompt = {
    threadId,
    messageId,
    text: firing.note ? `${firing.text}\n\n(${firing.note})` : firing.text,
    author: { userId: EVENT_AUTHOR_ID, userName: `event ${firing.origin}` },
    postedAt: now.toISOString(),
    thread: thread.toJSON() as SerializedThread as Prompt['thread'],
    ...(firing.heartbeat ? { heartbeat: true } : {}),
    ...(firing.eventDepth ? { eventDepth: firing.eventDepth } : {}),
    ...(firing.causedBy ? { causedBy: firing.causedBy } : {}),
    ...(files.length ? { files } : {}),
    ...(firing.source ? { source: firing.source } : {}),
  };
  await deps.enqueue(prompt);
  deps.logger.info('event fired', {
    kind: firing.kind,
    origin: firing.origin,
    firingId: firing.firingId,
    threadId,
    newThread: !firing.threadId,
    ...(firing.source ? { source: firing.source } : {}),
    ...(files.length ? { files: files.map((f) => f.key) } : {}),
  });
  return prompt;
}
