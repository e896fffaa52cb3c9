// Running one command: spawn, capture output up to a cap, and kill the whole tree on timeout,
// cancel, or when the caller goes away.
import { spawn } from 'node:child_process';
import { StringDecoder } from 'node:string_decoder';
import { ProcessTree } from './process-tree.ts';

/** How long a tree gets between SIGTERM and SIGKILL. */
const KILL_GRACE_MS = 2_000;

export interface ExecRequest {
  id: string;
  command: string;
  cwd: string;
  timeoutMs: number;
  maxOutputBytes: number;
  env: Record<string, string>;
}

export interface ExecResult {
  id: string;
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  cancelled: boolean;
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  stdoutBytes: number;
  stderrBytes: number;
  durationMs: number;
}

/** A waiting `/exec`'s answer when the command still runs after its waitMs. */
export interface ExecRunning {
  id: string;
  running: true;
  /** What it printed last (see Tail.lastLine); '' before it printed anything. */
  lastLine: string;
}

/** Keeps the first `cap` bytes of a stream and counts the rest. */
class Capture {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  total = 0;

  constructor(private readonly cap: number) {}

  push(chunk: Buffer): void {
    this.total += chunk.length;
    const room = this.cap - this.kept;
    if (room <= 0) return;
    const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
    this.chunks.push(part);
    this.kept += part.length;
  }

  get truncated(): boolean {
    return this.total > this.kept;
  }

  /** UTF-8, with invalid sequences (including one cut in half by the cap) replaced by U+FFFD. */
  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

/** Longest last line reported while a command runs (the start of a longer one). */
export const MAX_LAST_LINE_CHARS = 1000;
/** How much of the newest output is kept to find the last line in. */
const TAIL_CHARS = 4 * MAX_LAST_LINE_CHARS;

/**
 * The newest output of both streams, in the order it came, to tell what a running command printed
 * last. Each stream has its own decoder, so a character split across chunks is not garbled.
 */
class Tail {
  private text = '';
  /** The kept text no longer starts where the output did: its first line may be the end of a longer one. */
  private cut = false;
  private last: 'stdout' | 'stderr' = 'stdout';
  private readonly decoders = { stdout: new StringDecoder('utf8'), stderr: new StringDecoder('utf8') };

  push(stream: 'stdout' | 'stderr', chunk: Buffer): void {
    // One stream's unfinished line is not continued by the other's output.
    const apart = stream !== this.last ? '\n' : '';
    this.last = stream;
    const text = this.text + apart + this.decoders[stream].write(chunk);
    this.cut ||= text.length > TAIL_CHARS;
    this.text = text.slice(-TAIL_CHARS);
  }

  /**
   * The last line with something visible in it, terminal escapes and control characters taken out;
   * a carriage return ends a line too (a progress bar redraws its line with one). A line whose start
   * was not kept is not one: shown from the middle, it could begin with the end of a secret that
   * the redaction downstream no longer recognises.
   */
  lastLine(): string {
    const lines = this.text.split(/[\r\n]/);
    for (let i = lines.length - 1; i >= (this.cut ? 1 : 0); i--) {
      const line = visible(lines[i]!);
      if (line) return line.slice(0, MAX_LAST_LINE_CHARS);
    }
    return '';
  }
}

/** `line` without ANSI escape sequences and control characters, spaces collapsed. */
function visible(line: string): string {
  return line
    .replace(/\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])/g, '')
    .replace(/[\x00-\x1f\x7f-\x9f]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A command that is running. `done` settles once it has finished and, if killed, its tree is gone. */
export class RunningCommand {
  readonly done: Promise<ExecResult>;
  /** Null if the shell could not be started (then there is nothing to kill). */
  private readonly tree: ProcessTree | null;
  /** Settles on the child's 'close': the shell has exited and its output pipes are closed. */
  private readonly closed: Promise<{ code: number | null; signal: string | null }>;
  private readonly forceClose: () => void;
  private killing: Promise<void> | null = null;
  private timedOut = false;
  private cancelled = false;
  private exited = false;
  private ended = false;
  private readonly tail = new Tail();

  constructor(request: ExecRequest) {
    const started = performance.now();
    // detached: the shell leads a new session and process group, so the tree can be signalled as
    // one and it is not in the server's group (a Ctrl-C to a local server does not reach it).
    // stdin is closed: nothing could answer a prompt, and a command waiting for input should fail
    // fast rather than hang until its timeout.
    const child = spawn('/bin/sh', ['-c', request.command], {
      cwd: request.cwd,
      env: request.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.tree = child.pid === undefined ? null : new ProcessTree(child.pid, () => !this.exited);
    this.forceClose = () => {
      child.stdout.destroy();
      child.stderr.destroy();
    };
    const stdout = new Capture(request.maxOutputBytes);
    const stderr = new Capture(request.maxOutputBytes);
    child.stdout.on('data', (chunk: Buffer) => {
      stdout.push(chunk);
      this.tail.push('stdout', chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr.push(chunk);
      this.tail.push('stderr', chunk);
    });
    child.on('exit', () => {
      this.exited = true;
    });
    this.closed = new Promise((resolve, reject) => {
      child.on('error', reject); // Could not spawn at all.
      // 'close' comes after the shell has exited AND its stdout/stderr are closed. A background
      // process that inherited them keeps the command "running" until it exits, is killed at the
      // timeout, or is cancelled; `cmd > log 2>&1 &` is how to leave something running.
      child.on('close', (code, signal) => resolve({ code, signal }));
    });

    const timer = setTimeout(() => {
      this.timedOut = true;
      void this.kill();
    }, request.timeoutMs);

    this.done = this.closed
      .then(async ({ code, signal }) => {
        // If we killed it, answer only once the whole tree is gone, so "timed out" or "cancelled"
        // means nothing of the command is still running.
        if (this.killing) await this.killing;
        return {
          id: request.id,
          exitCode: code,
          signal,
          timedOut: this.timedOut,
          cancelled: this.cancelled,
          stdout: stdout.text(),
          stderr: stderr.text(),
          stdoutTruncated: stdout.truncated,
          stderrTruncated: stderr.truncated,
          stdoutBytes: stdout.total,
          stderrBytes: stderr.total,
          durationMs: Math.round(performance.now() - started),
        };
      })
      .finally(() => {
        clearTimeout(timer);
        this.ended = true;
      });
  }

  /** What the command printed last, while it runs (see Tail.lastLine). */
  lastLine(): string {
    return this.tail.lastLine();
  }

  /** True once `done` has settled. */
  get hasEnded(): boolean {
    return this.ended;
  }

  /** Cancel at the caller's request (or because the caller went away). */
  cancel(): Promise<void> {
    this.cancelled = true;
    return this.kill();
  }

  /** SIGTERM to the tree, SIGKILL to whatever is left after the grace period. Idempotent. */
  kill(): Promise<void> {
    const tree = this.tree;
    if (!tree) return Promise.resolve();
    this.killing ??= (async () => {
      tree.signal('SIGTERM');
      if (!(await waitGone(tree, KILL_GRACE_MS))) {
        tree.signal('SIGKILL');
        await waitGone(tree, KILL_GRACE_MS);
      }
      // The output pipes may still be held by a process we could not find (a setsid grandchild
      // whose parent had already exited). Give them a moment, then stop waiting for them so the
      // caller gets an answer.
      let timer: NodeJS.Timeout | undefined;
      const closed = await Promise.race([
        this.closed.then(
          () => true,
          () => true,
        ),
        new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), KILL_GRACE_MS))),
      ]);
      clearTimeout(timer);
      if (!closed) this.forceClose();
    })();
    return this.killing;
  }
}

async function waitGone(tree: ProcessTree, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (!tree.alive()) return true;
    if (Date.now() >= deadline) return false;
    await sleep(25);
  }
}
