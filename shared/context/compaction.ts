// Compaction of a thread's context, so that a long thread keeps fitting the model's window: when the context nears the model's window,
// the older messages are summarised by the model into one "previously…" message and the recent
// ones are kept verbatim. Pure logic plus one injected model call; the caller writes the full
// pre-compaction context to archiveKey() (context/store.ts) first and never deletes it.
import {
  ConverseCommand,
  type BedrockRuntimeClient,
  type ContentBlock,
  type ToolResultContentBlock,
} from '@aws-sdk/client-bedrock-runtime';
import { DEFAULT_COMPACTION_SETTINGS } from '../defaults.ts';
import { textOf } from '../model/converse.ts';
import type { ContextEntry } from './store.ts';

// ---------------------------------------------------------------------------------------------
// Token estimate
// ---------------------------------------------------------------------------------------------

/** Characters per token of the estimate (English text and JSON average ~4 for Claude-class tokenisers). */
export const CHARS_PER_TOKEN = 4;
/** An image (or video) counts as a fixed cost: roughly a 1,200 × 1,200 px image on Claude. */
export const IMAGE_TOKENS = 1_600;
/** Role and framing of each message. */
export const MESSAGE_OVERHEAD_TOKENS = 4;

const charTokens = (chars: number) => Math.ceil(chars / CHARS_PER_TOKEN);

/** Byte size of a document's bytes, whether a Uint8Array or (after a JSON round trip) a base64 string. */
function byteLength(bytes: unknown): number {
  if (bytes instanceof Uint8Array) return bytes.byteLength;
  if (typeof bytes === 'string') return Math.floor((bytes.length * 3) / 4);
  if (bytes && typeof bytes === 'object') return Object.keys(bytes).length; // a Uint8Array that went through JSON.stringify
  return 0;
}

/** JSON of a block without its raw bytes (an image's bytes are not what the model is billed for). */
function jsonChars(value: unknown): number {
  try {
    return JSON.stringify(value, (_key, v: unknown) => (v instanceof Uint8Array ? '' : v))?.length ?? 0;
  } catch {
    return 0;
  }
}

type AnyBlock = ContentBlock | ToolResultContentBlock;

function blockTokens(block: AnyBlock): number {
  if (block.text !== undefined) return charTokens(block.text.length);
  if (block.image || block.video) return IMAGE_TOKENS;
  if (block.document) {
    const source = block.document.source;
    const size = source?.text?.length ?? byteLength(source?.bytes);
    return Math.max(IMAGE_TOKENS, charTokens(size));
  }
  if ('json' in block && block.json !== undefined) return charTokens(jsonChars(block.json));
  if ('cachePoint' in block && block.cachePoint) return 0;
  if ('toolUse' in block && block.toolUse) return charTokens((block.toolUse.name ?? '').length + jsonChars(block.toolUse.input ?? {}));
  if ('toolResult' in block && block.toolResult) {
    return (block.toolResult.content ?? []).reduce((sum, inner) => sum + blockTokens(inner), charTokens(20));
  }
  return charTokens(jsonChars(block));
}

const isEntry = (item: ContextEntry | ContentBlock): item is ContextEntry =>
  'role' in item && Array.isArray((item as ContextEntry).content);

/**
 * A fast estimate of the input tokens of a context, some blocks or a string: ~4 characters per
 * token for text and for the JSON of tool inputs and results, a fixed 1,600 per image, 4 per
 * message for framing, nothing for cache points. Good to ±25 % on ordinary English and code;
 * the threshold leaves room for that.
 */
export function estimateTokens(input: string | readonly ContextEntry[] | readonly ContentBlock[]): number {
  if (typeof input === 'string') return charTokens(input.length);
  let tokens = 0;
  for (const item of input) {
    if (isEntry(item)) tokens += MESSAGE_OVERHEAD_TOKENS + item.content.reduce((sum, block) => sum + blockTokens(block), 0);
    else tokens += blockTokens(item);
  }
  return tokens;
}

// ---------------------------------------------------------------------------------------------
// When to compact
// ---------------------------------------------------------------------------------------------

export interface CompactionSettings {
  /** The model's context window. */
  contextWindowTokens: number;
  /** Kept free of conversation for the system prompt, the tool specs and the answer (shared/defaults.ts). */
  reservedOutputTokens: number;
  /** The newest messages kept verbatim, at least this many tokens when the shape of the thread allows. */
  keepRecentTokens: number;
  /** Compaction starts above this share of the effective window (window − reserve). */
  thresholdRatio: number;
}

export { DEFAULT_COMPACTION_SETTINGS };

export function resolveCompactionSettings(settings: Partial<CompactionSettings> = {}): CompactionSettings {
  const defined = Object.fromEntries(Object.entries(settings).filter(([, value]) => value !== undefined));
  return { ...DEFAULT_COMPACTION_SETTINGS, ...defined };
}

/** The token count above which a context is compacted: thresholdRatio × (window − reserved). */
export function compactionThreshold(settings: Partial<CompactionSettings> = {}): number {
  const s = resolveCompactionSettings(settings);
  return s.thresholdRatio * (s.contextWindowTokens - s.reservedOutputTokens);
}

/**
 * Whether the context (plus the system prompt and tool specs, estimated by the caller) is over
 * the threshold. The 20 % left above it is room for the estimate's error and for the next steps.
 */
export function needsCompaction(
  entries: readonly ContextEntry[],
  settings: Partial<CompactionSettings> = {},
  systemAndToolsTokens = 0,
): boolean {
  return estimateTokens(entries) + systemAndToolsTokens > compactionThreshold(settings);
}

// ---------------------------------------------------------------------------------------------
// Where to cut
// ---------------------------------------------------------------------------------------------

const toolUseIds = (entry: ContextEntry) => entry.content.flatMap((b) => (b.toolUse?.toolUseId ? [b.toolUse.toolUseId] : []));
const toolResultIds = (entry: ContextEntry) => entry.content.flatMap((b) => (b.toolResult?.toolUseId ? [b.toolResult.toolUseId] : []));

/** A message the kept part may begin with: the user's own words (no tool results riding along). */
function opensTurn(entry: ContextEntry): boolean {
  return entry.role === 'user' && !entry.content.some((b) => b.toolResult) && entry.content.some((b) => !b.cachePoint);
}

/**
 * Indices a cut must not fall on: cutting before index i (older = [0, i)) is unsafe when a tool
 * call sits before i and its result at or after i, since Bedrock rejects a toolResult without its
 * toolUse (400).
 */
function unsafeCuts(entries: readonly ContextEntry[]): boolean[] {
  const useAt = new Map<string, number>();
  entries.forEach((entry, i) => {
    for (const id of toolUseIds(entry)) if (!useAt.has(id)) useAt.set(id, i);
  });
  const delta = new Array<number>(entries.length + 1).fill(0);
  entries.forEach((entry, r) => {
    for (const id of toolResultIds(entry)) {
      const u = useAt.get(id);
      if (u === undefined || u >= r) continue;
      delta[u + 1] = (delta[u + 1] ?? 0) + 1;
      delta[r + 1] = (delta[r + 1] ?? 0) - 1;
    }
  });
  let open = 0;
  return entries.map((_, i) => (open += delta[i] ?? 0) > 0);
}

export interface ContextSplit {
  /** To be summarised (empty: nothing to do). */
  older: ContextEntry[];
  /** Kept verbatim; when older is not empty, it starts with a user message that is not tool results. */
  recent: ContextEntry[];
}

/**
 * Splits the context into the part to summarise and the part kept verbatim. The cut goes at the
 * latest point that keeps at least keepRecentTokens, moved earlier to the start of a user turn (a
 * user message without tool results) such that every toolResult kept has its toolUse kept too.
 * If no such point exists before it (one long agentic run), the earliest such point after it is
 * used instead, keeping less than keepRecentTokens rather than not compacting at all. When the
 * whole context fits in keepRecentTokens, or no point qualifies, older is empty.
 */
export function splitForCompaction(
  entries: readonly ContextEntry[],
  keepRecentTokens = DEFAULT_COMPACTION_SETTINGS.keepRecentTokens,
): ContextSplit {
  const nothing = (): ContextSplit => ({ older: [], recent: [...entries] });
  let candidate = entries.length;
  let kept = 0;
  while (candidate > 0 && kept < keepRecentTokens) kept += estimateTokens([entries[--candidate]!]);
  if (candidate === 0) return nothing();
  const unsafe = unsafeCuts(entries);
  const canCut = (i: number) => opensTurn(entries[i]!) && !unsafe[i];
  let cut = -1;
  for (let i = candidate; i > 0 && cut === -1; i--) if (canCut(i)) cut = i;
  for (let i = candidate + 1; i < entries.length && cut === -1; i++) if (canCut(i)) cut = i;
  if (cut === -1) return nothing();
  return { older: entries.slice(0, cut), recent: entries.slice(cut) };
}

// ---------------------------------------------------------------------------------------------
// The transcript the model summarises
// ---------------------------------------------------------------------------------------------

/** Tool inputs and results in the transcript are cut to this many characters each. */
export const TRANSCRIPT_TOOL_CHARS = 500;
/** A message's text in the transcript is cut to this many characters (long pastes, long answers). */
export const TRANSCRIPT_TEXT_CHARS = 6_000;

function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const keep = Math.max(0, max - 40);
  return `${text.slice(0, keep)}… [${text.length - keep} more characters cut]`;
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ⏎ ');
}

function describeMedia(block: AnyBlock): string | undefined {
  if (block.image) return `[image${block.image.format ? ` (${block.image.format})` : ''}]`;
  if (block.video) return '[video]';
  if (block.document) return `[document${block.document.name ? `: ${block.document.name}` : ''}]`;
  return undefined;
}

function resultText(content: readonly ToolResultContentBlock[]): string {
  return content
    .map((b) => b.text ?? (b.json !== undefined ? JSON.stringify(b.json) : (describeMedia(b) ?? '')))
    .filter((s) => s !== '')
    .join('\n');
}

/** One entry of the transcript: role, text, tool calls as `→ tool(name, input)`, results cut short. */
function renderEntry(entry: ContextEntry, index: number, toolNames: ReadonlyMap<string, string>): string {
  const results = entry.content.some((b) => b.toolResult);
  const lines = [`[${index + 1}] ${entry.role}${results ? ' (tool results)' : ''}:`];
  for (const block of entry.content) {
    if (block.text !== undefined) {
      if (block.text.trim()) lines.push(clip(block.text.trim(), TRANSCRIPT_TEXT_CHARS));
    } else if (block.toolUse) {
      const input = JSON.stringify(block.toolUse.input ?? {}) ?? '{}';
      lines.push(`→ tool(${block.toolUse.name ?? '?'}, ${clip(input, TRANSCRIPT_TOOL_CHARS)})`);
    } else if (block.toolResult) {
      const { toolUseId = '', status, content = [] } = block.toolResult;
      const name = toolNames.get(toolUseId) ?? 'tool';
      const text = oneLine(resultText(content)) || '(empty)';
      lines.push(`← result(${name}${status === 'error' ? ', error' : ''}): ${clip(text, TRANSCRIPT_TOOL_CHARS)}`);
    } else {
      const media = describeMedia(block);
      if (media) lines.push(media);
      // cache points and the model's reasoning are left out.
    }
  }
  return lines.join('\n');
}

/**
 * The older entries as a readable transcript. Over budgetTokens, the first entry (an earlier
 * summary, or the thread's opening message) and as many of the latest entries as fit are kept,
 * with a marker for the ones left out.
 */
export function renderTranscript(entries: readonly ContextEntry[], budgetTokens = Infinity): string {
  const toolNames = new Map<string, string>();
  for (const entry of entries)
    for (const b of entry.content) if (b.toolUse?.toolUseId) toolNames.set(b.toolUse.toolUseId, b.toolUse.name ?? 'tool');
  const parts = entries.map((entry, i) => renderEntry(entry, i, toolNames));
  const separator = '\n\n';
  const total = parts.reduce((sum, part) => sum + part.length + separator.length, 0);
  if (charTokens(total) <= budgetTokens || parts.length < 2) return parts.join(separator);
  let room = budgetTokens * CHARS_PER_TOKEN - parts[0]!.length - 200;
  let from = parts.length;
  while (from > 1 && room - parts[from - 1]!.length - separator.length >= 0) room -= parts[--from]!.length + separator.length;
  const omitted = from - 1;
  return [
    parts[0]!,
    `[… ${omitted} message${omitted === 1 ? '' : 's'} left out to fit the summariser's window …]`,
    ...parts.slice(from),
  ].join(separator);
}

// ---------------------------------------------------------------------------------------------
// Compaction
// ---------------------------------------------------------------------------------------------

export const COMPACTION_SYSTEM_PROMPT = [
  'You compact the history of a chat thread between people and an AI agent, so that the agent can carry on without the full history.',
  'You get a transcript of the older part of the thread. The newest messages are kept word for word and are not shown to you.',
  'Tool calls appear as "→ tool(name, input)" and their results as "← result(name): …"; long inputs and results were cut short.',
  '',
  'Write a faithful, compact summary that keeps:',
  '- decisions made, and why;',
  '- facts learned about the people, the project, the environment and the work;',
  '- open tasks, unanswered questions, promises the agent made, and what was in progress when the transcript ends;',
  '- file paths, URLs, commands, identifiers, names of people and things, and exact values that matter;',
  '- instructions and preferences from the people that still apply.',
  'If the transcript starts with an earlier summary, fold it in. Leave out greetings and chatter.',
  'Write only what the transcript supports: no invention, no guesses about cut-off output, no advice of your own.',
  'Use the language of the thread. Answer with the summary only, as short Markdown bullet points under a few headings.',
].join('\n');

const SUMMARY_HEADER = /^Previously in this thread \(summary of (\d+) earlier messages\):/;

export const TRUNCATION_NOTICE =
  "(Earlier messages of this thread were dropped to fit the context window; the full history is kept in the thread's archive.)";

export const COMPACTION_ACK = 'Understood. I will continue from here with that in mind.';

export interface Summarizer {
  summarize(prompt: { system: string; transcript: string }): Promise<string>;
}

export interface CompactionResult {
  /** The new context: [summary (user), ack (assistant), ...recent]; the input entries when not compacted. */
  entries: ContextEntry[];
  /** Whether entries differ from the input (true for the truncation fallback too). */
  compacted: boolean;
  /** Estimated tokens of the summary message (0 without a summary). */
  summaryTokens: number;
  /** Entries of the input that are no longer in the context. */
  removedEntries: number;
  /** The model could not summarise: the older messages were dropped instead. */
  fallback?: 'truncated';
  /** Why the fallback was taken. */
  error?: string;
  tokensBefore: number;
  tokensAfter: number;
}

/**
 * The meta of the summary and ack entries. The run id is marked so these entries are never taken
 * for the run's own answer (agent.ts matches assistant entries by runId for step idempotency and
 * for the exchange log).
 */
export function compactionMeta(meta: { runId: string; at: string }): ContextEntry['meta'] {
  return { runId: `${meta.runId}#compaction`, at: meta.at };
}

/** Original messages a summary stands for: its own count if older begins with an earlier summary. */
function summarisedCount(older: readonly ContextEntry[]): number {
  const first = older[0];
  const earlier = first?.role === 'user' ? SUMMARY_HEADER.exec(textOf(first.content)) : null;
  if (!earlier) return older.length;
  const ack = older[1]?.role === 'assistant' && textOf(older[1].content) === COMPACTION_ACK ? 1 : 0;
  return Number(earlier[1]) + older.length - 1 - ack;
}

/**
 * Replaces the older part of the context with a model-written summary; the recent part is kept
 * verbatim. Does not check the threshold (see needsCompaction) and never throws: if the model
 * fails or answers nothing, the older part is dropped with a notice instead. The input is not
 * changed: the caller saves the result under the version it loaded.
 */
export async function compactContext(
  deps: Summarizer,
  entries: readonly ContextEntry[],
  settings: Partial<CompactionSettings>,
  meta: { runId: string; at: string },
): Promise<CompactionResult> {
  const s = resolveCompactionSettings(settings);
  const tokensBefore = estimateTokens(entries);
  const { older, recent } = splitForCompaction(entries, s.keepRecentTokens);
  if (older.length === 0) {
    return { entries: [...entries], compacted: false, summaryTokens: 0, removedEntries: 0, tokensBefore, tokensAfter: tokensBefore };
  }
  const entryMeta = compactionMeta(meta);
  const ack: ContextEntry = { role: 'assistant', content: [{ text: COMPACTION_ACK }], meta: entryMeta };
  const finish = (head: ContextEntry, extra: Pick<CompactionResult, 'summaryTokens' | 'fallback' | 'error'>): CompactionResult => {
    const next = [head, ack, ...recent];
    return { entries: next, compacted: true, removedEntries: older.length, ...extra, tokensBefore, tokensAfter: estimateTokens(next) };
  };

  let summary = '';
  let error: string | undefined;
  try {
    const budget = Math.floor(compactionThreshold(s));
    summary = (await deps.summarize({ system: COMPACTION_SYSTEM_PROMPT, transcript: renderTranscript(older, budget) })).trim();
    if (!summary) error = 'the summary was empty';
  } catch (caught) {
    error = caught instanceof Error ? `${caught.name}: ${caught.message}` : String(caught);
  }
  if (error !== undefined) {
    const notice: ContextEntry = { role: 'user', content: [{ text: TRUNCATION_NOTICE }], meta: entryMeta };
    return finish(notice, { summaryTokens: 0, fallback: 'truncated', error });
  }
  const count = summarisedCount(older);
  const text = `Previously in this thread (summary of ${count} earlier messages):\n\n${summary}`;
  const head: ContextEntry = { role: 'user', content: [{ text }], meta: entryMeta };
  return finish(head, { summaryTokens: estimateTokens([head]) });
}

// ---------------------------------------------------------------------------------------------
// The model call and the archive
// ---------------------------------------------------------------------------------------------

/** A summarize function backed by one non-streaming Bedrock Converse call. */
export function bedrockSummarizer(deps: {
  bedrock: BedrockRuntimeClient;
  modelId: string;
  maxOutputTokens?: number;
}): Summarizer['summarize'] {
  return async ({ system, transcript }) => {
    const out = await deps.bedrock.send(
      new ConverseCommand({
        modelId: deps.modelId,
        system: [{ text: system || COMPACTION_SYSTEM_PROMPT }],
        messages: [
          {
            role: 'user',
            content: [{ text: `<transcript>\n${transcript}\n</transcript>\n\nSummarise the transcript above as instructed.` }],
          },
        ],
        inferenceConfig: { maxTokens: deps.maxOutputTokens ?? 4_096 },
      }),
    );
    const text = textOf(out.output?.message?.content ?? []).trim();
    if (text && out.stopReason === 'max_tokens') return `${text}\n\n(summary cut off at the output limit)`;
    return text;
  };
}
