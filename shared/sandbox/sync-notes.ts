// What a sync tells the model and the thread: files not saved and why, in the tool's result; a sync
// that failed outright, under its own name (not as the model's error).
import { NO_EVENT_FILES_WHY } from '../events/run-writes.ts';
import type { Settings } from '../settings/schema.ts';
import type { SyncLimits, SyncOutResult } from './sync-out.ts';

/** What of settings.json a sync obeys: as its run began (the run's snapshot). */
export type SyncSettings = Pick<Settings, 'sandbox' | 'maxEventFilesPerRun'>;

const WORKSPACE_ROOT = '/workspace';
const MIB = 1024 * 1024;

export const READ_ONLY_REASON =
  'shared by every channel (global and platform-wide memory, standing notes and skills) or one of the hooks that govern this sandbox, so read-only here: only an operator changes them';
export const READ_ONLY_ADVICE = 'Put what this channel should remember in its own MEMORY.md, and its own skills in its skills/ folder.';

export function syncLimits(settings: SyncSettings): SyncLimits {
  return { maxFiles: settings.sandbox.maxSyncedFiles, maxBytes: settings.sandbox.maxSyncedMegabytes * MIB };
}

const shown = (paths: string[]) => paths.map((path) => `${WORKSPACE_ROOT}/${path}`).join(', ');

/** One sentence per kind of file the sync did not save, for the tool result. */
export function syncNotes(result: SyncOutResult, settings: SyncSettings): string[] {
  const notes: string[] = [];
  if (result.conflicts.length > 0) {
    notes.push(
      `not saved: ${shown(result.conflicts.map((c) => c.path))} changed in another thread while you worked. Your copy now holds the latest version: read it again and redo your change.`,
    );
  }
  if (result.restored.length > 0) {
    const are = result.restored.length === 1 ? 'is' : 'are';
    notes.push(`not saved: ${shown(result.restored)} ${are} ${READ_ONLY_REASON}; your change was undone. ${READ_ONLY_ADVICE}`);
  }
  if (result.unreadable.length > 0) {
    notes.push(
      `not saved: ${shown(result.unreadable)} ${result.unreadable.length === 1 ? 'is' : 'are'} over the sandbox's file size limit for syncing; ` +
        'it stays in this sandbox until it stops. Split it or keep it outside /workspace/data (in /tmp).',
    );
  }
  if (result.eventFilesRefused.length > 0) {
    const n = result.eventFilesRefused.length;
    const max = settings.maxEventFilesPerRun;
    const why =
      max === 0
        ? `this run may save none (${NO_EVENT_FILES_WHY})`
        : `this run already saved ${max}, the most one run may (maxEventFilesPerRun in settings.json)`;
    notes.push(
      `not saved: ${n} event file${n === 1 ? '' : 's'} (${shown(result.eventFilesRefused)}): ${why}. Nothing runs from ${n === 1 ? 'it' : 'them'}; ` +
        'each has an error file beside it. Tell the person, who can ask for more in a new message.',
    );
  }
  const over = result.overLimit;
  if (over) {
    const { maxSyncedFiles, maxSyncedMegabytes } = settings.sandbox;
    const held = `${over.listingCut ? 'more than ' : ''}${over.files.toLocaleString('en-US')} files, ${(over.bytes / MIB).toFixed(1)} MB`;
    notes.push(
      `not saved: ${over.skipped.toLocaleString('en-US')} new file${over.skipped === 1 ? '' : 's'}. The files under /workspace/data that are kept ` +
        `(${held}) are over this sandbox's limit of ${maxSyncedFiles.toLocaleString('en-US')} files and ${maxSyncedMegabytes.toLocaleString('en-US')} MB ` +
        '(sandbox.maxSyncedFiles and sandbox.maxSyncedMegabytes in settings.json). New files stay in this sandbox until it stops but are not kept. ' +
        'Put big trees such as node_modules in /tmp, or delete what you do not need.',
    );
  }
  return notes;
}

/** Syncing the workspace with S3 failed: named for what it is in the logs and in the thread. */
export class WorkspaceSyncError extends Error {
  override name = 'WorkspaceSyncError';
  constructor(cause: unknown) {
    const what = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    super(`syncing the sandbox's files with S3 failed (${what})`, { cause });
  }
}
