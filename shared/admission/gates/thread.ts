// The last gate: the prompt joins its thread's actor (takes the lease and starts a run, or waits
// behind the running one), or is refused as busy past the queue depth or past a concurrent-run limit.
import { adapterOf } from '../../observability/run-metrics.ts';
import type { Settings } from '../../settings/schema.ts';
import { end, type Gate } from '../context.ts';
import { NOT_NEW } from '../../run/actor.ts';
import { readThread } from './queue.ts';

/** A new thread's prompt past a concurrent-run limit: the author is told how many run, and which limit. */
export function fullText(admission: 'channel-full' | 'deployment-full', limits: Settings['limits']): string {
  const channel = admission === 'channel-full';
  const max = channel ? limits.maxConcurrentRunsPerChannel : limits.maxConcurrentRuns;
  const runs = `${max} run${max === 1 ? ' is' : 's are'} already running`;
  return channel
    ? `${runs} in this channel (the limit, maxConcurrentRunsPerChannel), so I did not start this one. Please send it again when one of them has finished.`
    : `${runs} across this deployment (the limit, maxConcurrentRuns), so I did not start this one. Please send it again in a few minutes.`;
}

export const PAUSED_TEXT = 'Paused by an operator: your message will run when resumed.';

export const busyText = (depth: number) =>
  `I'm busy in this thread with ${depth} more message${depth === 1 ? '' : 's'} waiting, so I dropped this one. Please send it again once I've caught up.`;

const isFull = (admission: string): admission is 'channel-full' | 'deployment-full' =>
  admission === 'channel-full' || admission === 'deployment-full';

export const admitToThread: Gate = async (
  { prompt, settings, channel, control, mode, paused, thread, agent, keepAgent, opensThread },
  deps,
) => {
  const caps = { perChannel: settings.limits.maxConcurrentRunsPerChannel, perDeployment: settings.limits.maxConcurrentRuns };
  // A prompt steer mode did not turn into a steer waits its turn, as in queue mode.
  const options = {
    maxQueueDepth: settings.maxQueueDepth,
    mode: mode === 'steer' ? 'queue' : mode,
    control,
    hold: paused,
    ...(opensThread ? { newThread: true } : {}),
    caps,
    ...(agent ? { agent, ...(keepAgent ? { keepAgent } : {}) } : {}),
  } as const;
  let admission = await deps.threads.admit(prompt, options);
  // Every slot taken: free those whose runs ended without giving them back, then try once more.
  if (isFull(admission) && (await deps.threads.reclaimStaleSlots(admission === 'channel-full' ? channel : undefined)))
    admission = await deps.threads.admit(prompt, options);
  const log = deps.logger.with({ threadId: prompt.threadId, messageId: prompt.messageId });
  if (admission === NOT_NEW) {
    // Its first message, yet the thread has an actor item (or the deployment is paused): read it after all.
    log.info('thread not new: reading it', { mode });
    return { again: { from: readThread, found: { opensThread: false } } };
  }
  log.info('prompt admitted', { admission, mode });
  if (admission === 'busy') {
    // Not lost silently: the prompt is in the logs, and its author is told.
    log.warn('prompt refused: queue full', { user: prompt.author.userId, text: prompt.text });
    deps.metrics.put('BusyReplies', 1, { adapter: adapterOf(prompt.threadId) });
    await thread.tell(busyText(settings.maxQueueDepth));
  } else if (isFull(admission)) {
    log.warn('prompt refused: concurrent run limit', { limit: admission, user: prompt.author.userId, text: prompt.text });
    await thread.tell(fullText(admission, settings.limits));
  } else if (admission === 'queued' && paused) {
    log.info('prompt held: paused', { user: prompt.author.userId, channel });
    await thread.post(PAUSED_TEXT);
  } else if (admission === 'queued' && mode === 'interrupt') {
    await deps.threads.stop(prompt.threadId, 'interrupted by a newer message');
  } else if (admission === 'queued') {
    // Queued behind prompts held by a pause whose resume did not start them: start them now.
    await deps.threads.startWaiting(prompt.threadId);
  }
  return end(admission);
};
