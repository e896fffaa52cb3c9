// Searches what this channel remembers: its threads' logs, the contexts compaction archived and its
// memory files (shared/context/memory-search.ts). It runs in the agent step; the channel is the run's,
// never one the model names.
import * as z from 'zod';
import { searchChannelMemory } from '../../context/memory-search.ts';
import { defineTool } from '../tool.ts';

const DEFAULT_RESULTS = 10;
const MAX_RESULTS = 50;

export const memorySearch = defineTool({
  name: 'memory_search',
  runsIn: 'agent',
  description:
    "Search this channel's memory, ranked by relevance: every thread's messages, the older parts of threads that were summarised to fit the context window, and the MEMORY.md files. Use it to recall what was said or decided earlier, even weeks ago.",
  input: z.object({
    query: z
      .string()
      .refine((query) => query.trim() !== '', 'must not be blank')
      .describe('Words to look for (any of them; rarer words weigh more)'),
    // A larger limit is not refused: it is capped.
    limit: z.int().min(1).meta({ maximum: MAX_RESULTS }).describe(`Most results to return (default ${DEFAULT_RESULTS})`).optional(),
  }),
  async run(input, { s3, bucket, threadId }) {
    const limit = Math.min(input.limit ?? DEFAULT_RESULTS, MAX_RESULTS);
    const found = await searchChannelMemory({ s3, bucket }, threadId, input.query.trim(), limit);
    const scope = `searched ${found.threads} thread(s), ${found.files} file(s), ${Math.ceil(found.bytes / 1024)} KiB`;
    const capped = found.capped.length ? `\nNot everything was searched: ${found.capped.join('; ')}.` : '';
    if (found.hits.length === 0)
      return { status: 'success', text: `nothing in this channel's memory matches "${input.query.trim()}" (${scope})${capped}` };
    const hits = found.hits.map((hit, i) => `${i + 1}. [${hit.where}${hit.at ? `, ${hit.at}` : ''}]\n${hit.snippet}`);
    return { status: 'success', text: `${found.hits.length} result(s), best first (${scope}):${capped}\n\n${hits.join('\n\n')}` };
  },
});
