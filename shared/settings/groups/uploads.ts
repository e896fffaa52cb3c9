// Files put under uploads/{adapter}/{channel}/ in the data bucket: each starts a thread in that channel
// (shared/triggers/uploads.ts).
import * as z from 'zod';
import { settingsGroup } from '../group.ts';

const DEFAULT_UPLOAD_PROMPT = 'A file was uploaded for you. Read it and summarise what it holds and anything that needs attention.';
const uploadPrompt = z.string().min(1).max(4000);

export const uploadSettings = settingsGroup({
  keys: {
    uploads: z
      .object({
        /** What the agent is asked to do with an upload that has no NAME.prompt.txt beside it. */
        prompt: uploadPrompt.default(DEFAULT_UPLOAD_PROMPT),
        /** Larger uploads are announced but not copied into the thread. */
        maxMegabytes: z.number().positive().max(50).default(20),
      })
      .default({ prompt: DEFAULT_UPLOAD_PROMPT, maxMegabytes: 20 }),
  },
  channel: { uploadPrompt: uploadPrompt.optional() },
});
