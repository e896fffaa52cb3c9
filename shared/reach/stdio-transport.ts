// The MCP SDK's client talking to a stdio server in the thread's sandbox: each message the client
// sends is one request to the command server, whose answer holds what the server wrote back. Closing
// the transport cuts a request still waiting, and the command server then tells the MCP server to
// cancel it (a stop during a call).
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { type JSONRPCMessage, JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import { type SandboxAddress, stdioMessage, type StdioServerSpec } from '../sandbox/client.ts';

export class SandboxStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly #closed = new AbortController();

  constructor(
    private readonly address: SandboxAddress,
    private readonly name: string,
    private readonly spec: StdioServerSpec,
    private readonly timeoutMs: number,
  ) {}

  async start(): Promise<void> {}

  async send(message: JSONRPCMessage): Promise<void> {
    const answers = await stdioMessage(this.address, this.name, this.spec, message, this.timeoutMs, this.#closed.signal);
    for (const answer of answers) {
      // What comes out of the sandbox is checked like anything else the sandbox says.
      const parsed = JSONRPCMessageSchema.safeParse(answer);
      if (parsed.success) this.onmessage?.(parsed.data);
      else this.onerror?.(new Error(`the ${this.name} server sent a message that is not JSON-RPC`));
    }
  }

  async close(): Promise<void> {
    if (this.#closed.signal.aborted) return;
    this.#closed.abort(new Error('transport closed'));
    this.onclose?.();
  }
}
