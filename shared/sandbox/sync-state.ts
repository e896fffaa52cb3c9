// What a sandbox task holds of S3, kept in S3 beside the thread (one object per thread, for the
// task it describes): it grows with the files synced, far past what one DynamoDB item can hold.
// It is never synced into the sandbox itself.
import { dataKeys } from '../ids.ts';
import { readText, type StoreDeps, writeText } from '../context/store.ts';
import type { SyncState } from './workspace.ts';

export const syncStateKey = (threadId: string) => `${dataKeys(threadId).threadDir}/sandbox-sync.json`;

interface StoredSyncState {
  taskArn: string;
  files: SyncState;
}

/** The state recorded for this task; a new task (or none recorded) starts from nothing. */
export async function loadSyncState(store: StoreDeps, threadId: string, taskArn: string): Promise<SyncState> {
  const raw = await readText(store, syncStateKey(threadId));
  if (!raw) return {};
  const stored = JSON.parse(raw) as StoredSyncState;
  return stored.taskArn === taskArn ? stored.files : {};
}

export async function saveSyncState(store: StoreDeps, threadId: string, taskArn: string, files: SyncState): Promise<void> {
  const body: StoredSyncState = { taskArn, files };
  await writeText(store, syncStateKey(threadId), JSON.stringify(body), 'application/json');
}
