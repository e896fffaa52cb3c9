// Bedrock prompt caching.
import * as z from 'zod';
import { settingsGroup } from '../group.ts';

export const promptCachingSettings = settingsGroup({
  keys: {
    /** cachePoint blocks after the system prompt, the tools and the history; turn off for models without it. */
    promptCaching: z.boolean().default(true),
  },
});
