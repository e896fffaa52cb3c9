// A decision that won, counted and logged where it was taken (once, whoever took it: a click, the
// ops CLI, the run's timeout, a message that could not be posted). Apart from the gate, so the
// webhooks' bundles carry only this of the run's side.
import type { JsonLogger } from '../observability/log.ts';
import type { MetricsSink } from '../observability/metrics.ts';
import type { ApprovalRecord } from './record.ts';

const METRIC_OF = { approved: 'ApprovalsApproved', denied: 'ApprovalsDenied', timed_out: 'ApprovalsTimedOut' } as const;

export function noteDecision(deps: { logger: JsonLogger; metrics?: MetricsSink }, record: ApprovalRecord): void {
  if (record.state === 'waiting') return;
  deps.metrics?.put(METRIC_OF[record.state], 1, { tool: record.tool });
  deps.logger.info('approval decided', {
    approvalId: record.id,
    runId: record.runId,
    tool: record.tool,
    outcome: record.state,
    by: record.decidedBy,
    at: record.decidedAt,
  });
}
