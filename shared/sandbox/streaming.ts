// A long command's last line, shown in the thread's status while it runs. The sandbox step (in the
// VPC, with no route to the chat) waits on the command a while; when it still runs and printed a
// new line, the step hands the line to the agent step, which shows it and sends the run back to
// attach to the same command (containers/sandbox/README.md: waiting exec). A command that ends
// within the first wait costs nothing more than before: one request, its result.
import { MAX_PROGRESS_LINE_CHARS } from '../contracts.ts';
import { type ExecRequest, type ExecResult, execWaiting, type SandboxAddress } from './client.ts';

/** How long the sandbox step waits on a command before it may show a new last line: the fastest the status changes. */
export const PROGRESS_EVERY_MS = 2_000;

/**
 * How long the command server keeps a command running with no sandbox step waiting on it: the gap
 * between two waits (the status update, two state transitions) is far shorter; a run that ended in
 * that gap (a stop) leaves its command to be cancelled after this.
 */
export const DETACH_MS = 30_000;

/** How the sandbox step watches a command (SandboxToolContext.watch). */
export interface CommandWatch {
  /** The line the status shows now, if any: only another one is worth a status update. */
  shown?: string;
  /** The command was started by an earlier step: attach to it, never start it again. */
  attach: boolean;
  /** Epoch ms after which the step hands over even without a new line (its Lambda's time runs out). */
  until: number;
  now: () => number;
  /** A line as the status would show it (secrets redacted, cut to length). */
  show: (line: string) => string;
}

/** The command still runs: show `line` and come back. */
export class StillRunning extends Error {
  override name = 'StillRunning';
  constructor(readonly line: string) {
    super('the command is still running');
  }
}

/** The command's result, or StillRunning once it printed a new line (or the step's time is up) while it runs. */
export async function execWatched(address: SandboxAddress, request: ExecRequest, watch: CommandWatch): Promise<ExecResult> {
  for (let attach = watch.attach; ; attach = true) {
    const answer = await execWaiting(address, request, { waitMs: PROGRESS_EVERY_MS, detachMs: DETACH_MS, attach });
    if (!('running' in answer)) return answer;
    const line = watch.show(answer.lastLine);
    if ((line && line !== watch.shown) || watch.now() >= watch.until) throw new StillRunning(line);
  }
}

/** A command's last line for the status: secrets redacted first (a secret cut in half would pass), then cut. */
export function statusLine(line: string, redact: (text: string) => string): string {
  const redacted = redact(line);
  return redacted.length <= MAX_PROGRESS_LINE_CHARS ? redacted : `${redacted.slice(0, MAX_PROGRESS_LINE_CHARS - 1)}…`;
}
