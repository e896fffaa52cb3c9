// Reads a text file of the thread's sandbox, with line numbers, a window at a time.
import * as z from 'zod';
import * as sandbox from '../../sandbox/client.ts';
import { pathInput, resolveToolPath, shownPath } from '../paths.ts';
import { MAX_READ_LINES, numberedLines, ToolError } from '../text.ts';
import { defineTool } from '../tool.ts';

export const read = defineTool({
  name: 'read',
  runsIn: 'sandbox',
  description: 'Read a text file, with line numbers. Use offset/limit for long files.',
  input: z.object({
    path: pathInput,
    offset: z.int().min(1).describe('First line to read (1-based)').optional(),
    // A larger limit is not refused: one read returns at most MAX_READ_LINES lines and says so.
    limit: z
      .int()
      .min(1)
      .meta({ maximum: MAX_READ_LINES })
      .describe('How many lines to read (default and most 2000; at most 30,000 characters are returned)')
      .optional(),
  }),
  async run(input, { address, layout }) {
    const path = resolveToolPath(layout, input.path);
    const body = await sandbox.readFile(address, path);
    if (!body) throw new ToolError(`no such file: ${shownPath(path)}`);
    if (body.includes(0)) throw new ToolError(`${shownPath(path)} is a binary file (${body.length} bytes); use bash to inspect it`);
    return { status: 'success', text: numberedLines(body.toString('utf8'), input.offset, input.limit) };
  },
});
