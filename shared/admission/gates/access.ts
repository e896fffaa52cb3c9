// The access check of every prompt, before it is admitted to its thread: a prompt settings.json
// `access` refuses never reaches the thread's queue, a run or the model. Its author is told once per
// thread (a conditional write in the chat state), and every refusal is logged.
import { REFUSAL_TEXTS, useRefusal } from '../../policy/access.ts';
import { end, next, type Gate } from '../context.ts';
import { CHAT_VALUE } from '../../table.ts';

/** A refused person hears it once per thread for this long (threads are rarely active longer). */
const NOTIFIED_TTL_MS = 90 * 24 * 3600 * 1000;

export const refuseWithoutAccess: Gate = async ({ prompt, person, channel, settings, thread }, deps) => {
  const reason = useRefusal(settings.access, person, channel);
  if (!reason) return next();
  const state = await deps.chatState();
  // A person once per thread; an event's prompt has nobody to tell.
  const notifiedKey = CHAT_VALUE.accessRefusalTold(prompt.threadId, person?.userId);
  const tell = person !== undefined && (await state.setIfNotExists(notifiedKey, true, NOTIFIED_TTL_MS));
  deps.logger.warn('prompt refused: access', {
    threadId: prompt.threadId,
    messageId: prompt.messageId,
    user: prompt.author.userId,
    workspace: person?.workspace,
    reason,
    told: tell,
  });
  // The bot stops following a thread of a channel it does not work in: later messages there are not even enqueued.
  if (reason === 'channel') await state.unsubscribe(prompt.threadId);
  if (tell) {
    try {
      await thread.tell(REFUSAL_TEXTS[reason]);
    } catch (error) {
      // Not told after all: the prompt's redelivery tries again.
      await state.delete(notifiedKey);
      throw error;
    }
  }
  return end('refused');
};
