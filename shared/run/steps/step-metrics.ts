// What the model and tool steps publish, once per completed step (a retried step that finds its
// work done returns before getting here).
import type { MetricsSink } from '../../observability/metrics.ts';
import type { StepUsage } from '../../model/pricing.ts';
import { adapterOf, runDimensions } from '../../observability/run-metrics.ts';
import type { RunInput } from '../../contracts.ts';

export interface ModelStepMeasures {
  modelId: string;
  usage: StepUsage & { costUsd?: number };
  /** Bedrock's ThrottlingException answers before this answer. */
  throttles: number;
  latencyMs: number;
  /** From the call until the first streamed text (absent: the answer had no text). */
  firstTokenMs?: number;
  /** The agent definition the run works as. */
  agent?: string;
}

export function countModelStep(metrics: MetricsSink | undefined, run: RunInput, step: ModelStepMeasures): void {
  if (!metrics) return;
  const model = { model: step.modelId };
  const byModel = { adapter: adapterOf(run.threadId), model: step.modelId };
  metrics.put('ModelSteps', 1, byModel);
  metrics.put('ModelLatency', step.latencyMs, model);
  if (step.firstTokenMs !== undefined) metrics.put('TimeToFirstToken', step.firstTokenMs, model);
  if (step.throttles > 0) metrics.put('ModelThrottles', step.throttles, model);
  metrics.put('InputTokens', step.usage.inputTokens ?? 0, byModel);
  metrics.put('OutputTokens', step.usage.outputTokens ?? 0, byModel);
  metrics.put('CacheReadTokens', step.usage.cacheReadInputTokens ?? 0, byModel);
  metrics.put('CacheWriteTokens', step.usage.cacheWriteInputTokens ?? 0, byModel);
  if (step.usage.costUsd !== undefined) metrics.put('CostUsd', step.usage.costUsd, runDimensions(run.prompt));
  if (step.agent) {
    metrics.put('AgentModelSteps', 1, { agent: step.agent });
    if (step.usage.costUsd !== undefined) metrics.put('AgentCostUsd', step.usage.costUsd, { agent: step.agent });
  }
}

/** A reach call, by server and tool (web pages as server `web`: a host would be a dimension without bound). */
export function countReachCall(
  metrics: MetricsSink | undefined,
  server: string,
  tool: string,
  status: 'success' | 'error',
  ms: number,
): void {
  if (!metrics) return;
  metrics.put('ReachCalls', 1, { server, tool });
  metrics.put('ReachLatency', ms, { server, tool });
  if (status === 'error') metrics.put('ReachErrors', 1, { server, tool });
}

export function countToolCall(metrics: MetricsSink | undefined, tool: string, status: 'success' | 'error'): void {
  if (!metrics) return;
  metrics.put('ToolCalls', 1, { tool });
  if (status === 'error') metrics.put('ToolErrors', 1, { tool });
}
