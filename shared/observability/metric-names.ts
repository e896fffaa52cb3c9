// The metrics the functions publish (CloudWatch embedded metric format, namespace = the stack's
// name) and the dimensions each carries. The dashboard and the alarms read these same names.
// Dimensions stay low-cardinality: channel, user and thread go in the log record, never here.

export const METRIC_DIMENSIONS = ['adapter', 'model', 'trigger', 'tool', 'agent', 'server'] as const;
export type MetricDimension = (typeof METRIC_DIMENSIONS)[number];

export interface MetricSpec {
  unit: 'Count' | 'Milliseconds' | 'Seconds' | 'None';
  /** The dimensions it is published with; every metric is also published without any, as the deployment's total. */
  dimensions: readonly MetricDimension[];
}

export const METRICS = {
  RunsStarted: { unit: 'Count', dimensions: ['adapter', 'trigger'] },
  RunsFinished: { unit: 'Count', dimensions: ['adapter', 'trigger'] },
  RunsFailed: { unit: 'Count', dimensions: ['adapter', 'trigger'] },
  RunsStopped: { unit: 'Count', dimensions: ['adapter', 'trigger'] },
  RunDuration: { unit: 'Milliseconds', dimensions: ['adapter', 'trigger'] },
  /** Prompt received by the webhook (or fired) until its run started. */
  QueueWait: { unit: 'Milliseconds', dimensions: ['adapter'] },
  BusyReplies: { unit: 'Count', dimensions: ['adapter'] },
  BudgetRefusals: { unit: 'Count', dimensions: ['adapter', 'trigger'] },
  ModelSteps: { unit: 'Count', dimensions: ['adapter', 'model'] },
  ModelLatency: { unit: 'Milliseconds', dimensions: ['model'] },
  TimeToFirstToken: { unit: 'Milliseconds', dimensions: ['model'] },
  /** Bedrock ThrottlingException answers, retried ones included. */
  ModelThrottles: { unit: 'Count', dimensions: ['model'] },
  InputTokens: { unit: 'Count', dimensions: ['adapter', 'model'] },
  OutputTokens: { unit: 'Count', dimensions: ['adapter', 'model'] },
  CacheReadTokens: { unit: 'Count', dimensions: ['adapter', 'model'] },
  CacheWriteTokens: { unit: 'Count', dimensions: ['adapter', 'model'] },
  /** Model and sandbox cost, in US dollars. */
  CostUsd: { unit: 'None', dimensions: ['adapter', 'trigger'] },
  /** A run working as an agent definition (shared/agents/): its model steps and their cost, by agent. */
  AgentModelSteps: { unit: 'Count', dimensions: ['agent'] },
  AgentCostUsd: { unit: 'None', dimensions: ['agent'] },
  ToolCalls: { unit: 'Count', dimensions: ['tool'] },
  ToolErrors: { unit: 'Count', dimensions: ['tool'] },
  /** Calls the reach step made to an MCP server (server = its name) or a web page (server = web, tool = web_fetch). */
  ReachCalls: { unit: 'Count', dimensions: ['server', 'tool'] },
  ReachErrors: { unit: 'Count', dimensions: ['server', 'tool'] },
  ReachLatency: { unit: 'Milliseconds', dimensions: ['server', 'tool'] },
  /** Decisions on tool calls that waited for a person (settings.json `approvals`), by who or what took them. */
  ApprovalsApproved: { unit: 'Count', dimensions: ['tool'] },
  ApprovalsDenied: { unit: 'Count', dimensions: ['tool'] },
  ApprovalsTimedOut: { unit: 'Count', dimensions: ['tool'] },
  /** Runs of settings.json `hooks` (tool = the hook's event), and those that failed or timed out. */
  HookRuns: { unit: 'Count', dimensions: ['tool'] },
  HookErrors: { unit: 'Count', dimensions: ['tool'] },
  /** Published by the sandbox reaper on each sweep. */
  SandboxesRunning: { unit: 'Count', dimensions: [] },
  OldestSandboxAge: { unit: 'Seconds', dimensions: [] },
  /** Fargate seconds of a sandbox, published when it stops. */
  SandboxSeconds: { unit: 'Seconds', dimensions: [] },
} as const satisfies Record<string, MetricSpec>;
export type MetricName = keyof typeof METRICS;
