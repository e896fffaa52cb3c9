// Bounds on work across threads (shared/run/capacity.ts); reasons for the defaults in docs/settings.md's
// limits section.
import * as z from 'zod';
import { settingsGroup } from '../group.ts';

export const LIMIT_DEFAULTS = { maxConcurrentRunsPerChannel: 10, maxConcurrentRuns: 30, maxRunningSandboxes: 40 };

export const limitSettings = settingsGroup({
  keys: {
    limits: z
      .object({
        /** Runs holding a lease at once in one channel; a new thread's prompt past it is refused with a reply. */
        maxConcurrentRunsPerChannel: z.number().int().positive().max(1_000).default(LIMIT_DEFAULTS.maxConcurrentRunsPerChannel),
        /** Runs holding a lease at once in the deployment. */
        maxConcurrentRuns: z.number().int().positive().max(10_000).default(LIMIT_DEFAULTS.maxConcurrentRuns),
        /** Sandbox tasks at once; a tool call that would start one more gets an error result. */
        maxRunningSandboxes: z.number().int().positive().max(5_000).default(LIMIT_DEFAULTS.maxRunningSandboxes),
      })
      .default({ ...LIMIT_DEFAULTS }),
  },
});
