// An MCP server's tools as the run's tools: named `<server>__<tool>` within Bedrock's rule
// ([a-zA-Z0-9_-]{1,64}, longer or odd names shortened deterministically), filtered by the server's
// allow and deny patterns, with the server's description and JSON Schema. Made from the listing the
// Connect step stored beside the run's snapshot, so every step of the run offers the same tools.
// No MCP SDK here: the agent step (which offers the tools) carries these definitions only.
import { createHash } from 'node:crypto';
import * as z from 'zod';
import { defineTool, type AnyTool } from '../tools/tool.ts';
import type { RunMcpServer } from './run-reach.ts';

/** One tool of a server, as listed for the run. */
export interface ListedMcpTool {
  /** What the model calls it. */
  name: string;
  server: string;
  /** The server's own name for it. */
  tool: string;
  description: string;
  inputSchema: Record<string, unknown>;
  /** A stdio server's tool: called by the sandbox step, through the thread's sandbox. */
  inSandbox?: true;
}

/**
 * What the Connect step found: the run's MCP tools, and the servers that could not be listed (said
 * once in the thread). `awaitingSandbox`: stdio servers the sandbox step has still to list (the run
 * waits for them; shared/run/steps/sandbox-mcp.ts).
 */
export interface McpListing {
  tools: ListedMcpTool[];
  unavailable: { server: string; reason: string }[];
  awaitingSandbox?: string[];
}

const MAX_NAME = 64;
const INVALID = /[^a-zA-Z0-9_-]/g;

/** `<server>__<tool>`, made valid for Bedrock; a name that had to change gets a short hash of the original, so two never collide. */
export function modelToolName(server: string, tool: string): string {
  const wanted = `${server}__${tool}`;
  const valid = wanted.replace(INVALID, '_');
  if (valid === wanted && valid.length <= MAX_NAME) return valid;
  const hash = createHash('sha256').update(wanted).digest('hex').slice(0, 8);
  return `${valid.slice(0, MAX_NAME - hash.length - 1)}_${hash}`;
}

const globRegex = (pattern: string) => new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replaceAll('*', '.*')}$`);

/** Whether the server's settings offer this tool: allowed (or no allow list) and not denied. */
export function toolOffered(server: Pick<RunMcpServer, 'tools'>, tool: string): boolean {
  const { allow, deny } = server.tools ?? {};
  if (deny?.some((p) => globRegex(p).test(tool))) return false;
  return !allow || allow.some((p) => globRegex(p).test(tool));
}

/** The schema Bedrock is given: the server's, without what Bedrock does not read. */
export function bedrockInputSchema(schema: Record<string, unknown> | undefined): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = schema ?? {};
  return { type: 'object', ...rest };
}

/**
 * Adds what `server` lists to the run's listing: the offered tools under their model names (a name
 * already taken is offered once: Bedrock refuses two tools of one name), descriptions cleaned by
 * `clean` (the secret filter) and cut. Returns how many were offered.
 */
export function addListedTools(
  listing: McpListing,
  server: RunMcpServer,
  tools: { name: string; description?: string; inputSchema?: Record<string, unknown> }[],
  clean: (text: string) => string,
  inSandbox: boolean,
): number {
  const offered = tools.filter((tool) => toolOffered(server, tool.name));
  for (const tool of offered) {
    const name = modelToolName(server.name, tool.name);
    if (listing.tools.some((listed) => listed.name === name)) continue;
    listing.tools.push({
      name,
      server: server.name,
      tool: tool.name,
      description: clean(tool.description ?? '').slice(0, 4000),
      inputSchema: bedrockInputSchema(tool.inputSchema),
      ...(inSandbox ? { inSandbox: true as const } : {}),
    });
  }
  return offered.length;
}

/** In a fixed order, so the tool list (part of the cached prompt) does not depend on which server answered first. */
export function sortListing(listing: McpListing): void {
  listing.tools.sort((a, b) => (a.name < b.name ? -1 : 1));
  listing.unavailable.sort((a, b) => (a.server < b.server ? -1 : 1));
}

/** The listing without its stdio servers, each named with `reason` (no sandbox for them in this run). */
export function withoutSandboxServers(listing: McpListing, reason: string): McpListing {
  const unavailable = [...listing.unavailable, ...(listing.awaitingSandbox ?? []).map((server) => ({ server, reason }))];
  const done = { tools: listing.tools, unavailable };
  sortListing(done);
  return done;
}

/** The listed tools as tools of the run: each call goes to the reach step (or, for a stdio server, the sandbox step), which calls the server. */
export function mcpToolDefinitions(listing: McpListing): AnyTool[] {
  return listing.tools.map((listed): AnyTool => {
    const common = {
      name: listed.name,
      description: listed.description.trim() || `${listed.tool} (from the ${listed.server} MCP server)`,
      // The server checks its own input; any object goes to it as the model sent it.
      input: z.looseObject({}),
      inputSchema: listed.inputSchema,
    };
    return listed.inSandbox
      ? defineTool({
          ...common,
          runsIn: 'sandbox',
          run: (input, { callMcpTool, signal }) => callMcpTool(listed.server, listed.tool, input, signal),
        })
      : defineTool({
          ...common,
          runsIn: 'reach',
          run: (input, { callMcpTool, signal }) => callMcpTool(listed.server, listed.tool, input, signal),
        });
  });
}
