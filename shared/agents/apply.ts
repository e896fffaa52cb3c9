// What an agent definition changes in a run: read once by prepare, kept in the run's snapshot.
import type { Thread } from 'chat';
import type { StoreDeps } from '../context/store.ts';
import type { JsonLogger } from '../observability/log.ts';
import type { AgentDefinition } from './definition.ts';
import { loadAgent } from './load.ts';

export interface AgentRunDeps {
  store: StoreDeps;
  thread: Thread;
  logger: Pick<JsonLogger, 'warn'>;
}

/**
 * The definition of the agent the run was admitted as, or none: a missing or invalid one is said in
 * the thread (with why), and the run goes on as the deployment's default agent.
 */
export async function agentForRun(
  deps: AgentRunDeps,
  threadId: string,
  runId: string,
  name: string | undefined,
): Promise<AgentDefinition | undefined> {
  if (!name) return undefined;
  const loaded = await loadAgent(deps.store, threadId, name);
  if (loaded.ok) return loaded.agent;
  deps.logger.warn('agent not loaded', { runId, agent: name, error: loaded.error });
  await deps.thread
    .post(`${loaded.error} I'm answering as the default agent instead.`)
    .catch((error: unknown) => deps.logger.warn('could not say why the agent was not loaded', { runId, error }));
  return undefined;
}

/** The tools the agent works with, of those the run has (names it gives that the run lacks are left out, and logged). */
export function agentTools(
  agent: AgentDefinition | undefined,
  available: readonly string[],
  logger: Pick<JsonLogger, 'warn'>,
): string[] | undefined {
  if (!agent?.tools) return undefined;
  // web_fetch (when settings.json allows hosts) and an MCP server's tools (`<server>__<tool>`) join the
  // run after prepare (shared/run/steps/run-tools.ts): kept by name, offered when they are there.
  const mcp = agent.tools.filter((name) => name.includes('__') || name === 'web_fetch');
  const unknown = agent.tools.filter((name) => !available.includes(name) && !mcp.includes(name));
  if (unknown.length) logger.warn('agent names tools this run does not have', { agent: agent.name, unknown, available });
  return [...available.filter((name) => agent.tools!.includes(name)), ...mcp.filter((name) => !available.includes(name))];
}

/** The system prompt's identity part: the agent's instructions, under its name. */
export const agentIdentity = (agent: AgentDefinition): string =>
  `You are the agent "${agent.name}": ${agent.description}\n\n${agent.instructions}`;
