// The system prompt: stable parts first (identity, how to behave in chat, the deployment's SYSTEM.md),
// volatile parts (date, thread, run) last, so a prompt cache can reuse the prefix.
import type { SystemContentBlock } from '@aws-sdk/client-bedrock-runtime';
import { parseThreadId } from '../ids.ts';
import type { WorkspaceLayout } from '../sandbox/workspace.ts';

export const DEFAULT_IDENTITY = `You are a helpful assistant that lives in a team's chat threads. You are direct, friendly and precise.`;

export interface SystemPromptInput {
  identity?: string;
  /** The deployment's environment notes (SYSTEM.md). */
  systemNotes?: string;
  threadId: string;
  runId: string;
  now: Date;
  workspace?: WorkspaceLayout;
  /** The three MEMORY.md files' contents, read fresh for this run (absent or empty: omitted). */
  memory?: { global?: string; transport?: string; channel?: string };
  /** The skills offered for this run, formatted (see shared/context/skills.ts). */
  skills?: string;
  /** Mark the end of the stable prefix for Bedrock's prompt cache. */
  cache?: boolean;
  /** A subagent's run: another agent gave it its task (shared/run/subagents/). */
  subagent?: boolean;
}

/** What a subagent is told of its place: after the cache point, so the stable prefix is the same as its parent's. */
const SUBAGENT_SECTION = [
  '## You are a subagent',
  'Another agent gave you the task in the user message and reads your last answer as its result; nobody in the thread sees your answers.',
  'Work on the task alone, with your tools and the shared files, and end with a complete, self-contained answer.',
  'You cannot schedule events or start threads: event files you write are not saved.',
].join('\n');

/** The memory files under headings, broadest first; "(no memory yet)" when all are empty. */
export function memorySection(adapter: string, memory: SystemPromptInput['memory'] = {}): string {
  const parts = [
    memory.global?.trim() ? `### Global Memory\n${memory.global.trim()}` : '',
    memory.transport?.trim() ? `### Transport Memory (${adapter})\n${memory.transport.trim()}` : '',
    memory.channel?.trim() ? `### Channel Memory\n${memory.channel.trim()}` : '',
  ].filter(Boolean);
  return ['## Memory', parts.length ? parts.join('\n\n') : '(no memory yet)'].join('\n');
}

function workspaceSection(layout: WorkspaceLayout): string {
  const [global, transport, channel] = layout.memoryKeys.map((k) => `/workspace/data/${k}`);
  const skills = layout.prefixes.slice(0, 3).map((p) => `/workspace/data/${p}`);
  return [
    '## Your workspace',
    'You have a private Linux sandbox for this thread, with the tools bash, read, write and edit. Files persist between runs.',
    `- Working directory (your scratch space): /workspace/${layout.scratchPath}`,
    `- Files people attached in this thread: /workspace/${layout.attachmentsPath}`,
    `- Memory files: global ${global} and this platform ${transport} (read-only: shared by every channel, only operators change them), and this channel's ${channel}, which you maintain with write/edit.`,
    `- Skills directories (global, platform, channel): ${skills.join(', ')}. Only this channel's is writable.`,
    'Use upload to post a file from your workspace into the thread, search_channel to look up earlier messages in this channel, and memory_search to recall what was said or decided in this channel before, including the parts of long threads that were summarised.',
  ].join('\n');
}

function schedulingSection(threadId: string, layout: WorkspaceLayout): string {
  return [
    '## Scheduling work for later',
    `To be woken up later (a reminder, a periodic check), write a JSON event file into /workspace/${layout.eventsPath} (one file per event, name ending in .json). Events act only in this channel:`,
    `- in this thread: {"type": "one-shot", "threadId": "${threadId}", "text": "what to do then", "schedule": "2026-03-01T09:00:00", "timezone": "Europe/Berlin"}`,
    '- as a new thread in this channel (no target): {"type": "periodic", "text": "...", "schedule": "0 9 * * 1-5", "timezone": "America/New_York"}',
    `- now: {"type": "immediate", "threadId": "${threadId}", "text": "..."}`,
    'one-shot schedule: local date and time YYYY-MM-DDTHH:MM[:SS] in the IANA timezone (ask the user for theirs if unknown); periodic: 5-field cron (minute hour day-of-month month day-of-week). When the event fires, its text arrives in the thread as a message for you.',
    'List events with ls, cancel one by deleting its file, change it by rewriting it. A file that is invalid gets NAME.error.json beside it explaining why; fix the file and save it again.',
  ].join('\n');
}

export function buildSystemPrompt(input: SystemPromptInput): SystemContentBlock[] {
  const { adapter, channel } = parseThreadId(input.threadId);
  const stable = [
    input.identity?.trim() || DEFAULT_IDENTITY,
    [
      '## How you work',
      `You are talking in a ${adapter} thread. Several people may write in it; each user message starts with the author's name.`,
      'Answer in the thread in Markdown that chat apps render well: short paragraphs, lists, code blocks. Keep replies as short as the question allows.',
      'Never reveal secrets, tokens or credentials, even if asked.',
    ].join('\n'),
    input.workspace ? workspaceSection(input.workspace) : '',
    input.workspace ? schedulingSection(input.threadId, input.workspace) : '',
    input.systemNotes?.trim() ? `## Environment notes (SYSTEM.md)\n${input.systemNotes.trim()}` : '',
    input.memory ? memorySection(adapter, input.memory) : '',
    input.skills ?? '',
  ].filter(Boolean);
  const volatile = [
    '## Now',
    `Current time: ${input.now.toISOString()}`,
    `Channel: ${channel}; thread id: ${input.threadId}; run: ${input.runId}`,
    ...(input.subagent ? ['', SUBAGENT_SECTION] : []),
  ].join('\n');
  // The stable part (identity, instructions, memory) is the cacheable prefix; the time and run id,
  // which change every run, come after the cache point.
  return [{ text: stable.join('\n\n') }, ...(input.cache ? [{ cachePoint: { type: 'default' as const } }] : []), { text: volatile }];
}
