// The tools a run offers the model, in a fixed order. Bedrock's tool specs are made from each tool's
// zod schema; the list and its bytes stay the same for the registry's life, because the tools are
// part of the prompt cache's prefix. Tools known only at run time (an MCP server's) come in with `with`.
import type { Tool, ToolConfiguration } from '@aws-sdk/client-bedrock-runtime';
import * as z from 'zod';
import type { AnyTool, RunsIn } from './tool.ts';

export interface ToolRegistry {
  /** In the order the model is offered them. */
  readonly tools: readonly AnyTool[];
  get(name: string): AnyTool | undefined;
  /** Whether the call goes to the sandbox step (inside the VPC) rather than running in the agent step. */
  runsInSandbox(name: string): boolean;
  /** Where the named tool runs (undefined: the run has no such tool). */
  runsIn(name: string): RunsIn | undefined;
  /** Bedrock's toolConfig, with a cache point after the tools when the run caches its prompt. */
  toolConfig(cachePoint: boolean): ToolConfiguration;
  /** These tools followed by `more`, such as the tools of a run's MCP servers. */
  with(more: readonly AnyTool[]): ToolRegistry;
  /** Only the tools named (an agent definition's), in this registry's order. */
  only(names: readonly string[]): ToolRegistry;
  /** All but the tools named. */
  without(names: readonly string[]): ToolRegistry;
}

/** Bedrock's rule for a tool's name. */
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * The JSON Schema Bedrock is given for a tool's input: what the model may send (zod's input side),
 * without what Bedrock does not read (`$schema`) or what only says "any safe integer" (the bounds
 * zod gives every integer).
 */
export function inputJsonSchema(input: z.ZodObject): Record<string, unknown> {
  const schema: Record<string, unknown> = z.toJSONSchema(input, {
    io: 'input',
    override: ({ jsonSchema }) => {
      if (jsonSchema.minimum === Number.MIN_SAFE_INTEGER) delete jsonSchema.minimum;
      if (jsonSchema.maximum === Number.MAX_SAFE_INTEGER) delete jsonSchema.maximum;
    },
  });
  delete schema.$schema;
  // Unknown fields are dropped when the input is parsed; the model is told to send none.
  schema.additionalProperties ??= false;
  return schema;
}

export function toolSpec(tool: AnyTool): Tool {
  const json = tool.inputSchema ?? inputJsonSchema(tool.input);
  return { toolSpec: { name: tool.name, description: tool.description, inputSchema: { json: json as never } } };
}

export function toolRegistry(tools: readonly AnyTool[]): ToolRegistry {
  const byName = new Map<string, AnyTool>();
  for (const tool of tools) {
    if (!TOOL_NAME.test(tool.name)) throw new Error(`tool name ${JSON.stringify(tool.name)} is not 1-64 letters, digits, _ or -`);
    if (byName.has(tool.name)) throw new Error(`two tools are named ${tool.name}`);
    if (!tool.description.trim()) throw new Error(`tool ${tool.name} has no description`);
    byName.set(tool.name, tool);
  }
  let specs: Tool[] | undefined;
  const config = (cachePoint: boolean): ToolConfiguration => {
    specs ??= tools.map(toolSpec);
    return { tools: cachePoint ? [...specs, { cachePoint: { type: 'default' } }] : specs };
  };
  return {
    tools,
    get: (name) => byName.get(name),
    runsInSandbox: (name) => byName.get(name)?.runsIn === 'sandbox',
    runsIn: (name) => byName.get(name)?.runsIn,
    toolConfig: config,
    with: (more) => toolRegistry([...tools, ...more]),
    only: (names) => toolRegistry(tools.filter((tool) => names.includes(tool.name))),
    without: (names) => toolRegistry(tools.filter((tool) => !names.includes(tool.name))),
  };
}
