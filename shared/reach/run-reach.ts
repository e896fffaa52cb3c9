// What one run may reach, decided by prepare from settings.json for the run's channel and kept in the
// run's snapshot: web_fetch's allowed hosts, and the MCP servers (with `${secret:NAME}` references,
// never secret values: those are read only by the reach step, when it calls the server).
import type { Settings } from '../settings/schema.ts';

export interface RunMcpServer {
  name: string;
  /** An HTTP server's address; absent for a stdio server. */
  url?: string;
  /** As declared: values may hold `${secret:NAME}` references. */
  headers?: Record<string, string>;
  /** A stdio server (run in the thread's sandbox): the program, its arguments and environment. */
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  tools?: { allow?: string[]; deny?: string[] };
  timeoutSeconds: number;
  /** operator: declared in the top-level mcpServers (may be private, may use secrets); channel: added for the channel by an admin. */
  declaredBy: 'operator' | 'channel';
}

export interface RunReach {
  webFetch?: { allow: string[] };
  mcpServers?: RunMcpServer[];
}

/** The reach of a run in `channelKey` (`adapter:channel`), or undefined when it may reach nothing. */
export function runReachOf(settings: Settings, channelKey: string): RunReach | undefined {
  const channel = settings.channels[channelKey];
  const allow = channel?.webFetch?.allow ?? settings.webFetch.allow;
  const servers = new Map<string, RunMcpServer>();
  for (const [name, { channels, ...server }] of Object.entries(settings.mcpServers)) {
    if (!channels || channels.includes(channelKey)) servers.set(name, { name, ...server, declaredBy: 'operator' });
  }
  // A channel's own server of the same name replaces the operator's there (and gets none of its secrets).
  for (const [name, server] of Object.entries(channel?.mcpServers ?? {})) servers.set(name, { name, ...server, declaredBy: 'channel' });
  const reach: RunReach = {
    ...(allow.length ? { webFetch: { allow: [...allow] } } : {}),
    ...(servers.size ? { mcpServers: [...servers.values()] } : {}),
  };
  return reach.webFetch || reach.mcpServers ? reach : undefined;
}

/** A server that speaks MCP over stdio inside the thread's sandbox. */
export const isStdioServer = (server: RunMcpServer): server is RunMcpServer & { command: string } => server.command !== undefined;
