// bash, read, write and edit, run against the thread's sandbox.
import { posix } from 'node:path';
import * as sandbox from '../sandbox/client.ts';
import type { SandboxAddress } from '../sandbox/client.ts';
import { READ_ONLY_ADVICE, READ_ONLY_REASON } from '../sandbox/sync-notes.ts';
import { isReadOnlyKey, toS3Key, type WorkspaceLayout } from '../sandbox/workspace.ts';
import { DEFAULT_BASH_TIMEOUT_SECONDS, MAX_BASH_TIMEOUT_SECONDS } from './specs.ts';
import { applyEdit, numberedLines, ToolError, truncateForModel } from './text.ts';

export interface ToolCall {
  toolUseId: string;
  name: string;
  input: Record<string, unknown>;
}

export interface ToolOutcome {
  text: string;
  status: 'success' | 'error';
}

export const WORKSPACE_ROOT = '/workspace';

function stringArg(input: Record<string, unknown>, name: string, optional = false): string {
  const value = input[name];
  if (value === undefined && optional) return '';
  if (typeof value !== 'string') throw new ToolError(`${name} must be a string`);
  return value;
}

/** A tool path (relative to scratch/, or absolute under /workspace) as a workspace-relative path. */
export function resolveToolPath(layout: WorkspaceLayout, raw: string): string {
  if (!raw.trim()) throw new ToolError('path is empty');
  const absolute = raw.startsWith('/') ? posix.normalize(raw) : posix.normalize(posix.join(WORKSPACE_ROOT, layout.scratchPath, raw));
  if (absolute !== WORKSPACE_ROOT && !absolute.startsWith(`${WORKSPACE_ROOT}/`)) {
    throw new ToolError(`${raw} is outside your workspace (${WORKSPACE_ROOT})`);
  }
  return absolute.slice(WORKSPACE_ROOT.length + 1);
}

const shown = (path: string) => `${WORKSPACE_ROOT}/${path}`;

/** A path the model may change; shared files are refused before anything is written. */
function writablePath(layout: WorkspaceLayout, raw: string): string {
  const path = resolveToolPath(layout, raw);
  const key = toS3Key(layout, path);
  if (key && isReadOnlyKey(layout, key)) throw new ToolError(`${shown(path)} is ${READ_ONLY_REASON}. ${READ_ONLY_ADVICE}`);
  return path;
}

async function bash(address: SandboxAddress, layout: WorkspaceLayout, call: ToolCall): Promise<ToolOutcome> {
  const command = stringArg(call.input, 'command');
  const seconds = call.input.timeout_seconds === undefined ? DEFAULT_BASH_TIMEOUT_SECONDS : Number(call.input.timeout_seconds);
  if (!Number.isFinite(seconds) || seconds < 1 || seconds > MAX_BASH_TIMEOUT_SECONDS) {
    throw new ToolError(`timeout_seconds must be between 1 and ${MAX_BASH_TIMEOUT_SECONDS}`);
  }
  // The scratch directory exists once something is in it; a fresh sandbox may not have it yet.
  const inScratch = `mkdir -p '${layout.scratchPath}' && cd '${layout.scratchPath}' && {\n${command}\n}`;
  const result = await sandbox.exec(address, { id: call.toolUseId, command: inScratch, timeoutMs: seconds * 1000 });
  const parts = [result.stdout, result.stderr ? `[stderr]\n${result.stderr}` : ''].filter(Boolean);
  const combined = parts.join(parts[0] && !parts[0].endsWith('\n') ? '\n' : '');
  const view = truncateForModel(combined);
  const notes: string[] = [];
  if (view.truncated || result.stdoutTruncated || result.stderrTruncated) {
    const file = `${layout.scratchPath}/.tool-output/${call.toolUseId}.log`;
    await sandbox.writeFile(address, file, combined);
    const capped =
      result.stdoutTruncated || result.stderrTruncated
        ? ` The command produced ${result.stdoutBytes + result.stderrBytes} bytes; only the first 10 MB of each stream were kept.`
        : '';
    notes.push(`[output truncated: showing the last part. Full output (${combined.length} chars) in ${shown(file)}.${capped}]`);
  }
  if (result.timedOut) notes.push(`[killed after ${seconds} s timeout, with its child processes]`);
  if (result.cancelled) notes.push('[cancelled]');
  const status = result.exitCode === 0 && !result.timedOut && !result.cancelled ? 'success' : 'error';
  const exit = result.exitCode === null ? `signal ${result.signal ?? 'unknown'}` : `exit code ${result.exitCode}`;
  return { status, text: [...notes, view.text || '(no output)', `[${exit}, ${(result.durationMs / 1000).toFixed(1)} s]`].join('\n') };
}

async function read(address: SandboxAddress, layout: WorkspaceLayout, call: ToolCall): Promise<ToolOutcome> {
  const path = resolveToolPath(layout, stringArg(call.input, 'path'));
  const body = await sandbox.readFile(address, path);
  if (!body) throw new ToolError(`no such file: ${shown(path)}`);
  if (body.includes(0)) throw new ToolError(`${shown(path)} is a binary file (${body.length} bytes); use bash to inspect it`);
  const offset = call.input.offset === undefined ? 1 : Number(call.input.offset);
  const limit = call.input.limit === undefined ? 2000 : Number(call.input.limit);
  return { status: 'success', text: numberedLines(body.toString('utf8'), offset, limit) };
}

async function write(address: SandboxAddress, layout: WorkspaceLayout, call: ToolCall): Promise<ToolOutcome> {
  const path = writablePath(layout, stringArg(call.input, 'path'));
  const content = stringArg(call.input, 'content');
  const result = await sandbox.writeFile(address, path, content);
  return { status: 'success', text: `wrote ${result.size} bytes to ${shown(path)}` };
}

async function edit(address: SandboxAddress, layout: WorkspaceLayout, call: ToolCall): Promise<ToolOutcome> {
  const path = writablePath(layout, stringArg(call.input, 'path'));
  const body = await sandbox.readFile(address, path);
  if (!body) throw new ToolError(`no such file: ${shown(path)}`);
  const edited = applyEdit(body.toString('utf8'), {
    path: shown(path),
    old_string: stringArg(call.input, 'old_string'),
    new_string: stringArg(call.input, 'new_string'),
    replace_all: call.input.replace_all === true,
  });
  await sandbox.writeFile(address, path, edited.content);
  return { status: 'success', text: `replaced ${edited.replaced} occurrence${edited.replaced === 1 ? '' : 's'} in ${shown(path)}` };
}

const RUNNERS = { bash, read, write, edit } as const;

/** Runs one sandbox tool. Tool mistakes come back as error results; a lost sandbox is thrown. */
export async function runSandboxTool(address: SandboxAddress, layout: WorkspaceLayout, call: ToolCall): Promise<ToolOutcome> {
  const runner = RUNNERS[call.name as keyof typeof RUNNERS];
  if (!runner) return { status: 'error', text: `unknown sandbox tool ${call.name}` };
  try {
    return await runner(address, layout, call);
  } catch (error) {
    if (error instanceof ToolError) return { status: 'error', text: error.message };
    if (error instanceof sandbox.SandboxRequestError) return { status: 'error', text: error.message };
    throw error;
  }
}
