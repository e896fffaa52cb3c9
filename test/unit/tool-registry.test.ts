// The tool registry: Bedrock specs made from the zod schemas, one error shape for a bad input, where
// each tool runs, and tools added at run time. No emulator: tools here run on plain contexts.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import * as z from 'zod';
import { workspaceLayout } from '../../shared/sandbox/workspace.ts';
import { toolCallRefusal, toolPolicyFor } from '../../shared/tools/allowed-tools.ts';
import { BUILTIN_TOOLS } from '../../shared/tools/builtin/index.ts';
import { inputJsonSchema, toolRegistry } from '../../shared/tools/registry.ts';
import { runAgentTool, runSandboxTool, runTool } from '../../shared/tools/run.ts';
import { ToolError } from '../../shared/tools/text.ts';
import { defineTool, type AgentToolContext, type SandboxToolContext } from '../../shared/tools/tool.ts';

const layout = workspaceLayout('slack:C1:1.5');
// Nothing here reaches a thread, S3 or a sandbox: the tools under test use only their input.
const agentContext = { layout } as Omit<AgentToolContext, 'toolUseId'>;
const sandboxContext: Omit<SandboxToolContext, 'toolUseId'> = {
  address: { baseUrl: 'http://127.0.0.1:9', token: 't' },
  layout,
  signal: new AbortController().signal,
  callMcpTool: () => Promise.reject(new Error('no MCP server here')),
};

/** An agent tool that says what it was given (and throws what it is asked to). */
const echo = defineTool({
  name: 'echo',
  runsIn: 'agent',
  description: 'Say the words back.',
  input: z.object({
    words: z.string().describe('What to say'),
    times: z.int().min(1).max(3).describe('How often').optional(),
    fail: z.enum(['tool', 'crash']).optional(),
  }),
  async run(input) {
    if (input.fail === 'tool') throw new ToolError('echo refused');
    if (input.fail === 'crash') throw new Error('the platform is down');
    return { status: 'success', text: JSON.stringify(input) };
  },
});

test('the built-in tool specs are made from the zod schemas, byte for byte what the hand-written specs were', () => {
  // test/fixtures/tool-specs.json is the specs as they were written by hand. The tools are the start of
  // every cached prompt: a change here is a deliberate one, made in the fixture too.
  const handWritten = JSON.parse(readFileSync(new URL('../fixtures/tool-specs.json', import.meta.url), 'utf8')) as unknown[];
  assert.equal(JSON.stringify(BUILTIN_TOOLS.toolConfig(false).tools), JSON.stringify(handWritten));
  const cached = BUILTIN_TOOLS.toolConfig(true).tools!;
  assert.deepEqual(cached.at(-1), { cachePoint: { type: 'default' } });
  assert.equal(JSON.stringify(cached.slice(0, -1)), JSON.stringify(handWritten));
  // The same bytes on every call: the prompt cache's prefix does not move within a run.
  assert.equal(JSON.stringify(BUILTIN_TOOLS.toolConfig(true)), JSON.stringify(BUILTIN_TOOLS.toolConfig(true)));
});

test('a JSON Schema for Bedrock: no $schema, no safe-integer bounds, advertised bounds kept, unknown fields refused', () => {
  const schema = inputJsonSchema(
    z.object({
      name: z.string(),
      count: z.int().describe('Any whole number').optional(),
      limit: z.int().min(1).meta({ maximum: 50 }).optional(),
      mode: z.enum(['fast', 'slow']).default('fast'),
    }),
  );
  assert.deepEqual(schema, {
    type: 'object',
    properties: {
      name: { type: 'string' },
      count: { type: 'integer', description: 'Any whole number' },
      limit: { type: 'integer', minimum: 1, maximum: 50 },
      // A defaulted field is one the model may leave out.
      mode: { default: 'fast', type: 'string', enum: ['fast', 'slow'] },
    },
    required: ['name'],
    additionalProperties: false,
  });
});

test('which tools run in the sandbox is derived from runsIn', () => {
  const where = Object.fromEntries(BUILTIN_TOOLS.tools.map((tool) => [tool.name, tool.runsIn]));
  assert.deepEqual(where, {
    bash: 'sandbox',
    read: 'sandbox',
    write: 'sandbox',
    edit: 'sandbox',
    upload: 'agent',
    search_channel: 'agent',
    memory_search: 'agent',
    subagent: 'child',
  });
  for (const [name, runsIn] of Object.entries(where)) assert.equal(BUILTIN_TOOLS.runsInSandbox(name), runsIn === 'sandbox', name);
  assert.equal(BUILTIN_TOOLS.runsInSandbox('no_such_tool'), false);
});

test('a bad input is one error result naming each field, and the tool does not run', async () => {
  const call = (input: Record<string, unknown>) => ({ toolUseId: 'tu-1', name: 'echo', input });
  assert.deepEqual(await runTool(echo, call({ times: 9 }), { ...agentContext, toolUseId: 'tu-1' }), {
    status: 'error',
    text: 'invalid input for echo: words: Invalid input: expected string, received undefined; times: Too big: expected number to be <=3',
  });
  assert.deepEqual(await runTool(echo, call({ words: 'hi', fail: 'maybe' }), { ...agentContext, toolUseId: 'tu-1' }), {
    status: 'error',
    text: 'invalid input for echo: fail: Invalid option: expected one of "tool"|"crash"',
  });
  // A built-in sandbox tool says the same way what was wrong, before anything reaches the sandbox.
  const bash = await runSandboxTool(
    BUILTIN_TOOLS,
    { toolUseId: 'tu-2', name: 'bash', input: { command: 'true', timeout_seconds: 3600 } },
    sandboxContext,
  );
  assert.deepEqual(bash, { status: 'error', text: 'invalid input for bash: timeout_seconds: Too big: expected number to be <=780' });
  const read = await runSandboxTool(BUILTIN_TOOLS, { toolUseId: 'tu-3', name: 'read', input: { path: 7 } }, sandboxContext);
  assert.deepEqual(read, { status: 'error', text: 'invalid input for read: path: Invalid input: expected string, received number' });
});

test("a valid input reaches run parsed (unknown fields dropped); ToolError is the model's to read, a crash is a failed call", async () => {
  const tools = toolRegistry([echo]);
  const call = (input: Record<string, unknown>) => ({ toolUseId: 'tu-1', name: 'echo', input });
  assert.deepEqual(await runAgentTool(tools, call({ words: 'hi', times: 2, colour: 'red' }), agentContext), {
    status: 'success',
    text: '{"words":"hi","times":2}',
  });
  assert.deepEqual(await runAgentTool(tools, call({ words: 'hi', fail: 'tool' }), agentContext), { status: 'error', text: 'echo refused' });
  assert.deepEqual(await runAgentTool(tools, call({ words: 'hi', fail: 'crash' }), agentContext), {
    status: 'error',
    text: 'echo failed: the platform is down',
  });
  // Each side runs only its own tools.
  assert.deepEqual(await runAgentTool(tools, { toolUseId: 'x', name: 'nope', input: {} }, agentContext), {
    status: 'error',
    text: 'unknown tool nope',
  });
  assert.deepEqual(await runSandboxTool(tools, call({ words: 'hi' }), sandboxContext), {
    status: 'error',
    text: 'unknown sandbox tool echo',
  });
});

test('a tool registered at run time is offered after the built-in ones, before the cache point, and allowed-tools can name it', () => {
  const run = BUILTIN_TOOLS.with([echo]);
  const names = run.toolConfig(true).tools!.map((tool) => tool.toolSpec?.name ?? 'cachePoint');
  assert.deepEqual(names, ['bash', 'read', 'write', 'edit', 'upload', 'search_channel', 'memory_search', 'subagent', 'echo', 'cachePoint']);
  assert.deepEqual(run.toolConfig(false).tools!.at(-1), {
    toolSpec: {
      name: 'echo',
      description: 'Say the words back.',
      inputSchema: {
        json: {
          type: 'object',
          properties: {
            words: { type: 'string', description: 'What to say' },
            times: { type: 'integer', minimum: 1, maximum: 3, description: 'How often' },
            fail: { type: 'string', enum: ['tool', 'crash'] },
          },
          required: ['words'],
          additionalProperties: false,
        },
      },
    },
  });
  assert.equal(run.get('echo'), echo);
  assert.equal(run.runsInSandbox('echo'), false);
  // The built-in registry itself is unchanged.
  assert.equal(BUILTIN_TOOLS.get('echo'), undefined);
  const policy = toolPolicyFor(
    [{ name: 'speaker', allowedTools: ['Echo', 'Read'] }],
    run.tools.map((tool) => tool.name),
  );
  assert.deepEqual(policy?.tools, ['echo', 'read']);
  assert.equal(toolCallRefusal(policy, 'echo', { words: 'hi' }), undefined);
  assert.match(toolCallRefusal(policy, 'bash', { command: 'ls' }) ?? '', /allows only echo, read/);
});

test('a registry refuses a second tool of the same name and a name Bedrock would refuse', () => {
  assert.throws(() => BUILTIN_TOOLS.with([{ ...echo, name: 'bash' }]), /two tools are named bash/);
  assert.throws(() => toolRegistry([{ ...echo, name: 'say hello' }]), /tool name "say hello" is not 1-64 letters, digits, _ or -/);
  assert.throws(() => toolRegistry([{ ...echo, description: ' ' }]), /tool echo has no description/);
});
