// What a sandbox task holds of S3, kept in S3 beside the thread (one object per thread, for the
// task it describes): it grows with the files synced, far past what one DynamoDB item can hold.
// It is never synced into the sandbox itself. With the files it records when S3 was last listed for
// the task (the run and the channel's workspace version then), so a call can tell whether the
// sandbox may still be missing something another writer put in S3 (see workspace-version.ts).
import { dataKeys } from '../ids.ts';
import { readText, type StoreDeps, writeText } from '../context/store.ts';
import type { SyncState } from './workspace.ts';

export const syncStateKey = (threadId: string) => `${dataKeys(threadId).threadDir}/sandbox-sync.json`;

/** When S3 was last listed into the sandbox: in which run, at which workspace version. */
export interface Listed {
  runId: string;
  version: number;
}

export interface RecordedSync {
  files: SyncState;
  /** Absent: never listed for this task (or recorded before listings were). */
  listed?: Listed;
}

interface StoredSyncState extends RecordedSync {
  taskArn: string;
}

/** The state recorded for this task; a new task (or none recorded) starts from nothing. */
export async function loadSyncState(store: StoreDeps, threadId: string, taskArn: string): Promise<RecordedSync> {
  const raw = await readText(store, syncStateKey(threadId));
  if (!raw) return { files: {} };
  const stored = JSON.parse(raw) as StoredSyncState;
  return stored.taskArn === taskArn ? { files: stored.files, listed: stored.listed } : { files: {} };
}

export async function saveSyncState(store: StoreDeps, threadId: string, taskArn: string, recorded: RecordedSync): Promise<void> {
  const body: StoredSyncState = { taskArn, ...recorded };
  await writeText(store, syncStateKey(threadId), JSON.stringify(body), 'application/json');
}
