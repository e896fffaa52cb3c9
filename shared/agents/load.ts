// Reading agent definitions from the data bucket. A run reads only the one it works as (two reads at
// most, no listing); `agents` lists both folders. An invalid AGENT.md gets an AGENT.error.json beside
// it saying why, as an invalid event file does, and the thread is told.
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { readText, type StoreDeps, writeText } from '../context/store.ts';
import {
  AGENT_FILE,
  type AgentDefinition,
  agentErrorKey,
  agentKeys,
  agentPrefixes,
  type AgentScope,
  parseAgentFile,
} from './definition.ts';

export type LoadedAgent = { ok: true; agent: AgentDefinition } | { ok: false; error: string };

async function reportInvalid(store: StoreDeps, key: string, error: string): Promise<void> {
  await writeText(store, agentErrorKey(key), JSON.stringify({ file: key, error }, null, 2) + '\n', 'application/json');
}

async function parseAt(store: StoreDeps, key: string, scope: AgentScope, text: string): Promise<LoadedAgent> {
  const parsed = parseAgentFile(key, scope, text);
  if (!parsed.ok) await reportInvalid(store, key, parsed.error);
  return parsed;
}

/** The agent `name` a thread works as: the operators' definition, else its channel's. */
export async function loadAgent(store: StoreDeps, threadId: string, name: string): Promise<LoadedAgent> {
  const keys = agentKeys(threadId, name);
  const [deployment, channel] = await Promise.all([readText(store, keys.deployment), readText(store, keys.channel)]);
  if (deployment !== undefined) return parseAt(store, keys.deployment, 'deployment', deployment);
  if (channel !== undefined) return parseAt(store, keys.channel, 'channel', channel);
  return { ok: false, error: `There is no agent "${name}" here (no ${keys.deployment} or ${keys.channel} in the data bucket).` };
}

async function agentFiles(store: StoreDeps, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const out = await store.s3.send(new ListObjectsV2Command({ Bucket: store.bucket, Prefix: prefix, ContinuationToken: token }));
    for (const { Key } of out.Contents ?? []) {
      if (Key && Key.slice(prefix.length).split('/').length === 2 && Key.endsWith(`/${AGENT_FILE}`)) keys.push(Key);
    }
    token = out.IsTruncated ? out.NextContinuationToken : undefined;
  } while (token);
  return keys;
}

/** Every agent a thread's channel can use (an operator's definition hides a channel's of the same name), and the invalid ones. */
export async function listAgents(store: StoreDeps, threadId: string): Promise<{ agents: AgentDefinition[]; problems: string[] }> {
  const prefixes = agentPrefixes(threadId);
  const scopes: AgentScope[] = ['deployment', 'channel'];
  const loaded = await Promise.all(
    scopes.map(async (scope) =>
      Promise.all(
        (await agentFiles(store, prefixes[scope])).map(async (key) => {
          const text = await readText(store, key);
          return text === undefined ? undefined : parseAt(store, key, scope, text);
        }),
      ),
    ),
  );
  const agents = new Map<string, AgentDefinition>();
  const problems: string[] = [];
  for (const result of loaded.flat()) {
    if (!result) continue;
    if (!result.ok) problems.push(result.error);
    else if (!agents.has(result.agent.name)) agents.set(result.agent.name, result.agent);
  }
  return { agents: [...agents.values()].sort((a, b) => a.name.localeCompare(b.name)), problems };
}
