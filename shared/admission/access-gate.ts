// The access check of every prompt, before it is admitted to its thread: a prompt settings.json
// `access` refuses never reaches the thread's queue, a run or the model. Its author is told once per
// thread (a conditional write in the chat state), and every refusal is logged.
import type { StateAdapter } from 'chat';
import {
  controlRefusal,
  EVENT_AUTHOR_ID,
  workspaceOf,
  useRefusal,
  type Access,
  type ControlPolicy,
  type Person,
  type UseRefusal,
} from '../policy/access.ts';
import type { ActorItem } from '../run/actor.ts';
import { channelKeyOf, parseThreadId } from '../ids.ts';
import type { JsonLogger } from '../observability/log.ts';
import type { Prompt } from '../schemas.ts';
import { CHAT_VALUE } from '../table.ts';

export interface AccessGateDeps {
  state(): Promise<StateAdapter>;
  /** Tells the prompt's author (ephemerally where the platform can). */
  reply(prompt: Prompt, text: string): Promise<void>;
  logger: JsonLogger;
}

export const REFUSAL_TEXTS: Record<UseRefusal, string> = {
  locked: "Sorry, I can't take requests right now: my access settings need fixing. The operators can see why in the logs.",
  workspace: "Sorry, I'm not enabled for your workspace.",
  channel: "Sorry, I'm not enabled in this channel. An admin can add it to my settings.",
  user: "Sorry, I only take requests from people on my allow-list, and you're not on it. An admin can add you.",
};

/** A refused person hears it once per thread for this long (threads are rarely active longer). */
const NOTIFIED_TTL_MS = 90 * 24 * 3600 * 1000;

/** The person behind a prompt, as the access lists name them; none for an event's prompt. */
export function personOf(prompt: Prompt): Person | undefined {
  if (prompt.author.userId === EVENT_AUTHOR_ID) return undefined;
  const raw = (prompt.thread as { currentMessage?: { raw?: unknown } }).currentMessage?.raw;
  const { adapter } = parseThreadId(prompt.threadId);
  return { adapter, userId: prompt.author.userId, workspace: workspaceOf(adapter, raw) };
}

/** True when `access` refuses the prompt (and its author was told, once per thread). */
export async function refusedByAccess(deps: AccessGateDeps, access: Access, prompt: Prompt): Promise<boolean> {
  const who = personOf(prompt);
  const reason = useRefusal(access, who, channelKeyOf(prompt.threadId));
  if (!reason) return false;
  const state = await deps.state();
  // A person once per thread; an event's prompt has nobody to tell.
  const notifiedKey = CHAT_VALUE.accessRefusalTold(prompt.threadId, who?.userId);
  const tell = who !== undefined && (await state.setIfNotExists(notifiedKey, true, NOTIFIED_TTL_MS));
  deps.logger.warn('prompt refused: access', {
    threadId: prompt.threadId,
    messageId: prompt.messageId,
    user: prompt.author.userId,
    workspace: who?.workspace,
    reason,
    told: tell,
  });
  // The bot stops following a thread of a channel it does not work in: later messages there are not even enqueued.
  if (reason === 'channel') await state.unsubscribe(prompt.threadId);
  if (tell) {
    try {
      await deps.reply(prompt, REFUSAL_TEXTS[reason]);
    } catch (error) {
      // Not told after all: the prompt's redelivery tries again.
      await state.delete(notifiedKey);
      throw error;
    }
  }
  return true;
}

/**
 * In interrupt mode a new prompt stops the thread's running run: only when its author may stop that
 * run themselves; otherwise it waits its turn.
 */
export function mayInterrupt(policy: ControlPolicy | undefined, actor: ActorItem | undefined, prompt: Prompt): boolean {
  const running = actor?.status === 'running' ? actor.current : undefined;
  if (!policy || !running) return true;
  const who = personOf(prompt);
  return who !== undefined && controlRefusal(policy, running.prompt.author.userId, who) === undefined;
}
