// A busy thread: how many prompts wait behind a running one, and whether a new one waits or interrupts.
import * as z from 'zod';
import { settingsGroup } from '../group.ts';

/** What a prompt does when its thread is already running (docs/behaviour.md, "Queue modes"). */
export const QUEUE_MODES = ['queue', 'interrupt', 'collect', 'steer'] as const;
export type QueueMode = (typeof QUEUE_MODES)[number];
const queueMode = z.enum(QUEUE_MODES);

export const queueSettings = settingsGroup({
  keys: {
    /** Prompts that may wait behind a running one; more get a "busy" reply. At most 20: they share the thread's actor item (DynamoDB's 400 KB). */
    maxQueueDepth: z.number().int().min(0).max(20).default(5),
    /**
     * queue: prompts wait their turn; interrupt: a new prompt stops the running one and runs next;
     * collect: the prompts that arrive during a run become one follow-up run; steer: they steer the running run.
     */
    queueMode: queueMode.default('queue'),
  },
  channel: { queueMode: queueMode.optional() },
});
