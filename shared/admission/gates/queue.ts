// Before the prompt joins its thread: a lease whose run ended without releasing it is released,
// interrupt mode is kept for those who may stop the running run, and a pause holds the prompt.
import { controlRefusal, type ControlPolicy, type Person } from '../../policy/access.ts';
import type { ActorItem } from '../../run/actor.ts';
import { next, type Gate } from '../context.ts';

export const reclaimStaleLease: Gate = async ({ prompt }, deps) => {
  await deps.threads.reclaimStaleLease(prompt.threadId, prompt.messageId);
  return next();
};

/**
 * In interrupt mode a new prompt stops the thread's running run: only when its author (`who`) may
 * stop that run themselves; otherwise it waits its turn.
 */
export function mayInterrupt(policy: ControlPolicy | undefined, actor: ActorItem | undefined, who: Person | undefined): boolean {
  const running = actor?.status === 'running' ? actor.current : undefined;
  if (!policy || !running) return true;
  return who !== undefined && controlRefusal(policy, running.prompt.author.userId, who) === undefined;
}

export const queueUnlessMayInterrupt: Gate = async ({ prompt, person, control, mode }, deps) => {
  if (mode !== 'interrupt' || !control) return next();
  return mayInterrupt(control, await deps.threads.actor(prompt.threadId), person) ? next() : next({ mode: 'queue' });
};

export const holdWhilePaused: Gate = async (_ctx, deps) => next({ paused: await deps.threads.isPaused() });
