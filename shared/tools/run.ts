// Running one tool call: the input is checked against the tool's schema (one error shape for every
// tool), and a mistake the tool reports comes back to the model as an error result.
import { SandboxRequestError } from '../sandbox/client.ts';
import { formatIssues } from '../support/validation.ts';
import type { ToolRegistry } from './registry.ts';
import { ToolError } from './text.ts';
import type {
  AgentToolContext,
  ReachToolContext,
  RunsIn,
  SandboxToolContext,
  ToolCall,
  ToolContexts,
  ToolDefinition,
  ToolOutcome,
} from './tool.ts';

/** The tool's outcome; an invalid input or a ToolError is an error result, anything else is thrown. */
export async function runTool<R extends RunsIn>(tool: ToolDefinition<R>, call: ToolCall, context: ToolContexts[R]): Promise<ToolOutcome> {
  const input = tool.input.safeParse(call.input);
  if (!input.success) return { status: 'error', text: `invalid input for ${tool.name}: ${formatIssues(input.error)}` };
  try {
    return await tool.run(input.data, context);
  } catch (error) {
    if (error instanceof ToolError) return { status: 'error', text: error.message };
    throw error;
  }
}

/** A tool that failed in a way the model should hear about rather than crash the run. */
const failed = (call: ToolCall, error: unknown): ToolOutcome => ({
  status: 'error',
  text: `${call.name} failed: ${(error as Error).message}`,
});

/** Runs `call` when it names a tool that runs in `runsIn`; a failure the model should hear about is an error result. */
async function runToolIn<R extends RunsIn>(
  runsIn: R,
  tools: ToolRegistry,
  call: ToolCall,
  context: Omit<ToolContexts[R], 'toolUseId'>,
  rethrow: () => boolean = () => false,
): Promise<ToolOutcome> {
  const tool = tools.get(call.name);
  if (tool?.runsIn !== runsIn) return { status: 'error', text: `unknown tool ${call.name}` };
  return runTool(tool as ToolDefinition<R>, call, { ...context, toolUseId: call.toolUseId } as ToolContexts[R]).catch((error: unknown) => {
    if (rethrow()) throw error;
    return failed(call, error);
  });
}

/** Runs an agent tool in the agent step. A platform error (rate limit, missing scope) is the model's to know about, not a crashed run. */
export const runAgentTool = (tools: ToolRegistry, call: ToolCall, context: Omit<AgentToolContext, 'toolUseId'>): Promise<ToolOutcome> =>
  runToolIn('agent', tools, call, context);

/** Runs a reach tool in the reach step. A server that is down or slow is the model's to know about; a stop is thrown. */
export const runReachTool = (tools: ToolRegistry, call: ToolCall, context: Omit<ReachToolContext, 'toolUseId'>): Promise<ToolOutcome> =>
  runToolIn('reach', tools, call, context, () => context.signal.aborted);

/** Runs a sandbox tool in the sandbox step. The sandbox refusing a request is an error result; a lost sandbox is thrown. */
export async function runSandboxTool(
  tools: ToolRegistry,
  call: ToolCall,
  context: Omit<SandboxToolContext, 'toolUseId'>,
): Promise<ToolOutcome> {
  const tool = tools.get(call.name);
  if (tool?.runsIn !== 'sandbox') return { status: 'error', text: `unknown sandbox tool ${call.name}` };
  try {
    return await runTool(tool, call, { ...context, toolUseId: call.toolUseId });
  } catch (error) {
    if (error instanceof SandboxRequestError) return { status: 'error', text: error.message };
    throw error;
  }
}
