// Paths as the model gives them to a tool (relative to scratch/, or absolute under /workspace),
// checked against the thread's workspace.
import { posix } from 'node:path';
import * as z from 'zod';
import { READ_ONLY_ADVICE, READ_ONLY_REASON } from '../sandbox/sync-notes.ts';
import { isReadOnlyKey, toS3Key, type WorkspaceLayout } from '../sandbox/workspace.ts';
import { ToolError } from './text.ts';

export const WORKSPACE_ROOT = '/workspace';

/** A tool path as a workspace-relative path; one outside the workspace is refused. */
export function resolveToolPath(layout: WorkspaceLayout, raw: string): string {
  if (!raw.trim()) throw new ToolError('path is empty');
  const absolute = raw.startsWith('/') ? posix.normalize(raw) : posix.normalize(posix.join(WORKSPACE_ROOT, layout.scratchPath, raw));
  if (absolute !== WORKSPACE_ROOT && !absolute.startsWith(`${WORKSPACE_ROOT}/`)) {
    throw new ToolError(`${raw} is outside your workspace (${WORKSPACE_ROOT})`);
  }
  return absolute.slice(WORKSPACE_ROOT.length + 1);
}

/** A workspace-relative path as the model sees it. */
export const shownPath = (path: string) => `${WORKSPACE_ROOT}/${path}`;

/** A path the model may change; shared files are refused before anything is written. */
export function writablePath(layout: WorkspaceLayout, raw: string): string {
  const path = resolveToolPath(layout, raw);
  const key = toS3Key(layout, path);
  if (key && isReadOnlyKey(layout, key)) throw new ToolError(`${shownPath(path)} is ${READ_ONLY_REASON}. ${READ_ONLY_ADVICE}`);
  return path;
}

/** The input field of every file tool. */
export const pathInput = z.string().describe('File path, relative to your working directory (scratch/) or absolute under /workspace');
