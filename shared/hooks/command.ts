// Command hooks: run in the thread's sandbox through the command server, as `bash` runs a command,
// in the workspace's root (where `data/` is), with the event as JSON on stdin. The JSON is one line, so the here-document's
// random end marker (a line of its own) cannot occur in it.
import { randomBytes } from 'node:crypto';
import * as sandbox from '../sandbox/client.ts';
import { commandAnswer, type HookAnswer } from './answer.ts';
import type { HookRunner } from './run.ts';

/** A hook's output kept (its answer is small; the rest is cut). */
const MAX_HOOK_OUTPUT_BYTES = 64 * 1024;

export function commandHookRunner(address: sandbox.SandboxAddress): HookRunner {
  return async (hook, input): Promise<HookAnswer> => {
    const end = `THREADWORK_HOOK_${randomBytes(8).toString('hex')}`;
    const command = `{\n${hook.command!}\n} <<'${end}'\n${JSON.stringify(input)}\n${end}`;
    const result = await sandbox.exec(address, {
      id: `hook-${input.tool?.toolUseId ?? input.runId}-${randomBytes(4).toString('hex')}`,
      command,
      timeoutMs: hook.timeoutSeconds * 1000,
      maxOutputBytes: MAX_HOOK_OUTPUT_BYTES,
    });
    return commandAnswer(result);
  };
}
