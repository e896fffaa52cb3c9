// The thread's sandbox: when it starts, and what of its /workspace/data is kept in S3.
import * as z from 'zod';
import { settingsGroup } from '../group.ts';

export const SANDBOX_DEFAULTS = { startEarly: true, maxSyncedFiles: 5_000, maxSyncedMegabytes: 1_024 };

export const sandboxSettings = settingsGroup({
  keys: {
    sandbox: z
      .object({
        /** Start the thread's sandbox when a run begins (in parallel with the first model call). */
        startEarly: z.boolean().default(SANDBOX_DEFAULTS.startEarly),
        /** Files under /workspace/data kept in S3 per sandbox; below the command server's listing limit. */
        maxSyncedFiles: z.number().int().positive().max(9_000).default(SANDBOX_DEFAULTS.maxSyncedFiles),
        /** Their total size, in MiB. */
        maxSyncedMegabytes: z.number().int().positive().max(10_240).default(SANDBOX_DEFAULTS.maxSyncedMegabytes),
      })
      .default({ ...SANDBOX_DEFAULTS }),
  },
});
