// How much one run may do.
import * as z from 'zod';
import { settingsGroup } from '../group.ts';

export const runBoundsSettings = settingsGroup({
  keys: {
    /** Upper bound on model calls in one run, far below Step Functions' 25,000-event history limit. */
    maxModelSteps: z.number().int().positive().max(200).default(40),
    /** Tool calls one model response may make; the rest get an error result. */
    maxToolCallsPerTurn: z.number().int().positive().max(100).default(20),
    /** Longest one run may work before it stops with a message. */
    maxRunMinutes: z
      .number()
      .positive()
      .max(24 * 60)
      .default(30),
    /** How deep subagents may nest: a run's subagents are depth 1, theirs depth 2; 0 turns the `subagent` tool off. */
    maxSubagentDepth: z.number().int().min(0).max(3).default(2),
  },
});
