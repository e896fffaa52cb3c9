// Searches the channel's message history through the chat platform. It runs in the agent step.
import * as z from 'zod';
import { descriptorNamed } from '../../platforms/descriptors.ts';
import { ToolError } from '../text.ts';
import { defineTool } from '../tool.ts';

const DEFAULT_RESULTS = 20;
const MAX_RESULTS = 100;
/** How many channel messages one search scans at most. */
const MAX_SCANNED = 1000;

export const searchChannel = defineTool({
  name: 'search_channel',
  runsIn: 'agent',
  description: "Search this channel's message history (newest first) for messages containing the query.",
  input: z.object({
    query: z
      .string()
      .refine((query) => query.trim() !== '', 'must not be blank')
      .describe('Text to look for (case-insensitive)'),
    // A larger limit is not refused: it is capped.
    limit: z.int().min(1).meta({ maximum: MAX_RESULTS }).describe(`Most results to return (default ${DEFAULT_RESULTS})`).optional(),
  }),
  async run(input, { thread }) {
    const query = input.query.trim().toLowerCase();
    const limit = Math.min(input.limit ?? DEFAULT_RESULTS, MAX_RESULTS);
    const found: string[] = [];
    let scanned = 0;
    try {
      for await (const message of thread.channel.messages) {
        if (++scanned > MAX_SCANNED) break;
        if (!message.text.toLowerCase().includes(query)) continue;
        const when = message.metadata?.dateSent?.toISOString() ?? '';
        found.push(`[${when}] ${message.author.userName || message.author.userId}: ${message.text.slice(0, 500)}`);
        if (found.length >= limit) break;
      }
    } catch (error) {
      const problem = descriptorNamed(thread.adapter.name)?.historyProblem(error as Error);
      if (!problem) throw error;
      throw new ToolError(problem);
    }
    if (found.length === 0)
      return { status: 'success', text: `no messages containing "${query}" in the last ${scanned} messages of this channel` };
    return { status: 'success', text: `${found.length} message(s) (newest first):\n${found.join('\n')}` };
  },
});
