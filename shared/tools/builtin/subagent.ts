// subagent: hands a task to a child run with a fresh context (an agent definition's instructions, or
// this agent's, plus the task), in the thread's sandbox. Several calls in one answer run at once; each
// call's result is the child's final answer. Starting and waiting is the tool step's
// (shared/run/subagents/); what this tool does is the model's side: the input, and the result text.
import * as z from 'zod';
import { agentNameSchema } from '../../agents/name.ts';
import { MAX_SUBAGENT_CONTEXT_BYTES, MAX_SUBAGENT_TASK_BYTES, utf8Bytes } from '../../contracts.ts';
import { defineTool, type ChildResult } from '../tool.ts';

export const SUBAGENT_TOOL = 'subagent';

const withinBytes = (max: number) => (text: string) => utf8Bytes(text) <= max;

const ENDED: Record<ChildResult['outcome'], string> = {
  finished: 'finished',
  stopped: 'was stopped',
  failed: 'failed',
  limit: 'stopped at its run limit',
  budget: 'stopped: a budget was reached',
  timed_out: 'did not finish in time and was stopped',
};

/** What the parent's model reads of a child's end. */
export function childResultText(result: ChildResult): string {
  const who = `The subagent${result.agent ? ` "${result.agent}"` : ''}`;
  const head = `${who} ${ENDED[result.outcome]} after ${result.steps} model call${result.steps === 1 ? '' : 's'}${result.reason ? ` (${result.reason})` : ''}.`;
  return result.answer ? `${head}\n\n${result.answer}` : `${head} It gave no answer.`;
}

export const subagent = defineTool({
  name: SUBAGENT_TOOL,
  runsIn: 'child',
  description:
    'Hand a self-contained task to a subagent: a fresh agent with its own context (it does not see this conversation) ' +
    'working in the same sandbox and files. Its final answer comes back as the result. Several subagent calls in one ' +
    'response run in parallel. Give everything it needs in `task` and `context`; `agent` picks an agent definition ' +
    '(the `agents` command lists them; absent: one like you).',
  input: z.object({
    agent: agentNameSchema.optional().describe('An agent definition to work as; absent: the same agent as you.'),
    task: z
      .string()
      .min(1)
      .refine(withinBytes(MAX_SUBAGENT_TASK_BYTES), `at most ${MAX_SUBAGENT_TASK_BYTES / 1024} KB`)
      .describe('What the subagent should do and answer, self-contained.'),
    context: z
      .string()
      .refine(withinBytes(MAX_SUBAGENT_CONTEXT_BYTES), `at most ${MAX_SUBAGENT_CONTEXT_BYTES / 1024} KB`)
      .optional()
      .describe('Facts, file paths or excerpts the subagent needs.'),
  }),
  async run(_input, { result }) {
    return { status: result.outcome === 'finished' ? 'success' : 'error', text: childResultText(result) };
  },
});
