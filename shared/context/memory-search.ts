// Recall for one channel: a ranked full-text search over what the runtime keeps of the channel in S3
// (each thread's log.jsonl, the contexts compaction archived, and the MEMORY.md files the channel's
// runs read). No search server: the index is built in memory from the objects at query time, within
// fixed bounds (threads, bytes, objects), and the answer says when a bound left something unread.
// The channel is always the one of `threadId`, the run's own thread: nothing a caller passes in can
// widen it.
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import MiniSearch, { type SearchResult } from 'minisearch';
import { dataKeys } from '../ids.ts';
import { forEachLimit } from '../support/parallel.ts';
import { workspaceLayout } from '../sandbox/workspace.ts';
import { ARCHIVE_FOLDER, type ContextEntry, type LogEntry, parseContext, readText, type StoreDeps } from './store.ts';

export interface MemorySearchLimits {
  /** Threads of the channel whose files are read (the searching thread first, then the newest by id). */
  maxThreads: number;
  /** Bytes of files read in all. */
  maxBytes: number;
  /** A single file larger than this is left out. */
  maxObjectBytes: number;
  /** Characters of one message indexed (a long tool result is cut). */
  maxDocChars: number;
}

export const MEMORY_SEARCH_LIMITS: MemorySearchLimits = {
  maxThreads: 200,
  maxBytes: 16 * 1024 * 1024,
  maxObjectBytes: 4 * 1024 * 1024,
  maxDocChars: 20_000,
};

/** Characters of a hit shown: the part around the first matching word. */
export const SNIPPET_CHARS = 400;
/** S3 calls in flight at once while gathering the channel's files. */
const READ_CONCURRENCY = 16;

/** One searchable piece: a logged message, an archived context message or a paragraph of a memory file. */
interface MemoryDoc {
  id: number;
  text: string;
  /** Where it came from, as the model is told: the thread and file, or the memory file and line. */
  where: string;
  /** When it was said or archived (ISO), when known. */
  at?: string;
}

export interface MemoryHit {
  where: string;
  at?: string;
  snippet: string;
  score: number;
}

export interface MemorySearchResult {
  hits: MemoryHit[];
  threads: number;
  files: number;
  bytes: number;
  /** Why part of the channel's memory was not searched (empty: all of it was). */
  capped: string[];
}

/** A thread's folder name as the model reads it (the key segment, decoded). */
const threadName = (segment: string) => decodeURIComponent(segment);

/** Folders of the channel's data directory that are not threads. */
const NOT_THREADS = new Set(['skills', 'agents']);

/** A thread's log or one of its archived contexts, as listed. */
interface ThreadObject {
  key: string;
  thread: string;
  kind: 'log' | 'archive';
  size: number;
  modified: number;
}

/** The lines of a JSONL file that parse; a bad line (cut short, hand-edited) costs only itself. */
function jsonLines(raw: string): unknown[] {
  return raw.split('\n').flatMap((line) => {
    if (!line.trim()) return [];
    try {
      return [JSON.parse(line) as unknown];
    } catch {
      return [];
    }
  });
}

async function listAll(store: StoreDeps, prefix: string, delimiter?: string) {
  const keys: { key: string; size: number; modified: number }[] = [];
  const folders: string[] = [];
  let token: string | undefined;
  do {
    const out = await store.s3.send(
      new ListObjectsV2Command({ Bucket: store.bucket, Prefix: prefix, Delimiter: delimiter, ContinuationToken: token }),
    );
    for (const o of out.Contents ?? []) if (o.Key) keys.push({ key: o.Key, size: o.Size ?? 0, modified: o.LastModified?.getTime() ?? 0 });
    for (const p of out.CommonPrefixes ?? []) if (p.Prefix) folders.push(p.Prefix);
    token = out.IsTruncated ? out.NextContinuationToken : undefined;
  } while (token);
  return { keys, folders };
}

/** The text of a context message worth finding: what was written, the tools asked for and what they answered. */
function entryText(entry: ContextEntry): string {
  const parts: string[] = [];
  for (const block of entry.content) {
    if (block.text !== undefined) parts.push(block.text);
    else if (block.toolUse) parts.push(`${block.toolUse.name ?? 'tool'} ${JSON.stringify(block.toolUse.input ?? {})}`);
    else if (block.toolResult)
      for (const inner of block.toolResult.content ?? [])
        parts.push(inner.text ?? (inner.json !== undefined ? JSON.stringify(inner.json) : ''));
  }
  return parts.join('\n').trim();
}

/** A memory file as paragraphs, each with the line it starts on. */
function paragraphs(text: string): { line: number; text: string }[] {
  const out: { line: number; text: string }[] = [];
  let start = 0;
  let lines: string[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') {
      if (lines.length) out.push({ line: start + 1, text: lines.join('\n') });
      lines = [];
      return;
    }
    if (!lines.length) start = i;
    lines.push(line);
  });
  if (lines.length) out.push({ line: start + 1, text: lines.join('\n') });
  return out;
}

function snippet(text: string, terms: readonly string[]): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= SNIPPET_CHARS) return flat;
  const lower = flat.toLowerCase();
  const first = Math.min(...terms.map((t) => lower.indexOf(t.toLowerCase())).filter((i) => i >= 0), flat.length);
  const from = first >= flat.length ? 0 : Math.max(0, first - SNIPPET_CHARS / 4);
  const to = Math.min(flat.length, from + SNIPPET_CHARS);
  return `${from > 0 ? '…' : ''}${flat.slice(from, to)}${to < flat.length ? '…' : ''}`;
}

/**
 * Searches the channel of `threadId` for `query` and returns the best `limit` hits, best first.
 * Reads the channel's threads' logs and archived contexts (the searching thread's first, then the
 * newest) and the memory files the thread's runs read, within `limits`.
 */
export async function searchChannelMemory(
  store: StoreDeps,
  threadId: string,
  query: string,
  limit: number,
  limits: MemorySearchLimits = MEMORY_SEARCH_LIMITS,
): Promise<MemorySearchResult> {
  const { channelDir, threadDir } = dataKeys(threadId);
  const own = threadDir.slice(channelDir.length + 1);
  const capped: string[] = [];
  const docs: MemoryDoc[] = [];
  const add = (doc: Omit<MemoryDoc, 'id'>) => {
    if (doc.text) docs.push({ ...doc, text: doc.text.slice(0, limits.maxDocChars), id: docs.length });
  };

  const listed = await listAll(store, `${channelDir}/`, '/');
  const segments = listed.folders.map((f) => f.slice(channelDir.length + 1, -1)).filter((s) => s && !NOT_THREADS.has(s) && s !== own);
  // Slack thread ids are timestamps: descending order is newest first.
  segments.sort((a, b) => b.localeCompare(a));
  const threads = [own, ...segments];
  if (threads.length > limits.maxThreads) {
    capped.push(`only the ${limits.maxThreads} newest of ${threads.length} threads were searched`);
    threads.length = limits.maxThreads;
  }

  // What each thread holds: its log and its archived contexts, listed first so the byte budget is spent
  // before anything is read.
  const objects: ThreadObject[] = [];
  await forEachLimit(threads, READ_CONCURRENCY, async (segment) => {
    const dir = `${channelDir}/${segment}`;
    const [log, archives] = await Promise.all([listAll(store, `${dir}/log.jsonl`), listAll(store, `${dir}/${ARCHIVE_FOLDER}/`)]);
    for (const o of log.keys) if (o.key === `${dir}/log.jsonl`) objects.push({ ...o, thread: segment, kind: 'log' });
    for (const o of archives.keys) if (o.key.endsWith('.jsonl')) objects.push({ ...o, thread: segment, kind: 'archive' });
  });

  // The searching thread's files first, then everyone's newest first, while the byte budget lasts.
  objects.sort((a, b) => Number(b.thread === own) - Number(a.thread === own) || b.modified - a.modified);
  const chosen: ThreadObject[] = [];
  let bytes = 0;
  let skippedLarge = 0;
  let skippedBudget = 0;
  for (const object of objects) {
    if (object.size > limits.maxObjectBytes) skippedLarge++;
    else if (bytes + object.size > limits.maxBytes) skippedBudget++;
    else {
      chosen.push(object);
      bytes += object.size;
    }
  }
  if (skippedLarge) capped.push(`${skippedLarge} file(s) over ${limits.maxObjectBytes} bytes were left out`);
  if (skippedBudget) capped.push(`${skippedBudget} older file(s) were left out (over ${limits.maxBytes} bytes in all)`);

  const texts = new Map<ThreadObject, string>();
  await forEachLimit(chosen, READ_CONCURRENCY, async (object) => {
    const text = await readText(store, object.key);
    if (text !== undefined) texts.set(object, text);
  });
  let files = texts.size;

  // Each archive holds the whole context at its compaction: a message kept across compactions is indexed once.
  const seen = new Set<string>();
  for (const object of chosen) {
    const raw = texts.get(object);
    if (raw === undefined) continue;
    const thread = `thread ${threadName(object.thread)}`;
    if (object.kind === 'log') {
      for (const e of jsonLines(raw) as Partial<LogEntry>[]) {
        if (typeof e.text === 'string') add({ text: `${e.userName || e.userId || '?'}: ${e.text}`, where: `${thread}, log`, at: e.date });
      }
      continue;
    }
    const name = object.key.slice(object.key.lastIndexOf('/') + 1);
    for (const entry of parseContext(raw).entries) {
      // The summary and its acknowledgement stand for messages the archives hold verbatim.
      if (entry.meta.runId?.endsWith('#compaction')) continue;
      const text = entryText(entry);
      const id = `${object.thread}\n${entry.role}\n${entry.meta.at}\n${text}`;
      if (seen.has(id)) continue;
      seen.add(id);
      add({ text, where: `${thread}, archived context ${name} (${entry.role})`, at: entry.meta.at });
    }
  }

  const memoryKeys = workspaceLayout(threadId).memoryKeys;
  const memories = await Promise.all(memoryKeys.map((key) => readText(store, key)));
  memoryKeys.forEach((key, i) => {
    const text = memories[i];
    if (text === undefined) return;
    files++;
    bytes += Buffer.byteLength(text);
    for (const p of paragraphs(text)) add({ text: p.text, where: `${key} line ${p.line}` });
  });

  const index = new MiniSearch<MemoryDoc>({
    fields: ['text'],
    searchOptions: {
      // Words of four letters or more also match longer words they start; longer ones tolerate a typo.
      prefix: (term) => term.length >= 4,
      fuzzy: (term) => (term.length >= 6 ? 0.2 : false),
    },
  });
  index.addAll(docs);
  const results: SearchResult[] = index.search(query).slice(0, limit);
  const hits = results.map((r) => {
    const doc = docs[r.id as number]!;
    return { where: doc.where, ...(doc.at ? { at: doc.at } : {}), snippet: snippet(doc.text, r.terms), score: r.score };
  });
  return { hits, threads: threads.length, files, bytes, capped };
}
