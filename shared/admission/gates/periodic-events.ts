// A person is here: the agent's periodic event files this thread belongs to keep running
// (settings.json `agentPeriodicEventDays`, shared/events/expiry.ts).
import { next, type Gate } from '../context.ts';

export const renewPeriodicEvents: Gate = async ({ prompt, person, settings, now }, deps) => {
  if (!person) return next();
  const renewed = await deps.renewEventFiles(prompt.threadId, settings.agentPeriodicEventDays, now);
  if (renewed.length) deps.logger.info('periodic event files renewed', { threadId: prompt.threadId, files: renewed });
  return next();
};
