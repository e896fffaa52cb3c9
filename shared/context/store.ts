// The S3 data tree: per-thread context.jsonl / log.jsonl, and plain reads and writes of its files
// (settings.json is read by shared/settings/). Plain files in one bucket, so a team can read, edit and
// back up what the agent knows with the tools they have.
import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import * as z from 'zod';
import type { ContentBlock, Message } from '@aws-sdk/client-bedrock-runtime';
import { dataKeys } from '../ids.ts';
import type { RunInput } from '../contracts.ts';
import { isS3NotFound, isS3PreconditionFailed } from '../aws/errors.ts';
import { retryOnConflict, TRY_AGAIN } from '../aws/retry.ts';
import type { HookNote } from '../hooks/run.ts';
import { redactSecrets, SECRET_PATTERNS, type SecretPattern } from '../policy/secret-filter.ts';

export interface StoreDeps {
  s3: S3Client;
  bucket: string;
}

/** One line of context.jsonl: a Bedrock message plus where it came from. */
export interface ContextEntry {
  role: 'user' | 'assistant';
  content: ContentBlock[];
  meta: {
    runId: string;
    at: string;
    step?: number;
    messageId?: string;
    /** An answer's chat message (as its step's reply record names it), for the exchange log. */
    replyId?: string;
    usage?: Record<string, number | undefined>;
    compactions?: number;
    attachments?: { original: string; local: string }[];
    /** When each tool call of a tool results entry ran and for how long, by toolUseId (calls never run have none). */
    toolTimes?: Record<string, ToolTime>;
    /** Decisions on this answer's tool calls that waited for a person, by toolUseId (shared/approvals/). */
    approvals?: Record<string, ApprovalNote>;
    /** Runs of settings.json `hooks` on this entry (its prompt, or its tool calls by toolUseId): shared/hooks/. */
    hooks?: (HookNote & { toolUseId?: string })[];
    /** Calls of this answer a PreToolUse hook made wait for a person (shared/hooks/step-hooks.ts). */
    hookHeld?: string[];
    /** A user entry a Stop hook added, asking for one more turn (shared/hooks/step-hooks.ts bounds them). */
    hookContinue?: true;
    /** A prompt a hook withheld from the model: the reason (shared/run/steps/prepare.ts). */
    hookBlocked?: string;
  };
}

/** A decision on a tool call, as the audit record shows it: who (`adapter:id`, `timeout`, `system`), when, what. */
export interface ApprovalNote {
  outcome: 'approved' | 'denied' | 'timed_out';
  by: string;
  at: string;
}

export interface ToolTime {
  startedAt: string;
  durationMs: number;
  /** A reach call's target and how many bytes its answer had (the audit record's line for it). */
  reach?: ReachCall;
  /** A subagent call's child run and how it ended (the audit record nests it under the call). */
  subagent?: ChildCall;
}

export interface ChildCall {
  runId: string;
  agent?: string;
  outcome: string;
  steps: number;
  costUsd?: number;
}

export interface ReachCall {
  /** The MCP server, or the host web_fetch read. */
  server: string;
  /** The server's tool (web_fetch for a page). */
  tool: string;
  bytes: number;
}

/** One line of log.jsonl: a message seen in the thread (no tool results, never compacted). */
export interface LogEntry {
  date: string;
  messageId: string;
  userId: string;
  userName: string;
  text: string;
  isBot: boolean;
  /** Files attached to the message, where the agent finds them. */
  attachments?: { original: string; local: string }[];
}

/** An object's text and the ETag it was read at; undefined when there is no such object. */
async function readVersioned(deps: StoreDeps, key: string): Promise<{ raw: string | undefined; etag: string | undefined } | undefined> {
  try {
    const out = await deps.s3.send(new GetObjectCommand({ Bucket: deps.bucket, Key: key }));
    return { raw: await out.Body?.transformToString('utf8'), etag: out.ETag };
  } catch (error) {
    if (isS3NotFound(error)) return undefined;
    throw error;
  }
}

export async function readText(deps: StoreDeps, key: string): Promise<string | undefined> {
  return (await readVersioned(deps, key))?.raw;
}

export async function writeText(deps: StoreDeps, key: string, body: string, contentType = 'text/plain; charset=utf-8'): Promise<void> {
  await deps.s3.send(new PutObjectCommand({ Bucket: deps.bucket, Key: key, Body: body, ContentType: contentType }));
}

export function parseJsonl<T>(raw: string | undefined, what: string): T[] {
  if (!raw) return [];
  return raw
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line, index) => {
      try {
        return JSON.parse(line) as T;
      } catch {
        throw new Error(`${what} line ${index + 1} is not valid JSON`);
      }
    });
}

const toJsonl = (items: unknown[]) => items.map((item) => JSON.stringify(item)).join('\n') + (items.length ? '\n' : '');

/** The S3 ETag a context was read at; null when it did not exist yet. */
export type ContextVersion = string | null;

/** A thread's context as read, with the version a save must match. */
export interface LoadedContext {
  entries: ContextEntry[];
  version: ContextVersion;
  /** Lines that were not a context entry (cut JSON, a hand edit gone wrong): left out of `entries`, as they were. */
  unreadable?: string[];
}

// What a line must be for the model step to use it; anything else would fail every run of the thread.
const contextLine = z.object({
  role: z.enum(['user', 'assistant']),
  content: z.array(z.looseObject({})),
  meta: z.looseObject({}),
});

/** The context's lines as entries, and the lines that are not one (kept verbatim, for the quarantine). */
export function parseContext(raw: string | undefined): { entries: ContextEntry[]; unreadable: string[] } {
  const entries: ContextEntry[] = [];
  const unreadable: string[] = [];
  for (const line of (raw ?? '').split('\n')) {
    if (line.trim() === '') continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      unreadable.push(line);
      continue;
    }
    if (contextLine.safeParse(parsed).success) entries.push(parsed as ContextEntry);
    else unreadable.push(line);
  }
  return { entries, unreadable };
}

/** Another writer changed the context since it was loaded: a step of a run that no longer holds the thread. */
export class ContextConflict extends Error {
  override name = 'ContextConflict';
}

/**
 * Whose context a step works on: the thread's (the thread id names it), or a subagent's own, kept
 * beside it (shared/run/subagents/). Every context read and write of a run goes through this id.
 */
export type ContextId = string;

/** Never part of a thread id (they are single-line platform ids). */
const CHILD_CONTEXT_MARK = '\n';

export const contextIdOf = (run: Pick<RunInput, 'threadId' | 'runId' | 'child'>): ContextId =>
  run.child ? `${run.threadId}${CHILD_CONTEXT_MARK}${run.runId}` : run.threadId;

function contextKey(contextId: ContextId): string {
  const [threadId, childRunId] = contextId.split(CHILD_CONTEXT_MARK);
  const keys = dataKeys(threadId!);
  return childRunId ? keys.childContext(childRunId) : keys.context;
}

export async function loadContext(deps: StoreDeps, contextId: ContextId): Promise<LoadedContext> {
  const key = contextKey(contextId);
  const read = await readVersioned(deps, key);
  if (!read) return { entries: [], version: null };
  if (!read.etag) throw new Error(`S3 returned ${key} without an ETag`);
  const { entries, unreadable } = parseContext(read.raw);
  return { entries, version: read.etag, ...(unreadable.length ? { unreadable } : {}) };
}

/**
 * Saves the context only if it is still at `version` (S3 conditional write) and returns the new
 * version. Runs of a thread are serialised by the lease, so a conflict means a stopped run's last
 * step arrived late: its write must not clobber the run that holds the thread now.
 */
export async function saveContext(
  deps: StoreDeps,
  contextId: ContextId,
  entries: ContextEntry[],
  version: ContextVersion,
): Promise<string> {
  const key = contextKey(contextId);
  const condition = version === null ? { IfNoneMatch: '*' } : { IfMatch: version };
  try {
    const out = await deps.s3.send(
      new PutObjectCommand({ Bucket: deps.bucket, Key: key, Body: toJsonl(entries), ContentType: 'application/x-ndjson', ...condition }),
    );
    if (!out.ETag) throw new Error(`S3 saved ${key} without returning an ETag`);
    return out.ETag;
  } catch (error) {
    if (isS3PreconditionFailed(error)) throw new ContextConflict(`${key} changed since it was loaded`);
    throw error;
  }
}

/** Saves a loaded context in place: its version moves to the one just written. */
export async function saveLoadedContext(deps: StoreDeps, contextId: ContextId, context: LoadedContext): Promise<void> {
  context.version = await saveContext(deps, contextId, context.entries, context.version);
}

/** log.jsonl as it was read or written: its lines, and the version a write goes over (null: no file yet). */
export interface LogVersion {
  entries: LogEntry[];
  etag: string | null;
}

export async function readLog(deps: StoreDeps, threadId: string): Promise<LogVersion> {
  const key = dataKeys(threadId).log;
  const read = await readVersioned(deps, key);
  return read ? { entries: parseJsonl<LogEntry>(read.raw, key), etag: read.etag ?? null } : { entries: [], etag: null };
}

export async function loadLog(deps: StoreDeps, threadId: string): Promise<LogEntry[]> {
  return (await readLog(deps, threadId)).entries;
}

/**
 * Appends entries not logged yet (by message id), in date order. The write is conditional on the
 * version read, and retried on a conflict, so racing writers neither lose nor duplicate an entry.
 * `known`: the version the caller read or wrote a moment ago: the first attempt writes over it
 * without reading the file again (a stale one fails the condition, and the retry reads).
 * `editedReplies`: the entries are the run's own exchange, so an agent reply logged with another
 * text (a retried step edited its message since) takes the given one.
 */
export async function appendLog(
  deps: StoreDeps,
  threadId: string,
  entries: LogEntry[],
  secrets: SecretPattern[] = SECRET_PATTERNS,
  known?: LogVersion,
  editedReplies = false,
): Promise<{ appended: number; log: LogVersion }> {
  const key = dataKeys(threadId).log;
  let kept = known;
  return retryOnConflict(`Could not append to ${key}`, async () => {
    const { entries: existing, etag } = kept ?? (await readLog(deps, threadId));
    kept = undefined;
    const seen = new Map(existing.map((e) => [e.messageId, e]));
    const given = entries
      .filter((e, i) => entries.findIndex((o) => o.messageId === e.messageId) === i)
      // The exchange log is for people to read: secrets anyone pasted or the model wrote stay out of it.
      .map((e) => ({ ...e, text: redactSecrets(e.text, secrets) }));
    const fresh = given.filter((e) => !seen.has(e.messageId));
    const edited = new Map(
      given
        .filter((e) => editedReplies && e.isBot && seen.has(e.messageId) && seen.get(e.messageId)!.text !== e.text)
        .map((e) => [e.messageId, e]),
    );
    if (fresh.length === 0 && edited.size === 0) return { appended: 0, log: { entries: existing, etag } };
    const merged = [...existing.map((e) => edited.get(e.messageId) ?? e), ...fresh].sort((a, b) => a.date.localeCompare(b.date));
    try {
      const out = await deps.s3.send(
        new PutObjectCommand({
          Bucket: deps.bucket,
          Key: key,
          Body: toJsonl(merged),
          ContentType: 'application/x-ndjson',
          ...(etag ? { IfMatch: etag } : { IfNoneMatch: '*' }),
        }),
      );
      return { appended: fresh.length, log: { entries: merged, etag: out.ETag ?? null } };
    } catch (error) {
      if (!isS3PreconditionFailed(error)) throw error;
      return TRY_AGAIN;
    }
  });
}

/** What Bedrock receives: the messages without our bookkeeping. */
export function toBedrockMessages(entries: ContextEntry[]): Message[] {
  return entries.map(({ role, content }) => ({ role, content }));
}

/** The folder of a thread's directory that holds its archived contexts (memory_search reads them; kept here,
 * away from compaction's model client, so a function that only searches does not load it). */
export const ARCHIVE_FOLDER = 'context-archive';

/** Where the full pre-compaction context is archived: one file per compaction, never deleted. */
export function archiveKey(threadId: string, at: string): string {
  return `${dataKeys(threadId).threadDir}/${ARCHIVE_FOLDER}/${at.replace(/[^A-Za-z0-9._-]/g, '-')}.jsonl`;
}
