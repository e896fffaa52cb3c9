// A busy thread: how many prompts wait behind a running one, and whether a new one waits or interrupts.
import * as z from 'zod';
import { settingsGroup } from '../group.ts';

const queueMode = z.enum(['queue', 'interrupt']);

export const queueSettings = settingsGroup({
  keys: {
    /** Prompts that may wait behind a running one; more get a "busy" reply. At most 20: they share the thread's actor item (DynamoDB's 400 KB). */
    maxQueueDepth: z.number().int().min(0).max(20).default(5),
    /** queue: prompts wait their turn; interrupt: a new prompt stops the running one and runs next. */
    queueMode: queueMode.default('queue'),
  },
  channel: { queueMode: queueMode.optional() },
});
