// The tools the model is offered, as Bedrock tool specs. Sandbox tools run in the thread's sandbox
// (through the sandbox-step Lambda, inside the VPC); chat tools run in the agent-step Lambda.
import type { Tool, ToolConfiguration } from '@aws-sdk/client-bedrock-runtime';

export const SANDBOX_TOOLS = ['bash', 'read', 'write', 'edit'] as const;
export const CHAT_TOOLS = ['upload', 'search_channel'] as const;
export type ToolName = (typeof SANDBOX_TOOLS)[number] | (typeof CHAT_TOOLS)[number];

export const isSandboxTool = (name: string | undefined) => (SANDBOX_TOOLS as readonly string[]).includes(name ?? '');

export const DEFAULT_BASH_TIMEOUT_SECONDS = 120;
/** sandbox-step's Lambda timeout, Lambda's maximum: one command runs within one invocation. */
export const SANDBOX_STEP_TIMEOUT_SECONDS = 900;
/** The longest command: the same invocation syncs files before and after it (2 minutes kept for that). */
export const MAX_BASH_TIMEOUT_SECONDS = SANDBOX_STEP_TIMEOUT_SECONDS - 120;

const spec = (name: ToolName, description: string, properties: Record<string, unknown>, required: string[]): Tool => ({
  toolSpec: { name, description, inputSchema: { json: { type: 'object', properties, required, additionalProperties: false } as never } },
});

const path = { type: 'string', description: 'File path, relative to your working directory (scratch/) or absolute under /workspace' };

export const TOOL_SPECS: Tool[] = [
  spec(
    'bash',
    'Run a shell command (sh -c) in your sandbox, in your scratch/ working directory. Output over the display limit is truncated, with the full output saved to a file whose path is given.',
    {
      command: { type: 'string', description: 'The command line to run' },
      timeout_seconds: {
        type: 'integer',
        minimum: 1,
        maximum: MAX_BASH_TIMEOUT_SECONDS,
        description: `Kill the command after this many seconds (default ${DEFAULT_BASH_TIMEOUT_SECONDS})`,
      },
    },
    ['command'],
  ),
  spec(
    'read',
    'Read a text file, with line numbers. Use offset/limit for long files.',
    {
      path,
      offset: { type: 'integer', minimum: 1, description: 'First line to read (1-based)' },
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: 2000,
        description: 'How many lines to read (default and most 2000; at most 30,000 characters are returned)',
      },
    },
    ['path'],
  ),
  spec(
    'write',
    'Create or overwrite a file with the given content; parent directories are created.',
    {
      path,
      content: { type: 'string', description: 'The complete new content' },
    },
    ['path', 'content'],
  ),
  spec(
    'edit',
    'Replace an exact string in a file. old_string must occur exactly once unless replace_all is true.',
    {
      path,
      old_string: { type: 'string', description: 'The exact text to replace (include enough context to be unique)' },
      new_string: { type: 'string', description: 'The replacement text' },
      replace_all: { type: 'boolean', description: 'Replace every occurrence (default false)' },
    },
    ['path', 'old_string', 'new_string'],
  ),
  spec(
    'upload',
    'Post a file from your workspace into this chat thread, with an optional comment.',
    {
      path,
      comment: { type: 'string', description: 'Text posted with the file' },
    },
    ['path'],
  ),
  spec(
    'search_channel',
    "Search this channel's message history (newest first) for messages containing the query.",
    {
      query: { type: 'string', description: 'Text to look for (case-insensitive)' },
      limit: { type: 'integer', minimum: 1, maximum: 100, description: 'Most results to return (default 20)' },
    },
    ['query'],
  ),
];

export const TOOL_CONFIG: ToolConfiguration = { tools: TOOL_SPECS };

/** The same tools with a cache point after them: tools and system prompt are the cached prefix. */
export const CACHED_TOOL_CONFIG: ToolConfiguration = { tools: [...TOOL_SPECS, { cachePoint: { type: 'default' } }] };
