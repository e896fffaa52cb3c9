// Runs a shell command in the thread's sandbox, in its scratch/ folder; long output is cut for the
// model and kept whole in a file. Watched (the sandbox step), a long command's last line is shown while it runs.
import * as z from 'zod';
import * as sandbox from '../../sandbox/client.ts';
import { shownPath } from '../paths.ts';
import { truncateForModel } from '../text.ts';
import { DEFAULT_BASH_TIMEOUT_SECONDS, MAX_BASH_TIMEOUT_SECONDS } from '../timeouts.ts';
import { defineTool } from '../tool.ts';

export const bash = defineTool({
  name: 'bash',
  runsIn: 'sandbox',
  description:
    'Run a shell command (sh -c) in your sandbox, in your scratch/ working directory. Output over the display limit is truncated, with the full output saved to a file whose path is given.',
  input: z.object({
    command: z.string().describe('The command line to run'),
    timeout_seconds: z
      .int()
      .min(1)
      .max(MAX_BASH_TIMEOUT_SECONDS)
      .describe(`Kill the command after this many seconds (default ${DEFAULT_BASH_TIMEOUT_SECONDS})`)
      .optional(),
  }),
  async run(input, { address, layout, toolUseId, exec }) {
    const seconds = input.timeout_seconds ?? DEFAULT_BASH_TIMEOUT_SECONDS;
    // The scratch directory exists once something is in it; a fresh sandbox may not have it yet.
    const inScratch = `mkdir -p '${layout.scratchPath}' && cd '${layout.scratchPath}' && {\n${input.command}\n}`;
    const request = { id: toolUseId, command: inScratch, timeoutMs: seconds * 1000 };
    const result = exec ? await exec(request) : await sandbox.exec(address, request);
    const parts = [result.stdout, result.stderr ? `[stderr]\n${result.stderr}` : ''].filter(Boolean);
    const combined = parts.join(parts[0] && !parts[0].endsWith('\n') ? '\n' : '');
    const view = truncateForModel(combined);
    const notes: string[] = [];
    if (view.truncated || result.stdoutTruncated || result.stderrTruncated) {
      const file = `${layout.scratchPath}/.tool-output/${toolUseId}.log`;
      await sandbox.writeFile(address, file, combined);
      const capped =
        result.stdoutTruncated || result.stderrTruncated
          ? ` The command produced ${result.stdoutBytes + result.stderrBytes} bytes; only the first 10 MB of each stream were kept.`
          : '';
      notes.push(`[output truncated: showing the last part. Full output (${combined.length} chars) in ${shownPath(file)}.${capped}]`);
    }
    if (result.timedOut) notes.push(`[killed after ${seconds} s timeout, with its child processes]`);
    if (result.cancelled) notes.push('[cancelled]');
    const status = result.exitCode === 0 && !result.timedOut && !result.cancelled ? 'success' : 'error';
    const exit = result.exitCode === null ? `signal ${result.signal ?? 'unknown'}` : `exit code ${result.exitCode}`;
    return { status, text: [...notes, view.text || '(no output)', `[${exit}, ${(result.durationMs / 1000).toFixed(1)} s]`].join('\n') };
  },
});
