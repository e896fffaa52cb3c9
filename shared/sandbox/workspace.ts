// What a thread's sandbox sees, and keeping it in step with S3 (the source of truth).
//
// Under the sandbox's workspace, `data/` mirrors the subset of the S3 data tree the thread may use:
// the three MEMORY.md levels, the three skills directories, the channel's agent definitions, the
// thread's own scratch/ and attachments/, and its channel's event files. Path = `data/` + S3 key, so the system prompt can name files the same way.
import { GetObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { dataKeys, ROOT_KEYS } from '../ids.ts';
import { channelEventsPrefix } from '../events/scope.ts';
import { forEachLimit } from '../support/parallel.ts';
import * as sandbox from './client.ts';
import type { SandboxAddress } from './client.ts';

export const DATA_DIR = 'data';

export interface WorkspaceLayout {
  /** S3 keys of the three memory files, broadest first. */
  memoryKeys: string[];
  /** The heartbeat's standing notes, global and channel (see shared/events/files.ts). */
  heartbeatKeys: string[];
  /** S3 prefixes (ending in '/') synced both ways. */
  prefixes: string[];
  /** The agent's working directory inside the sandbox. */
  scratchPath: string;
  attachmentsPath: string;
  /**
   * What every channel shares (global and platform-wide memory, standing notes and skills): the
   * sandbox reads them, but only an operator changes them. A change made in the sandbox is undone.
   */
  readOnlyKeys: string[];
  readOnlyPrefixes: string[];
  /** The channel's event files: the agent schedules work for itself by writing them (see the system prompt). */
  eventsPath: string;
  /** The thread's own S3 folder (ending in '/'): what is under it no other thread's sandbox sees. */
  threadPrefix: string;
}

/** Where hook files live in the data bucket: the operator's (`hooks/`) and the channel's (`<channel>/hooks/`). */
export const hookPrefixes = (threadId: string): string[] => ['hooks/', `${dataKeys(threadId).channelDir}/hooks/`];

/**
 * `hooks`: the run has command hooks, so the sandbox also gets the hook files, read-only (a channel's
 * sandbox cannot change the hooks that govern it). Without them nothing is listed for hooks.
 */
export function workspaceLayout(threadId: string, options: { hooks?: boolean } = {}): WorkspaceLayout {
  const keys = dataKeys(threadId);
  const hooks = options.hooks ? hookPrefixes(threadId) : [];
  // Only this channel's event files: another channel's (or an operator's) are neither seen nor changed here.
  const events = channelEventsPrefix(threadId);
  return {
    memoryKeys: [ROOT_KEYS.memory, `${keys.transportDir}/MEMORY.md`, `${keys.channelDir}/MEMORY.md`],
    heartbeatKeys: ['HEARTBEAT.md', `${keys.channelDir}/HEARTBEAT.md`],
    prefixes: [
      'skills/',
      `${keys.transportDir}/skills/`,
      `${keys.channelDir}/skills/`,
      // The channel's own agent definitions (docs/agents.md): its agent may write them, like its skills.
      `${keys.channelDir}/agents/`,
      `${keys.threadDir}/scratch/`,
      `${keys.threadDir}/attachments/`,
      events,
      ...hooks,
    ],
    scratchPath: `${DATA_DIR}/${keys.threadDir}/scratch`,
    attachmentsPath: `${DATA_DIR}/${keys.threadDir}/attachments`,
    eventsPath: `${DATA_DIR}/${events}`,
    readOnlyKeys: [ROOT_KEYS.memory, `${keys.transportDir}/MEMORY.md`, 'HEARTBEAT.md'],
    readOnlyPrefixes: ['skills/', `${keys.transportDir}/skills/`, ...hooks],
    threadPrefix: `${keys.threadDir}/`,
  };
}

export const toSandboxPath = (key: string) => `${DATA_DIR}/${key}`;

/** The S3 key for a sandbox path, or undefined when the path is outside what syncs to S3. */
export function toS3Key(layout: WorkspaceLayout, path: string): string | undefined {
  const normalized = path.replace(/^\/workspace\//, '').replace(/^\.\//, '');
  if (!normalized.startsWith(`${DATA_DIR}/`)) return undefined;
  const key = normalized.slice(DATA_DIR.length + 1);
  if (layout.memoryKeys.includes(key) || layout.heartbeatKeys.includes(key)) return key;
  return layout.prefixes.some((p) => key.startsWith(p)) ? key : undefined;
}

/** Whether an S3 key is shared by every channel, so read-only in a sandbox. */
export function isReadOnlyKey(layout: WorkspaceLayout, key: string): boolean {
  return layout.readOnlyKeys.includes(key) || layout.readOnlyPrefixes.some((p) => key.startsWith(p));
}

/** Whether other threads' sandboxes see the S3 key too (the channel's memory, standing notes, skills and event files). */
export const isSharedKey = (layout: WorkspaceLayout, key: string) => !key.startsWith(layout.threadPrefix);

/** What the sandbox holds of each synced file: the S3 ETag it came from and its content hash. */
export type SyncState = Record<string, { etag: string; sha256: string }>;

export interface SyncDeps {
  s3: S3Client;
  bucket: string;
  address: SandboxAddress;
  /** The running run's event file saves; without it, event files are saved like any other file. */
  eventWrites?: EventWrites;
}

/** What the run saving a sandbox's event files puts on each, and how many it may save. */
export interface EventWrites {
  /** S3 metadata of each event file saved: where it came from (shared/events/chain.ts). */
  metadata: Record<string, string>;
  /** Takes one of the run's saves; false once it has used them all. */
  take(): Promise<boolean>;
  /** Why the file `key` was not saved, for its error file. */
  refusal(key: string): string;
}

export interface SyncStats {
  bytesIn: number;
  bytesOut: number;
  filesIn: number;
  filesOut: number;
  s3Calls: number;
}

export interface Conflict {
  key: string;
  path: string;
}

/** Whether two records of what the sandbox holds are the same. */
export function sameSyncState(a: SyncState, b: SyncState): boolean {
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => a[key]!.etag === b[key]?.etag && a[key]!.sha256 === b[key]?.sha256);
}

export const sha256 = (body: Buffer) => createHash('sha256').update(body).digest('hex');
export const emptyStats = (): SyncStats => ({ bytesIn: 0, bytesOut: 0, filesIn: 0, filesOut: 0, s3Calls: 0 });

/** S3 and sandbox calls in flight at once while syncing: thousands of small files in seconds. */
export const SYNC_CONCURRENCY = 16;
/** Files bigger than this are synced one at a time (16 of the largest would not fit in memory). */
export const LARGE_FILE_BYTES = 8 * 1024 * 1024;

async function listObjects(
  deps: SyncDeps,
  layout: WorkspaceLayout,
  stats: SyncStats,
): Promise<Map<string, { etag: string; size: number }>> {
  const objects = new Map<string, { etag: string; size: number }>();
  const list = async (prefix: string) => {
    let token: string | undefined;
    do {
      stats.s3Calls++;
      const out = await deps.s3.send(new ListObjectsV2Command({ Bucket: deps.bucket, Prefix: prefix, ContinuationToken: token }));
      for (const object of out.Contents ?? []) {
        if (object.Key && object.ETag) objects.set(object.Key, { etag: object.ETag, size: object.Size ?? 0 });
      }
      token = out.IsTruncated ? out.NextContinuationToken : undefined;
    } while (token);
  };
  // Memory files are listed by their exact keys: a prefix listing of the root would cover the bucket.
  await Promise.all([...layout.prefixes.map(list), ...[...layout.memoryKeys, ...layout.heartbeatKeys].map((key) => list(key))]);
  for (const key of objects.keys()) if (!toS3Key(layout, toSandboxPath(key))) objects.delete(key);
  return objects;
}

/** S3 -> sandbox: bring in every object that is new or changed since the sandbox last saw it. */
export async function syncIn(deps: SyncDeps, layout: WorkspaceLayout, state: SyncState): Promise<{ state: SyncState; stats: SyncStats }> {
  const stats = emptyStats();
  const objects = await listObjects(deps, layout, stats);
  const next: SyncState = { ...state };
  const changed = [...objects].filter(([key, { etag }]) => state[key]?.etag !== etag);
  const bringIn = async ([key, { etag }]: (typeof changed)[number]) => {
    stats.s3Calls++;
    const out = await deps.s3.send(new GetObjectCommand({ Bucket: deps.bucket, Key: key }));
    const body = Buffer.from(await out.Body!.transformToByteArray());
    await sandbox.writeFile(deps.address, toSandboxPath(key), body);
    next[key] = { etag: out.ETag ?? etag, sha256: sha256(body) };
    stats.bytesIn += body.length;
    stats.filesIn++;
  };
  await forEachLimit(
    changed.filter(([, { size }]) => size <= LARGE_FILE_BYTES),
    SYNC_CONCURRENCY,
    bringIn,
  );
  await forEachLimit(
    changed.filter(([, { size }]) => size > LARGE_FILE_BYTES),
    1,
    bringIn,
  );
  // Deleted in S3 (by another thread, for shared files): delete here too.
  await forEachLimit(
    Object.keys(state).filter((key) => !objects.has(key)),
    SYNC_CONCURRENCY,
    async (key) => {
      await sandbox.deleteFile(deps.address, toSandboxPath(key));
      delete next[key];
    },
  );
  return { state: next, stats };
}
