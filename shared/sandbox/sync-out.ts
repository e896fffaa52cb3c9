// Sandbox -> S3: write back what the last tool changed, within the sandbox's limits.
//
// Writes are conditional on the ETag the sandbox started from (If-Match) or on absence
// (If-None-Match), so a file another thread changed meanwhile (a channel's MEMORY.md) is never
// overwritten: it is a conflict, the sandbox gets the latest version, and the caller tells the model
// to redo its edit. Shared files (read-only here) are put back as S3 has them. A file is deleted
// from S3 only when a complete listing of the sandbox lacks it: a listing the command server cut at
// its file limit says nothing about the files after the cut. An event file is saved with where it
// came from (shared/events/chain.ts), and only while the run has saves left (maxEventFilesPerRun):
// past that, S3's copy is put back in the sandbox and an error file is saved beside it instead.
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { isS3NotFound, isS3PreconditionFailed } from '../aws/errors.ts';
import { errorFileBody, errorFileKey, isEventFileKey } from '../events/keys.ts';
import { forEachLimit } from '../support/parallel.ts';
import * as sandbox from './client.ts';
import {
  type Conflict,
  DATA_DIR,
  emptyStats,
  isReadOnlyKey,
  isSharedKey,
  LARGE_FILE_BYTES,
  sha256,
  SYNC_CONCURRENCY,
  type SyncDeps,
  type SyncState,
  type SyncStats,
  toS3Key,
  toSandboxPath,
  type WorkspaceLayout,
} from './workspace.ts';

/** How much of a sandbox's workspace is kept in S3 (settings.json `sandbox`). */
export interface SyncLimits {
  maxFiles: number;
  maxBytes: number;
}

/** The synced files were over a limit: new files were not saved. */
export interface OverLimit {
  files: number;
  bytes: number;
  /** The sandbox holds more files than the command server lists. */
  listingCut: boolean;
  /** New files left unsaved. */
  skipped: number;
}

export interface SyncOutResult {
  state: SyncState;
  stats: SyncStats;
  conflicts: Conflict[];
  /** Read-only files changed in the sandbox and put back. */
  restored: string[];
  /** Files the command server would not hand over (over its size limit), by sandbox path. */
  unreadable: string[];
  /** Event files not saved: the run had saved as many as it may. By sandbox path. */
  eventFilesRefused: string[];
  /** Writes and deletes in S3 that other threads' sandboxes see too (see workspace-version.ts). */
  sharedWrites: number;
  overLimit?: OverLimit;
}

export async function syncOut(deps: SyncDeps, layout: WorkspaceLayout, state: SyncState, limits: SyncLimits): Promise<SyncOutResult> {
  const stats = emptyStats();
  const { files, truncated } = await sandbox.manifest(deps.address, `${DATA_DIR}/`);
  const synced = Object.entries(files).flatMap(([path, entry]) => {
    const key = toS3Key(layout, path);
    return key ? [{ path, key, entry }] : [];
  });
  const bytes = synced.reduce((sum, f) => sum + f.entry.size, 0);
  const over = truncated || synced.length > limits.maxFiles || bytes > limits.maxBytes;
  const result: SyncOutResult = {
    state: { ...state },
    stats,
    conflicts: [],
    restored: [],
    unreadable: [],
    eventFilesRefused: [],
    sharedWrites: 0,
  };
  let skipped = 0;
  const syncFile = async ({ path, key, entry }: (typeof synced)[number]) => {
    if (state[key]?.sha256 === entry.sha256) return;
    if (isReadOnlyKey(layout, key)) {
      await putBackS3Copy(deps, key, state, result);
      result.restored.push(path);
      return;
    }
    // Over a limit, files already in S3 still get their changes; new ones wait.
    if (over && !state[key]) {
      skipped++;
      return;
    }
    const writes = isEventFileKey(key) && `${DATA_DIR}/${key}`.startsWith(layout.eventsPath) ? deps.eventWrites : undefined;
    if (writes && !(await writes.take())) {
      await refuseEventFile(deps, key, state, result, writes.refusal(key));
      return;
    }
    if ((await upload(deps, path, key, state, result, writes?.metadata)) && isSharedKey(layout, key)) result.sharedWrites++;
  };
  // Many small files at once; big ones one at a time, so the function's memory holds one.
  await forEachLimit(
    synced.filter((f) => f.entry.size <= LARGE_FILE_BYTES),
    SYNC_CONCURRENCY,
    syncFile,
  );
  await forEachLimit(
    synced.filter((f) => f.entry.size > LARGE_FILE_BYTES),
    1,
    syncFile,
  );
  if (!truncated) {
    const gone = Object.keys(state).filter((key) => !files[toSandboxPath(key)]);
    await forEachLimit(gone, SYNC_CONCURRENCY, async (key) => {
      if (isReadOnlyKey(layout, key)) {
        await putBackS3Copy(deps, key, state, result);
        result.restored.push(toSandboxPath(key));
        return;
      }
      // Memory files are never deleted, only emptied.
      if (layout.memoryKeys.includes(key) || layout.heartbeatKeys.includes(key)) return;
      stats.s3Calls++;
      const deleted = await deps.s3.send(new DeleteObjectCommand({ Bucket: deps.bucket, Key: key, IfMatch: state[key]!.etag })).then(
        () => true,
        (error: unknown) => {
          if (!isS3PreconditionFailed(error)) throw error;
          return false;
        },
      );
      if (deleted && isSharedKey(layout, key)) result.sharedWrites++;
      delete result.state[key];
    });
  }
  if (over) result.overLimit = { files: synced.length, bytes, listingCut: truncated, skipped };
  return result;
}

async function upload(
  deps: SyncDeps,
  path: string,
  key: string,
  state: SyncState,
  result: SyncOutResult,
  metadata: Record<string, string> | undefined,
): Promise<boolean> {
  const { stats } = result;
  let body: Buffer | undefined;
  try {
    body = await sandbox.readFile(deps.address, path);
  } catch (error) {
    if (!(error instanceof sandbox.SandboxRequestError) || error.status !== 413) throw error;
    result.unreadable.push(path);
    return false;
  }
  if (!body) return false; // deleted between the manifest and the read
  const condition = state[key] ? { IfMatch: state[key].etag } : { IfNoneMatch: '*' };
  try {
    stats.s3Calls++;
    const out = await deps.s3.send(new PutObjectCommand({ Bucket: deps.bucket, Key: key, Body: body, Metadata: metadata, ...condition }));
    result.state[key] = { etag: out.ETag ?? '', sha256: sha256(body) };
    stats.bytesOut += body.length;
    stats.filesOut++;
    return true;
  } catch (error) {
    if (!isS3PreconditionFailed(error)) throw error;
    result.conflicts.push({ key, path });
    // Replace the sandbox's copy with the latest, so the model's retry starts from it.
    stats.s3Calls++;
    const latest = await deps.s3.send(new GetObjectCommand({ Bucket: deps.bucket, Key: key }));
    const latestBody = Buffer.from(await latest.Body!.transformToByteArray());
    await sandbox.writeFile(deps.address, path, latestBody);
    result.state[key] = { etag: latest.ETag ?? '', sha256: sha256(latestBody) };
    stats.bytesIn += latestBody.length;
    return false;
  }
}

/** An event file the run may not save: S3's copy goes back in the sandbox, and the reason beside it in S3. */
async function refuseEventFile(deps: SyncDeps, key: string, state: SyncState, result: SyncOutResult, reason: string): Promise<void> {
  await putBackS3Copy(deps, key, state, result);
  result.stats.s3Calls++;
  await deps.s3.send(
    new PutObjectCommand({
      Bucket: deps.bucket,
      Key: errorFileKey(key),
      Body: errorFileBody(key, reason, new Date()),
      ContentType: 'application/json',
    }),
  );
  result.sharedWrites++;
  result.eventFilesRefused.push(toSandboxPath(key));
}

/** Puts S3's copy of a file back in the sandbox (or removes a file S3 does not have). */
async function putBackS3Copy(deps: SyncDeps, key: string, state: SyncState, result: SyncOutResult): Promise<void> {
  const path = toSandboxPath(key);
  const known = state[key];
  if (!known) {
    await sandbox.deleteFile(deps.address, path);
    return;
  }
  result.stats.s3Calls++;
  const out = await deps.s3.send(new GetObjectCommand({ Bucket: deps.bucket, Key: key })).catch((error: unknown) => {
    if (isS3NotFound(error)) return undefined;
    throw error;
  });
  if (!out) {
    await sandbox.deleteFile(deps.address, path);
    delete result.state[key];
    return;
  }
  const body = Buffer.from(await out.Body!.transformToByteArray());
  await sandbox.writeFile(deps.address, path, body);
  result.state[key] = { etag: out.ETag ?? known.etag, sha256: sha256(body) };
  result.stats.bytesIn += body.length;
}
