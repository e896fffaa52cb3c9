// The tools a run offers: the built-in ones, then web_fetch when the run's channel allows hosts, then
// its MCP servers' tools as the Connect step listed them once for the run (runs/<runId>.mcp.json,
// beside the snapshot). A run whose snapshot reaches nothing is offered the built-in tools with no
// read at all, and a listing is read once per container, like the snapshot.
import type { RunInput } from '../../contracts.ts';
import { readText, writeText } from '../../context/store.ts';
import { type McpListing, mcpToolDefinitions } from '../../reach/mcp-tools.ts';
import { webFetch } from '../../tools/builtin/web-fetch.ts';
import { SUBAGENT_TOOL } from '../../tools/builtin/subagent.ts';
import type { ToolRegistry } from '../../tools/registry.ts';
import type { AnyTool } from '../../tools/tool.ts';
import { type RunCache, type RunSnapshot, runFileKey, type SnapshotDeps } from './snapshot.ts';

export interface RunToolsDeps extends SnapshotDeps {
  /** The built-in tools. */
  tools: ToolRegistry;
  /** MCP listings this container has read (absent: every load reads S3). */
  listings?: RunCache<McpListing>;
}

const listingKey = (run: RunInput) => runFileKey(run, '.mcp');

export async function saveMcpListing(deps: RunToolsDeps, run: RunInput, listing: McpListing): Promise<void> {
  await writeText(deps.store, listingKey(run), JSON.stringify(listing), 'application/json');
  deps.listings?.set(run.runId, listing);
}

/** The run's listing, or undefined before the Connect step stored it. */
export async function loadMcpListing(deps: RunToolsDeps, run: RunInput): Promise<McpListing | undefined> {
  // A listing that awaits the sandbox step changes once more (in another function): read it again until it is whole.
  const known = deps.listings?.get(run.runId);
  if (known && !known.awaitingSandbox?.length) return known;
  const raw = await readText(deps.store, listingKey(run));
  if (!raw) return undefined;
  const listing = JSON.parse(raw) as McpListing;
  deps.listings?.set(run.runId, listing);
  return listing;
}

/** The built-in tools without `subagent`, made once per registry: their specs are part of every model call. */
const notDelegating = new WeakMap<ToolRegistry, ToolRegistry>();
function withoutSubagent(tools: ToolRegistry): ToolRegistry {
  if (!tools.get(SUBAGENT_TOOL)) return tools;
  let without = notDelegating.get(tools);
  if (!without) notDelegating.set(tools, (without = tools.without([SUBAGENT_TOOL])));
  return without;
}

export type RunTools = { tools: ToolRegistry; listing?: McpListing } | 'connect';

/** The run's tools, or 'connect' when its MCP servers have not all been listed yet. */
export async function runToolsOf(deps: RunToolsDeps, run: RunInput, snapshot: RunSnapshot): Promise<RunTools> {
  const reach = snapshot.reach;
  const builtin = snapshot.delegates ? deps.tools : withoutSubagent(deps.tools);
  if (!reach) return { tools: builtin };
  const extra: AnyTool[] = reach.webFetch ? [webFetch] : [];
  if (!reach.mcpServers?.length) return { tools: builtin.with(extra) };
  const listing = await loadMcpListing(deps, run);
  if (!listing || listing.awaitingSandbox?.length) return 'connect';
  return { tools: builtin.with([...extra, ...mcpToolDefinitions(listing)]), listing };
}
