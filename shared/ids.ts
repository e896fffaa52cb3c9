// Thread ids, run ids and the S3 data layout: {adapter}/{channel}/{thread}/..., so that what a
// thread, a channel or an adapter owns sits under one prefix (one IAM condition, one listing).
import { createHash } from 'node:crypto';
import { descriptorNamed } from './platforms/descriptors.ts';
import { plainScope } from './platforms/platform.ts';

export interface ThreadAddress {
  adapter: string;
  channel: string;
  thread: string;
}

/**
 * Chat SDK thread ids are `adapter:channel:thread`; the thread part may itself contain ':'. Where
 * a platform writes them otherwise, its descriptor says which channel and thread an id names
 * (Teams: shared/platforms/teams/descriptor.ts), so every thread of a channel shares its scope.
 */
export function parseThreadId(threadId: string): ThreadAddress {
  const [adapter, channel, ...rest] = threadId.split(':');
  if (!adapter || !channel || rest.length === 0 || !/^[a-z][a-z0-9-]*$/.test(adapter)) {
    throw new Error(`Not a thread id (expected adapter:channel:thread): ${JSON.stringify(threadId)}`);
  }
  const platform = descriptorNamed(adapter);
  return { adapter, ...(platform ? platform.scopeOf(channel, rest) : plainScope(channel, rest)) };
}

/** Whether `messageId` is the first message of `threadId`, as far as its platform's ids tell (false when they cannot). */
export function opensThread(threadId: string, messageId: string): boolean {
  let address: ThreadAddress;
  try {
    address = parseThreadId(threadId);
  } catch {
    return false;
  }
  return descriptorNamed(address.adapter)?.opensThread(address, messageId) ?? false;
}

/**
 * `adapter:channel` of a thread id: the key of per-channel settings and of a user's recent thread
 * in a channel (slash commands know the channel, not the thread).
 */
export const channelKeyOf = (threadId: string): string => {
  const { adapter, channel } = parseThreadId(threadId);
  return `${adapter}:${channel}`;
};

/** Key-safe encoding of one path segment: keeps [A-Za-z0-9._-], escapes the rest as %XX. */
export function encodeSegment(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

export function sha256Hex(...parts: string[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part).update('\u0000');
  return hash.digest('hex');
}

/**
 * One run per admitted prompt. The id doubles as the Step Functions execution name
 * (max 80 chars of [A-Za-z0-9-_]), so a duplicate StartExecution for the same prompt is harmless.
 */
export function runIdFor(threadId: string, messageId: string): string {
  return `run-${sha256Hex(threadId, messageId).slice(0, 40)}`;
}

/** Slack message ids (ts) are unique per channel only, so the FIFO dedup id covers the thread too. */
export function dedupIdFor(threadId: string, messageId: string): string {
  return sha256Hex(threadId, messageId);
}

/** S3 keys of the data tree for one thread's scopes. */
export function dataKeys(threadId: string) {
  const { adapter, channel, thread } = parseThreadId(threadId);
  const transportDir = encodeSegment(adapter);
  const channelDir = `${transportDir}/${encodeSegment(channel)}`;
  const threadDir = `${channelDir}/${encodeSegment(thread)}`;
  return {
    transportDir,
    channelDir,
    threadDir,
    context: `${threadDir}/context.jsonl`,
    log: `${threadDir}/log.jsonl`,
    /** A subagent's own context, beside the thread's (shared/run/subagents/). */
    childContext: (runId: string) => `${threadDir}/subagents/${encodeSegment(runId)}.jsonl`,
    /** Lines of context.jsonl a run could not read, set aside by that run (shared/context/quarantine.ts). */
    contextQuarantine: (runId: string) => `${threadDir}/context-quarantine/${encodeSegment(runId)}.jsonl`,
  };
}

export const ROOT_KEYS = {
  identity: 'IDENTITY.md',
  memory: 'MEMORY.md',
  system: 'SYSTEM.md',
  settings: 'settings.json',
  /** Long prompt texts, by run id (never synced into a sandbox; expire after 30 days). */
  prompts: 'prompts/',
} as const;
