// Before the prompt joins its thread: a lease whose run ended without releasing it is released,
// interrupt mode is kept for those who may stop the running run, and a pause holds the prompt.
import { mayInterrupt } from './access.ts';
import { next, type Gate } from '../context.ts';

export const reclaimStaleLease: Gate = async ({ prompt }, deps) => {
  await deps.threads.reclaimStaleLease(prompt.threadId, prompt.messageId);
  return next();
};

export const queueUnlessMayInterrupt: Gate = async ({ prompt, person, control, mode }, deps) => {
  if (mode !== 'interrupt' || !control) return next();
  return mayInterrupt(control, await deps.threads.actor(prompt.threadId), person) ? next() : next({ mode: 'queue' });
};

export const holdWhilePaused: Gate = async (_ctx, deps) => next({ paused: await deps.threads.isPaused() });
