// MCP servers that speak over stdio (settings.json `"command": ...`), kept running inside the task:
// started on a thread's first use, reused by every later call until the task stops. The trusted side
// (sandbox-step) sends one JSON-RPC message per request and gets back what the server wrote in answer
// (POST /mcp/<name>, README.md). The bridge knows just enough of MCP to let many short-lived clients
// (one per Lambda invocation) share one long-lived server: it answers a repeated `initialize` with the
// server's first answer (and passes its `notifications/initialized` on once), and gives each client
// request an id of its own, so two clients that both count from 0 never get each other's answers.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { ProcessTree } from './process-tree.ts';

export interface StdioSpec {
  command: string;
  args: string[];
  env: Record<string, string>;
}

type Message = Record<string, unknown>;

/** One stdout line (one message) at most this long; a server that writes more is stopped. */
const MAX_LINE_BYTES = 32 * 1024 * 1024;
/** What is kept of stderr, to say why a server ended. */
const STDERR_TAIL = 2000;
/** Messages the server sent while nobody waited, handed to the next caller. */
const MAX_QUEUED = 100;
const KILL_GRACE_MS = 2_000;

export class StdioError extends Error {}

const isRequest = (m: Message) => typeof m.method === 'string' && m.id !== undefined && m.id !== null;

interface Waiting {
  clientId: unknown;
  collected: Message[];
  done: (messages: Message[]) => void;
}

/** One running server process. */
class StdioServer {
  readonly key: string;
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly tree: ProcessTree | null;
  private exited = false;
  private stderr = '';
  private pendingLine: Buffer[] = [];
  private pendingBytes = 0;
  private nextId = 1;
  private readonly waiting = new Map<number, Waiting>();
  private queued: Message[] = [];
  /** The server's answer to the first `initialize`, given to every later client. */
  initialized?: { result: unknown };
  /** The server had its `notifications/initialized`. */
  handshaken = false;

  constructor(spec: StdioSpec, cwd: string, env: Record<string, string>) {
    this.key = specKey(spec);
    // detached: a group of its own, so the whole tree can be stopped with it.
    this.child = spawn(spec.command, spec.args, { cwd, env: { ...env, ...spec.env }, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    this.tree = this.child.pid === undefined ? null : new ProcessTree(this.child.pid, () => !this.exited);
    this.child.stdout.on('data', (chunk: Buffer) => this.read(chunk));
    this.child.stderr.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString('utf8')).slice(-STDERR_TAIL);
    });
    this.child.stdin.on('error', () => undefined);
    // Whoever waits is told why the server ended; the next message starts it again.
    const end = (why: string) => {
      this.exited = true;
      const reason = `${why}${this.stderr.trim() ? `: ${this.stderr.trim()}` : ''}`;
      for (const [, waiting] of this.waiting) waiting.done([...waiting.collected, errorAnswer(waiting.clientId, reason)]);
      this.waiting.clear();
    };
    this.child.on('error', (error) => end(`the server could not be started (${error.message})`));
    this.child.on('exit', (code, signal) => end(`the server exited (${signal ?? `code ${code}`})`));
  }

  get running(): boolean {
    return !this.exited;
  }

  private read(chunk: Buffer): void {
    let start = 0;
    for (let newline = chunk.indexOf(10); newline !== -1; newline = chunk.indexOf(10, start)) {
      this.pendingLine.push(chunk.subarray(start, newline));
      const line = Buffer.concat(this.pendingLine).toString('utf8');
      this.pendingLine = [];
      this.pendingBytes = 0;
      start = newline + 1;
      this.receive(line);
    }
    const rest = chunk.subarray(start);
    this.pendingBytes += rest.length;
    if (this.pendingBytes > MAX_LINE_BYTES) {
      this.stderr = `a message over ${MAX_LINE_BYTES} bytes`;
      void this.stop();
      return;
    }
    if (rest.length) this.pendingLine.push(rest);
  }

  private receive(line: string): void {
    if (!line.trim()) return;
    let message: Message;
    try {
      message = JSON.parse(line) as Message;
    } catch {
      return; // Not a message (a server that logs to stdout): MCP clients skip such lines too.
    }
    const waiting = typeof message.id === 'number' && !('method' in message) ? this.waiting.get(message.id) : undefined;
    if (waiting) {
      this.waiting.delete(message.id as number);
      waiting.done([...waiting.collected, { ...message, id: waiting.clientId }]);
      return;
    }
    // A notification or a request of the server's: to whoever waits, or the next caller.
    const someone = this.waiting.values().next().value;
    if (someone) someone.collected.push(message);
    else if (this.queued.length < MAX_QUEUED) this.queued.push(message);
  }

  private write(message: Message): void {
    if (this.exited) throw new StdioError('the server is not running');
    this.child.stdin.write(`${JSON.stringify(message)}\n`);
  }

  /** Sends a request under an id of the bridge's, and waits for its answer (returned under the client's id). */
  request(message: Message, timeoutMs: number, gone: AbortSignal): Promise<Message[]> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      const finish = (messages: Message[]) => {
        clearTimeout(timer);
        gone.removeEventListener('abort', onGone);
        resolve(messages);
      };
      const onGone = () => {
        // The caller went away (a stop, its own timeout): the server is told to stop the work.
        if (!this.waiting.delete(id)) return;
        this.notifyCancelled(id);
        finish([]);
      };
      const waiting: Waiting = { clientId: message.id, collected: this.takeQueued(), done: finish };
      this.waiting.set(id, waiting);
      const timer = setTimeout(() => {
        if (!this.waiting.delete(id)) return;
        this.notifyCancelled(id);
        finish([...waiting.collected, errorAnswer(message.id, `no answer within ${timeoutMs} ms`)]);
      }, timeoutMs);
      gone.addEventListener('abort', onGone);
      try {
        this.write({ ...message, id });
      } catch (error) {
        this.waiting.delete(id);
        finish([errorAnswer(message.id, (error as Error).message)]);
      }
    });
  }

  /** A notification or an answer to the server's own request: written, nothing awaited. */
  notify(message: Message): Message[] {
    if (message.method === 'notifications/cancelled') {
      // The client cancels under its own id; the server knows the bridge's.
      const params = (message.params ?? {}) as Message;
      const entry = [...this.waiting].find(([, w]) => w.clientId === params.requestId);
      if (!entry) return this.takeQueued();
      this.waiting.delete(entry[0]);
      entry[1].done([]);
      this.notifyCancelled(entry[0]);
      return this.takeQueued();
    }
    this.write(message);
    return this.takeQueued();
  }

  private notifyCancelled(id: number): void {
    if (this.exited) return;
    this.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } })}\n`);
  }

  private takeQueued(): Message[] {
    const messages = this.queued;
    this.queued = [];
    return messages;
  }

  /** SIGTERM to its tree, SIGKILL to what is left after a grace period. */
  async stop(): Promise<void> {
    const tree = this.tree;
    this.child.stdin.destroy();
    if (!tree) return;
    tree.signal('SIGTERM');
    const deadline = Date.now() + KILL_GRACE_MS;
    while (tree.alive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    if (tree.alive()) tree.signal('SIGKILL');
  }
}

function errorAnswer(id: unknown, message: string): Message {
  return { jsonrpc: '2.0', id, error: { code: -32000, message } };
}

function specKey(spec: StdioSpec): string {
  return createHash('sha256')
    .update(JSON.stringify([spec.command, spec.args, Object.entries(spec.env).sort()]))
    .digest('hex');
}

/** The task's stdio servers by name. */
export class StdioServers {
  private readonly servers = new Map<string, StdioServer>();

  constructor(
    private readonly cwd: string,
    /** The base environment (PATH, HOME, LANG), as commands get it. */
    private readonly env: () => Promise<Record<string, string>>,
  ) {}

  /** The server of this name, started (or restarted, when it ended or its settings changed) as needed. */
  private async serverFor(name: string, spec: StdioSpec): Promise<StdioServer> {
    const known = this.servers.get(name);
    if (known?.running && known.key === specKey(spec)) return known;
    if (known) await known.stop();
    const server = new StdioServer(spec, this.cwd, await this.env());
    this.servers.set(name, server);
    return server;
  }

  /** One message from a client; the messages that answer it (for a request: its answer, last). */
  async send(name: string, spec: StdioSpec, message: Message, timeoutMs: number, gone: AbortSignal): Promise<Message[]> {
    const server = await this.serverFor(name, spec);
    if (message.method === 'initialize' && isRequest(message)) {
      if (server.initialized) return [{ jsonrpc: '2.0', id: message.id, result: server.initialized.result }];
      const answer = await server.request(message, timeoutMs, gone);
      const last = answer.at(-1);
      if (last && 'result' in last) server.initialized = { result: last.result };
      return answer;
    }
    // The client's handshake ends with this; the server has had it once already.
    if (message.method === 'notifications/initialized') {
      if (server.handshaken) return [];
      server.handshaken = true;
      return server.notify(message);
    }
    return isRequest(message) ? server.request(message, timeoutMs, gone) : server.notify(message);
  }

  /** Stops every server (the task is stopping). */
  async close(): Promise<void> {
    await Promise.all([...this.servers.values()].map((server) => server.stop()));
    this.servers.clear();
  }
}
