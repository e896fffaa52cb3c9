// Before the prompt joins its thread: its actor item is read with the pause flag (one round trip),
// a lease whose run ended without releasing it is released, interrupt mode is kept for those who may
// stop the running run, and a pause holds the prompt.
import { controlRefusal, type ControlPolicy, type Person } from '../../policy/access.ts';
import type { ActorItem } from '../../run/actor.ts';
import { next, type Gate } from '../context.ts';

export const readThread: Gate = async ({ prompt }, deps) => next(await deps.threads.read(prompt.threadId));

/** A reclaimed lease changed the thread (idle, or its next prompt running): the gates after read it again. */
export const reclaimStaleLease: Gate = async ({ prompt, actor }, deps) =>
  (await deps.threads.reclaimStaleLease(actor, prompt.messageId)) ? next({ actor: await deps.threads.actor(prompt.threadId) }) : next();

/**
 * In interrupt mode a new prompt stops the thread's running run: only when its author (`who`) may
 * stop that run themselves; otherwise it waits its turn.
 */
export function mayInterrupt(policy: ControlPolicy | undefined, actor: ActorItem | undefined, who: Person | undefined): boolean {
  const running = actor?.status === 'running' ? actor.current : undefined;
  if (!policy || !running) return true;
  return who !== undefined && controlRefusal(policy, running.prompt.author.userId, who) === undefined;
}

export const queueUnlessMayInterrupt: Gate = async ({ person, control, mode, actor }) => {
  if (mode !== 'interrupt' || !control) return next();
  return mayInterrupt(control, actor, person) ? next() : next({ mode: 'queue' });
};
