// The run's stdio MCP servers, in the sandbox step (inside the VPC, the one function that reaches the
// thread's sandbox): they run in the sandbox as the command server's children, started on first use
// and kept for the task's life. Here their tools are listed once per run (after the reach step's
// Connect listed the HTTP servers and the tool step readied the sandbox), and their calls are made,
// each through a fresh SDK client over the command server (shared/reach/stdio-transport.ts).
import type { RunInput } from '../../contracts.ts';
import type { ReachCall } from '../../context/store.ts';
import type { JsonLogger } from '../../observability/log.ts';
import { redactSecrets, secretPatternsWith } from '../../policy/secret-filter.ts';
import { callServerTool, listServerTools, type McpTarget } from '../../reach/mcp-client.ts';
import { addListedTools, type McpListing, sortListing } from '../../reach/mcp-tools.ts';
import { storeResultImages } from '../../reach/result-images.ts';
import { isStdioServer, type RunMcpServer } from '../../reach/run-reach.ts';
import { SandboxStdioTransport } from '../../reach/stdio-transport.ts';
import { type SandboxAddress, SandboxUnreachable } from '../../sandbox/client.ts';
import { ToolError } from '../../tools/text.ts';
import type { CallMcpTool } from '../../tools/tool.ts';
import { saveMcpListing, type RunToolsDeps } from './run-tools.ts';
import type { RunSnapshot } from './snapshot.ts';

function stdioTarget(server: RunMcpServer & { command: string }, address: SandboxAddress): McpTarget {
  const timeoutMs = server.timeoutSeconds * 1000;
  const spec = { command: server.command, args: server.args ?? [], env: server.env ?? {} };
  return { name: server.name, timeoutMs, transport: () => new SandboxStdioTransport(address, server.name, spec, timeoutMs) };
}

const stdioServersOf = (snapshot: RunSnapshot) => (snapshot.reach?.mcpServers ?? []).filter(isStdioServer);

/** Lists the stdio servers the listing awaits; a server that fails is left out and named, as in Connect. */
export async function listInSandbox(
  deps: RunToolsDeps & { logger: JsonLogger; now: () => number },
  run: RunInput,
  snapshot: RunSnapshot,
  listing: McpListing,
  address: SandboxAddress,
): Promise<void> {
  const awaiting = new Set(listing.awaitingSandbox ?? []);
  const patterns = secretPatternsWith(snapshot.secretPatterns);
  const clean = (text: string) => redactSecrets(text, patterns);
  const done: McpListing = { tools: [...listing.tools], unavailable: [...listing.unavailable] };
  // One after another: each is a process of the one sandbox, and a first `npx` start is heavy.
  for (const server of stdioServersOf(snapshot).filter((s) => awaiting.has(s.name))) {
    const started = deps.now();
    const target = stdioTarget(server, address);
    try {
      const tools = await listServerTools(target, AbortSignal.timeout(target.timeoutMs));
      const offered = addListedTools(done, server, tools, clean, true);
      deps.logger.info('mcp server listed', {
        server: server.name,
        tools: tools.length,
        offered,
        inSandbox: true,
        durationMs: deps.now() - started,
      });
    } catch (error) {
      const reason = clean((error as Error).name === 'TimeoutError' ? 'no answer in time' : (error as Error).message).slice(0, 300);
      done.unavailable.push({ server: server.name, reason });
      deps.logger.warn('mcp server unavailable', { server: server.name, reason, inSandbox: true, durationMs: deps.now() - started });
    }
  }
  sortListing(done);
  await saveMcpListing(deps, run, done);
}

/**
 * The sandbox step's caller of the run's stdio servers: the result clamped and filtered with the run's
 * secret patterns, its images stored; `reached` records the call for the audit line.
 */
export function stdioCaller(
  deps: Pick<RunToolsDeps, 'store'>,
  run: RunInput,
  toolUseId: string,
  snapshot: RunSnapshot,
  address: SandboxAddress,
  reached: (call: ReachCall) => void,
): CallMcpTool {
  const patterns = secretPatternsWith(snapshot.secretPatterns);
  return async (name, tool, args, signal) => {
    const server = stdioServersOf(snapshot).find((s) => s.name === name);
    if (!server) throw new ToolError(`no stdio MCP server ${name} in this run`);
    const target = stdioTarget(server, address);
    const call: ReachCall = { server: name, tool, bytes: 0 };
    reached(call);
    const result = await callServerTool(target, tool, args, AbortSignal.any([signal, AbortSignal.timeout(target.timeoutMs)])).catch(
      (error: unknown) => {
        // A lost sandbox is the step's to handle (it replaces the task), a stop the stop's; the rest the model reads.
        if (error instanceof SandboxUnreachable || signal.aborted) throw error;
        const reason = (error as Error).name === 'TimeoutError' ? `no answer within ${server.timeoutSeconds} s` : (error as Error).message;
        throw new ToolError(redactSecrets(`the ${name} MCP server failed: ${reason}`, patterns));
      },
    );
    call.bytes = result.bytes;
    const images = await storeResultImages(deps.store, run.threadId, toolUseId, result.images);
    return { status: result.status, text: redactSecrets(result.text, patterns), ...(images.length ? { images } : {}) };
  };
}
