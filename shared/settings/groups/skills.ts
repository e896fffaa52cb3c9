// Skills in the system prompt.
import * as z from 'zod';
import { DEFAULT_MAX_SKILL_BODY_CHARS } from '../../defaults.ts';
import { settingsGroup } from '../group.ts';

export const skillsSettings = settingsGroup({
  keys: {
    /** A skill's instructions longer than this are cut in the system prompt, with a note naming the file. */
    maxSkillBodyChars: z.number().int().min(500).max(200_000).default(DEFAULT_MAX_SKILL_BODY_CHARS),
  },
});
