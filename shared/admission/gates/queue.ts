// Before the prompt joins its thread: its actor item is read with the pause flag (one round trip;
// none for the first message of a thread, which its admission's own write checks instead),
// a lease whose run ended without releasing it is released, interrupt and steer modes are kept for
// those who may stop or steer the running run, and a pause holds the prompt.
import { controlRefusal, type ControlPolicy, type Person } from '../../policy/access.ts';
import type { ActorItem } from '../../run/actor.ts';
import { contextText } from '../../context/context-text.ts';
import { end, next, type Gate } from '../context.ts';

/** A prompt that opens its thread finds it new without a read: its admission checks that it is (admitToThread). */
export const readThread: Gate = async ({ prompt, opensThread }, deps) =>
  opensThread ? next({ actor: undefined, paused: false }) : next(await deps.threads.read(prompt.threadId));

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

/**
 * Steer mode: a message to a running thread steers the run (at its next tool boundary) instead of
 * waiting for it. Only a plain text from someone who may steer that run; a long text, files, an
 * event's prompt, a refused steer (too long, too many waiting) or a run that just ended: it waits
 * its turn (or starts a run) as in queue mode.
 */
export const steerInSteerMode: Gate = async ({ prompt, person, control, mode, actor, paused }, deps) => {
  if (mode !== 'steer') return next();
  const running = actor?.status === 'running' ? actor.current : undefined;
  const attachments = (prompt.thread.currentMessage as { attachments?: unknown[] } | undefined)?.attachments ?? [];
  const plain = !prompt.textKey && !prompt.files?.length && attachments.length === 0;
  if (!running || paused || !person || !plain || !mayInterrupt(control, actor, person)) return next({ mode: 'queue' });
  const outcome = await deps.threads.steer(prompt, contextText(prompt.author.userName, prompt.text), running.runId);
  if (outcome === 'queued') return end('steered');
  if (outcome === 'duplicate') return end('duplicate');
  return next({ mode: 'queue' });
};
