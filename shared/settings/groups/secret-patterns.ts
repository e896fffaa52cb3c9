// A deployment's own secret formats, redacted like the built-in ones (shared/policy/secret-filter.ts).
import * as z from 'zod';
import { customPatternProblem } from '../../policy/secret-filter.ts';
import { settingsGroup } from '../group.ts';

const secretPattern = z
  .object({ name: z.string().min(1).max(60), regex: z.string() })
  .strict()
  .superRefine(({ name, regex }, ctx) => {
    const problem = customPatternProblem(regex);
    // Named in full: the log line is all an operator sees of a refused pattern.
    if (problem) ctx.addIssue({ code: 'custom', path: ['regex'], message: `${JSON.stringify(name)} (/${regex}/) ${problem}` });
  });

export const secretPatternSettings = settingsGroup({
  keys: { secretPatterns: z.array(secretPattern).max(50).default([]) },
});
