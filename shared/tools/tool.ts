// What a tool is: its name, where it runs, what the model is told about it, the zod schema its input
// must match, and the function that does the work. One file per tool (builtin/), listed once in
// builtin/index.ts; tools known only at run time (an MCP server's) are made the same way.
import type { S3Client } from '@aws-sdk/client-s3';
import type { Thread } from 'chat';
import type * as z from 'zod';
import type { SandboxAddress } from '../sandbox/client.ts';
import type { WorkspaceLayout } from '../sandbox/workspace.ts';

/** One toolUse of the model's answer. */
export interface ToolCall {
  toolUseId: string;
  name: string;
  input: Record<string, unknown>;
}

/** What the model is told back: one toolResult. */
export interface ToolOutcome {
  text: string;
  status: 'success' | 'error';
  /** Images shown with the text, stored in the data bucket first (the context keeps references, as for attachments). */
  images?: ToolImage[];
}

export interface ToolImage {
  format: 'png' | 'jpeg' | 'gif' | 'webp';
  /** s3://<data bucket>/<key> */
  uri: string;
}

/** A page web_fetch read, as text (shared/reach/web-fetch.ts). */
export type FetchPage = (url: string, maxBytes: number | undefined, signal: AbortSignal) => Promise<ToolOutcome>;

/** One tool call to a run's MCP server (shared/reach/mcp-client.ts). */
export type CallMcpTool = (server: string, tool: string, args: Record<string, unknown>, signal: AbortSignal) => Promise<ToolOutcome>;

/** An agent tool runs in the agent-step Lambda: it acts on the chat thread and reads the thread's files in S3. */
export interface AgentToolContext {
  toolUseId: string;
  thread: Thread;
  /** The run's thread id: what the tool may touch of the data tree is this thread's channel, whatever its input says. */
  threadId: string;
  s3: S3Client;
  bucket: string;
  layout: WorkspaceLayout;
}

/** A sandbox tool runs in the sandbox-step Lambda (inside the VPC) against the thread's running sandbox. */
export interface SandboxToolContext {
  toolUseId: string;
  address: SandboxAddress;
  layout: WorkspaceLayout;
  /** Aborted when someone stops the run. */
  signal: AbortSignal;
  /** A call to one of the run's stdio MCP servers, which run in this sandbox. */
  callMcpTool: CallMcpTool;
}

/**
 * A reach tool runs in the reach-step Lambda, the one function that talks to the Internet and to MCP
 * servers; what it reaches with comes in here, made by that function for the run (its allow list, its servers).
 */
export interface ReachToolContext {
  toolUseId: string;
  /** Aborted when someone stops the run. */
  signal: AbortSignal;
  fetchPage: FetchPage;
  callMcpTool: CallMcpTool;
}

/**
 * A child tool starts child runs of the agent (subagents, shared/run/subagents/): the tool step
 * starts them and waits, holding no Lambda; the tool then turns how a child ended into its result.
 */
export interface ChildToolContext {
  toolUseId: string;
  result: ChildResult;
}

/** How a subagent ended, as its finish (or the end of its execution) recorded it. */
export interface ChildResult {
  outcome: 'finished' | 'stopped' | 'failed' | 'limit' | 'budget' | 'timed_out';
  /** Its last answer's text (bounded). */
  answer?: string;
  /** Why it ended early, in our own words. */
  reason?: string;
  agent?: string;
  steps: number;
  tokens: { input: number; output: number };
  costUsd?: number;
}

export interface ToolContexts {
  agent: AgentToolContext;
  sandbox: SandboxToolContext;
  reach: ReachToolContext;
  child: ChildToolContext;
}

export type RunsIn = keyof ToolContexts;

export interface ToolDefinition<R extends RunsIn = RunsIn, I extends z.ZodObject = z.ZodObject> {
  /** What the model calls it: letters, digits, `_` and `-` (Bedrock's rule), unique in a run. */
  name: string;
  runsIn: R;
  /** Told to the model as is. */
  description: string;
  /**
   * The input, as the model sees it (its JSON Schema) and as it is checked before `run`. Fields the
   * model adds beyond it are dropped. `.meta({ maximum })` advertises a bound `run` caps rather than refuses.
   */
  input: I;
  /**
   * The input's JSON Schema as the model is given it, when it comes as JSON Schema rather than zod (an
   * MCP server's tool: `input` then only checks for an object and the server checks the rest).
   */
  inputSchema?: Record<string, unknown>;
  /** Throw ToolError for a mistake the model should read about; anything else is the step's to handle. */
  run(input: z.output<I>, context: ToolContexts[R]): Promise<ToolOutcome>;
}

/** Any tool, by where it runs: narrowing on `runsIn` types its context. */
export type AnyTool = { [R in RunsIn]: ToolDefinition<R> }[RunsIn];

/** A tool, with its input's type carried from the schema to `run`. */
export function defineTool<R extends RunsIn, I extends z.ZodObject>(tool: ToolDefinition<R, I>): ToolDefinition<R, I> {
  return tool;
}
