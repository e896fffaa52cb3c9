// When the context is summarised (token estimates; defaults and reasons in shared/defaults.ts, logic
// in shared/context/compaction.ts).
import * as z from 'zod';
import { DEFAULT_COMPACTION_SETTINGS } from '../../defaults.ts';
import { settingsGroup } from '../group.ts';

export const compactionSettings = settingsGroup({
  keys: {
    compaction: z
      .object({
        contextWindowTokens: z.number().int().positive().default(DEFAULT_COMPACTION_SETTINGS.contextWindowTokens),
        reservedOutputTokens: z.number().int().nonnegative().default(DEFAULT_COMPACTION_SETTINGS.reservedOutputTokens),
        keepRecentTokens: z.number().int().positive().default(DEFAULT_COMPACTION_SETTINGS.keepRecentTokens),
        thresholdRatio: z.number().positive().max(1).default(DEFAULT_COMPACTION_SETTINGS.thresholdRatio),
      })
      .default({ ...DEFAULT_COMPACTION_SETTINGS }),
  },
});
