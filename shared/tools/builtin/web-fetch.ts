// Reads a web page as text (HTML as Markdown). Offered only to runs whose channel allows hosts
// (settings.json webFetch.allow); runs in the reach step, the one function that reaches the Internet,
// where every URL and address is checked first (shared/reach/).
import * as z from 'zod';
import { DEFAULT_PAGE_BYTES, MAX_PAGE_BYTES } from '../../reach/limits.ts';
import { defineTool } from '../tool.ts';

export const webFetch = defineTool({
  name: 'web_fetch',
  runsIn: 'reach',
  description:
    "Fetch a web page (http or https) and return it as text, HTML converted to Markdown. Only the hosts this channel's settings allow can be fetched; private and internal addresses never can.",
  input: z.object({
    url: z.string().describe('The page URL, http:// or https://'),
    maxBytes: z
      .int()
      .min(1)
      .meta({ maximum: MAX_PAGE_BYTES })
      .describe(`Read at most this many bytes of the page (default ${DEFAULT_PAGE_BYTES})`)
      .optional(),
  }),
  async run(input, { fetchPage, signal }) {
    return fetchPage(input.url, input.maxBytes, signal);
  },
});
