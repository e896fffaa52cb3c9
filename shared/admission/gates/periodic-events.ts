// A person is here: the agent's periodic event files this thread belongs to keep running
// (settings.json `agentPeriodicEventDays`, shared/events/expiry.ts). No later gate needs it, so the
// renewal goes on alongside them (one round trip less before the run starts). A thread's first message
// has none to renew: a file is linked to a thread only by a run or a firing in it, so not even the
// link is looked for.
import { next, type Gate } from '../context.ts';

export const renewPeriodicEvents: Gate = async ({ prompt, person, settings, now, opensThread }, deps) => {
  if (!person || opensThread) return next();
  const renewal = deps.renewEventFiles(prompt.threadId, settings.agentPeriodicEventDays, now).then((renewed) => {
    if (renewed.length) deps.logger.info('periodic event files renewed', { threadId: prompt.threadId, files: renewed });
  });
  // Awaited by the admission; until then, an early failure is not an unhandled one.
  renewal.catch(() => undefined);
  return { next: {}, alongside: renewal };
};
