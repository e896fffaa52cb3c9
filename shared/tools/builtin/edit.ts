// Replaces an exact string in a file of the thread's sandbox (never a shared, read-only one).
import * as z from 'zod';
import * as sandbox from '../../sandbox/client.ts';
import { pathInput, shownPath, writablePath } from '../paths.ts';
import { applyEdit, ToolError } from '../text.ts';
import { defineTool } from '../tool.ts';

export const edit = defineTool({
  name: 'edit',
  runsIn: 'sandbox',
  description: 'Replace an exact string in a file. old_string must occur exactly once unless replace_all is true.',
  input: z.object({
    path: pathInput,
    old_string: z.string().describe('The exact text to replace (include enough context to be unique)'),
    new_string: z.string().describe('The replacement text'),
    replace_all: z.boolean().describe('Replace every occurrence (default false)').optional(),
  }),
  async run(input, { address, layout }) {
    const path = writablePath(layout, input.path);
    const body = await sandbox.readFile(address, path);
    if (!body) throw new ToolError(`no such file: ${shownPath(path)}`);
    const edited = applyEdit(body.toString('utf8'), { ...input, path: shownPath(path) });
    await sandbox.writeFile(address, path, edited.content);
    return { status: 'success', text: `replaced ${edited.replaced} occurrence${edited.replaced === 1 ? '' : 's'} in ${shownPath(path)}` };
  },
});
