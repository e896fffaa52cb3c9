// The reach step, in the reach-step Lambda (the one function that reaches the Internet and HTTP MCP
// servers, and the only one that may read the MCP secrets): Connect lists the run's HTTP MCP servers'
// tools once per run (stdio servers, which run in the sandbox, it leaves to the sandbox step, or
// refuses in the isolated sandbox network); a reach tool call (web_fetch, an MCP tool) runs here with the run's stop
// watch, its result clamped and secret-filtered (the run's patterns and every secret value this
// invocation read), timed into the context for the audit record, and counted by server and tool.
import type { ActorDeps } from '../actor.ts';
import type { LoopState, RunInput } from '../../contracts.ts';
import { loadContext, type ReachCall, saveLoadedContext, contextIdOf } from '../../context/store.ts';
import { appendToolResult, pendingToolCall, toolTime } from '../../context/tool-calls.ts';
import type { JsonLogger } from '../../observability/log.ts';
import type { MetricsSink } from '../../observability/metrics.ts';
import { redactSecrets, secretPatternsWith, type SecretPattern } from '../../policy/secret-filter.ts';
import { guardedFetch } from '../../reach/guarded-fetch.ts';
import { callServerTool, type HttpMcpTarget, listServerTools } from '../../reach/mcp-client.ts';
import { addListedTools, type McpListing, sortListing } from '../../reach/mcp-tools.ts';
import { isStdioServer, type RunMcpServer } from '../../reach/run-reach.ts';
import { approvalRuleFor } from '../../approvals/rules.ts';
import { toolStepFirst } from '../../hooks/step-hooks.ts';
import { bareHost } from '../../reach/url-rules.ts';
import { fetchPage } from '../../reach/web-fetch.ts';
import { storeResultImages } from '../../reach/result-images.ts';
import { SECRET_REFERENCE } from '../../settings/groups/reach.ts';
import { DEFAULT_PAGE_BYTES, MAX_PAGE_BYTES } from '../../reach/limits.ts';
import { runReachTool } from '../../tools/run.ts';
import { ToolError } from '../../tools/text.ts';
import type { ToolOutcome } from '../../tools/tool.ts';
import { personOf } from '../../admission/person.ts';
import { accessTokenFor, type OAuthFlowDeps } from '../../reach/oauth/flow.ts';
import { stepMeta } from './deps.ts';
import { checkFlagsBetweenTools, routeAfterTool, stoppedAt, watchForStop } from './run-control.ts';
import { loadMcpListing, runToolsOf, type RunToolsDeps, saveMcpListing } from './run-tools.ts';
import { loadSnapshot, type RunSnapshot } from './snapshot.ts';
import { countReachCall, countToolCall } from './step-metrics.ts';

export interface ReachStepDeps extends RunToolsDeps {
  /** The thread's actor item: stop and steer flags. */
  actor: Pick<ActorDeps, 'db' | 'tableName'>;
  /** The value of the secret `<stack>/mcp/NAME`. */
  readSecret(name: string): Promise<string>;
  /** Loopback targets allowed: local testing only (REACH_ALLOW_LOOPBACK). */
  allowLoopback: boolean;
  /** The deployment's sandbox network (sandboxNetwork): stdio MCP servers need egress or public. */
  sandboxNetwork: 'isolated' | 'egress' | 'public';
  logger: JsonLogger;
  /** Epoch milliseconds. */
  now: () => number;
  metrics?: MetricsSink;
  /** People's OAuth connections (servers with `"auth": "oauth"`). */
  oauth: OAuthFlowDeps;
}

/** The secret values one invocation read: every text it lets out is filtered with them. */
class SecretValues {
  readonly #values = new Set<string>();
  add(value: string): string {
    if (value) this.#values.add(value);
    return value;
  }
  patterns(snapshot: RunSnapshot): SecretPattern[] {
    const literal = [...this.#values].map((value) => ({
      kind: 'MCP secret',
      pattern: new RegExp(value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'g'),
    }));
    return [...secretPatternsWith(snapshot.secretPatterns), ...literal];
  }
}

/** Why an OAuth server is left out of a run without a person (an event's, a trigger's). */
export const OAUTH_NEEDS_PERSON =
  "it is called with a person's own account (OAuth), and this run was started by an event or a trigger, not a person; such runs use only servers with static credentials";

/** The run's person as OAuth connections are keyed (`adapter:userId`), or undefined for a run nobody sent. */
export function oauthPersonOf(run: RunInput): string | undefined {
  const person = personOf(run.prompt);
  return person ? `${person.adapter}:${person.userId}` : undefined;
}

/** The server is not connected by the run's person (or the run has none): its tools are left out. */
class NotConnected extends Error {
  override name = 'NotConnected';
}

/** The person's access token for an OAuth server (refreshed if near expiry); NotConnected when they have none. */
async function personalToken(
  deps: ReachStepDeps,
  server: RunMcpServer & { url: string },
  run: RunInput,
  secrets: SecretValues,
): Promise<string> {
  const person = oauthPersonOf(run);
  if (!person) throw new ToolError(`the ${server.name} server needs a person's own account: ${OAUTH_NEEDS_PERSON}`);
  const token = await accessTokenFor(deps.oauth, { person, server: server.name, serverUrl: server.url });
  if (!token) throw new NotConnected(`${person} has not connected ${server.name}`);
  return secrets.add(token);
}

/** The server as the client reaches it: secrets read into its headers (an OAuth server: the run's person's token); a channel's server only through the guarded fetch. */
async function targetOf(deps: ReachStepDeps, server: RunMcpServer, secrets: SecretValues, run: RunInput): Promise<HttpMcpTarget> {
  const headers: Record<string, string> = {};
  if (server.auth === 'oauth' && server.url !== undefined) {
    if (server.declaredBy !== 'operator') throw new ToolError(`the ${server.name} server may not use people's accounts`);
    headers.Authorization = `Bearer ${await personalToken(deps, { ...server, url: server.url }, run, secrets)}`;
  }
  for (const [name, declared] of Object.entries(server.headers ?? {})) {
    let value = declared;
    for (const [reference, secretName] of declared.matchAll(new RegExp(SECRET_REFERENCE.source, 'g'))) {
      // Settings refuse a channel's server that names a secret; this holds even if they did not.
      if (server.declaredBy !== 'operator') throw new ToolError(`the ${server.name} server may not use secrets`);
      const secret = await deps.readSecret(secretName!).catch((error: unknown) => {
        throw new ToolError(`the secret ${secretName} could not be read (${(error as Error).name})`);
      });
      value = value.replace(reference, secrets.add(secret));
    }
    headers[name] = value;
  }
  const url = server.url;
  if (url === undefined) throw new ToolError(`the ${server.name} server runs in the sandbox, not here`);
  const target = { name: server.name, url, headers, timeoutMs: server.timeoutSeconds * 1000 };
  if (server.declaredBy === 'operator') return target;
  const host = bareHost(new URL(url));
  const fetcher = guardedFetch({ allow: [host] }, { allowLoopback: deps.allowLoopback });
  return { ...target, fetch: fetcher as unknown as HttpMcpTarget['fetch'] };
}

/** Lists every MCP server of the run (at once) and stores what it offers; a server that fails is left out and named. */
export async function connectStep(deps: ReachStepDeps, run: RunInput, loop: LoopState): Promise<LoopState> {
  const next = (listing: McpListing): LoopState => ({
    step: loop.step,
    // Stdio servers are listed by the sandbox step, once the tool step has readied the sandbox.
    next: listing.awaitingSandbox?.length ? 'tool' : 'model',
    ...(loop.contextVersion ? { contextVersion: loop.contextVersion } : {}),
  });
  // A retried Connect finds the listing stored.
  const stored = await loadMcpListing(deps, run);
  if (stored) return next(stored);
  const snapshot = await loadSnapshot(deps, run);
  const secrets = new SecretValues();
  const listing: McpListing = { tools: [], unavailable: [] };
  const servers = snapshot.reach?.mcpServers ?? [];
  const stdio = servers.filter(isStdioServer).map((server) => server.name);
  if (stdio.length && deps.sandboxNetwork === 'isolated') {
    for (const server of stdio) listing.unavailable.push({ server, reason: STDIO_NEEDS_NETWORK });
  } else if (stdio.length) listing.awaitingSandbox = stdio;
  await Promise.all(
    servers
      .filter((server) => !isStdioServer(server))
      .map(async (server) => {
        const started = deps.now();
        try {
          const target = await targetOf(deps, server, secrets, run);
          const tools = await listServerTools(target, AbortSignal.timeout(target.timeoutMs));
          const offered = addListedTools(listing, server, tools, (text) => redactSecrets(text, secrets.patterns(snapshot)), false);
          deps.logger.info('mcp server listed', { server: server.name, tools: tools.length, offered, durationMs: deps.now() - started });
        } catch (error) {
          if (error instanceof NotConnected && server.url) {
            (listing.toConnect ??= []).push({
              server: server.name,
              serverUrl: server.url,
              ...(server.oauthClient ? { oauthClient: server.oauthClient } : {}),
            });
            deps.logger.info('mcp server not connected by the person', { server: server.name });
            return;
          }
          const reason = redactSecrets(reasonOf(error), secrets.patterns(snapshot)).slice(0, 300);
          listing.unavailable.push({ server: server.name, reason });
          deps.logger.warn('mcp server unavailable', { server: server.name, reason, durationMs: deps.now() - started });
        }
      }),
  );
  sortListing(listing);
  await saveMcpListing(deps, run, listing);
  return next(listing);
}

/** Why a stdio server is left out in the isolated sandbox network (said once in the thread). */
export const STDIO_NEEDS_NETWORK =
  "it is a stdio server, which runs in the sandbox, and this deployment's sandbox network is isolated; a stdio server needs the egress or public sandbox network (deployment setting sandboxNetwork)";

const reasonOf = (error: unknown): string =>
  (error as Error).name === 'TimeoutError' ? 'no answer in time' : ((error as Error).message ?? String(error));

/** Runs the run's pending reach call. */
export async function reachToolStep(deps: ReachStepDeps, run: RunInput, loop: LoopState): Promise<LoopState> {
  const [context, snapshot] = await Promise.all([loadContext(deps.store, contextIdOf(run)), loadSnapshot(deps, run)]);
  const runTools = await runToolsOf(deps, run, snapshot);
  const call = pendingToolCall(context.entries);
  if (runTools === 'connect') return { step: loop.step, next: 'connect' };
  const { tools } = runTools;
  if (!call || tools.runsIn(call.name) !== 'reach') return routeAfterTool(context.entries, loop.step, tools);
  const flagged = await checkFlagsBetweenTools(deps, run, loop, context);
  if (flagged) return flagged;
  // A call a rule of settings.json `approvals` holds runs here only once a person approved it; the tool step asks them.
  if (loop.approvedToolUseId !== call.toolUseId && approvalRuleFor(snapshot.approvals, call)) return { step: loop.step, next: 'tool' };
  if (toolStepFirst(snapshot, context.entries, call, loop.approvedToolUseId)) return { step: loop.step, next: 'tool' };
  const started = deps.now();
  const secrets = new SecretValues();
  let reached: ReachCall | undefined;
  const servers = new Map((snapshot.reach?.mcpServers ?? []).map((server) => [server.name, server]));
  const pageFetcher = guardedFetch({ allow: snapshot.reach?.webFetch?.allow ?? [] }, { allowLoopback: deps.allowLoopback });
  const stopWatch = watchForStop(deps, run);
  const outcome: ToolOutcome = await runReachTool(tools, call, {
    signal: stopWatch.signal,
    async fetchPage(url, maxBytes, signal) {
      const parsed = URL.canParse(url) ? new URL(url) : undefined;
      reached = { server: parsed ? bareHost(parsed) : 'web', tool: 'web_fetch', bytes: 0 };
      const page = await fetchPage(pageFetcher, url, Math.min(maxBytes ?? DEFAULT_PAGE_BYTES, MAX_PAGE_BYTES), signal);
      reached.bytes = Buffer.byteLength(page.text);
      return page;
    },
    async callMcpTool(name, tool, args, signal) {
      const server = servers.get(name);
      if (!server) throw new ToolError(`no MCP server ${name} in this run`);
      reached = { server: name, tool, bytes: 0 };
      const target = await targetOf(deps, server, secrets, run).catch((error: unknown) => {
        if (error instanceof NotConnected) throw new ToolError(`you have not connected the ${name} server (or it was disconnected)`);
        throw error;
      });
      const result = await callServerTool(target, tool, args, AbortSignal.any([signal, AbortSignal.timeout(target.timeoutMs)]));
      reached.bytes = result.bytes;
      const images = await storeResultImages(deps.store, run.threadId, call.toolUseId, result.images);
      return { status: result.status, text: result.text, ...(images.length ? { images } : {}) };
    },
  })
    .catch((error: unknown) => {
      if (stopWatch.signal.aborted) return undefined;
      throw error;
    })
    .finally(() => stopWatch.stop())
    .then((result) => result ?? { status: 'error' as const, text: 'stopped' });
  if (stopWatch.signal.aborted) {
    deps.logger.info('tool call stopped', { runId: run.runId, tool: call.name, toolUseId: call.toolUseId });
    return stoppedAt(loop.step);
  }
  outcome.text = redactSecrets(outcome.text, secrets.patterns(snapshot));
  const ran = { ...toolTime(started, deps.now()), ...(reached ? { reach: reached } : {}) };
  appendToolResult(context.entries, call, outcome, stepMeta(deps.now, run, loop.step), ran);
  await saveLoadedContext(deps.store, contextIdOf(run), context);
  deps.logger.info('reach call', {
    runId: run.runId,
    tool: call.name,
    toolUseId: call.toolUseId,
    server: reached?.server,
    serverTool: reached?.tool,
    durationMs: ran.durationMs,
    outcome: outcome.status,
    bytes: reached?.bytes,
  });
  countToolCall(deps.metrics, call.name, outcome.status);
  if (reached)
    countReachCall(deps.metrics, reached.tool === 'web_fetch' ? 'web' : reached.server, reached.tool, outcome.status, ran.durationMs);
  return routeAfterTool(context.entries, loop.step, tools);
}
