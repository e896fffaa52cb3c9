// Creates or overwrites a file in the thread's sandbox (never a shared, read-only one).
import * as z from 'zod';
import * as sandbox from '../../sandbox/client.ts';
import { pathInput, shownPath, writablePath } from '../paths.ts';
import { defineTool } from '../tool.ts';

export const write = defineTool({
  name: 'write',
  runsIn: 'sandbox',
  description: 'Create or overwrite a file with the given content; parent directories are created.',
  input: z.object({
    path: pathInput,
    content: z.string().describe('The complete new content'),
  }),
  async run(input, { address, layout }) {
    const path = writablePath(layout, input.path);
    const result = await sandbox.writeFile(address, path, input.content);
    return { status: 'success', text: `wrote ${result.size} bytes to ${shownPath(path)}` };
  },
});
