// The safety net: an execution that ended FAILED, TIMED_OUT or ABORTED (outside any Catch, or the
// failure handler itself failed) still releases its thread and starts the next queued prompt.
// Everything it calls is idempotent, so a run the failure handler already closed is a no-op.
import type { EventBridgeEvent } from 'aws-lambda';
import { auditRunEnd, executionRunEnd } from '../../shared/observability/audit.ts';
import { fail } from '../../shared/run/steps/finish.ts';
import { removeStopCard } from '../../shared/run/steps/stop-card.ts';
import { countRunEnd } from '../../shared/run/steps/run-end.ts';
import { releaseLease } from '../../shared/run/actor.ts';
import { childResultOf, endChild, stopChildrenOf } from '../../shared/run/subagents/end.ts';
import { contextIdOf, type ContextEntry, loadContext } from '../../shared/context/store.ts';
import { agentEnv, readEnv } from '../../shared/env.ts';
import { agentFromEnv } from '../../shared/handler-context/agent.ts';
import { handlerLogger } from '../../shared/handler-context/logger.ts';
import { handlerMetrics, publishingMetrics } from '../../shared/handler-context/metrics.ts';
import { lazy } from '../../shared/support/lazy.ts';
import { runInputSchema, type RunInput } from '../../shared/contracts.ts';
import { toolRegistry } from '../../shared/tools/registry.ts';
import { operatorStopNotice } from '../../shared/policy/kill-switch.ts';
import { postedMessage, postOnce } from '../../shared/run/ledger.ts';
import { RUN_RECORD } from '../../shared/table.ts';
import type { AgentDeps } from '../../shared/run/steps/deps.ts';

interface ExecutionStatusChange {
  executionArn: string;
  name: string;
  status: string;
  input?: string | null;
  error?: string | null;
  cause?: string | null;
}

const logger = handlerLogger('run-ended');
const metrics = handlerMetrics();
// Ending a run calls neither the model nor a tool: the tools' code stays out of this bundle.
const agent = lazy(() => agentFromEnv(logger, readEnv(agentEnv), toolRegistry([]), metrics));

export async function handler(event: EventBridgeEvent<'Step Functions Execution Status Change', ExecutionStatusChange>) {
  return publishingMetrics(metrics, () => runEnded(event.detail));
}

async function runEnded(detail: ExecutionStatusChange) {
  const parsed = runInputSchema.safeParse(JSON.parse(detail.input ?? 'null'));
  if (!parsed.success) {
    logger.error('execution ended with an input that is not a run', { executionArn: detail.executionArn, status: detail.status });
    return { released: 'not-a-run' };
  }
  const run = parsed.data;
  const deps = await (await agent()).deps(logger.with({ runId: run.runId, threadId: run.threadId }));
  deps.logger.warn('run ended abnormally', { status: detail.status, error: detail.error });
  const entries = await loadContext(deps.store, contextIdOf(run))
    .then((context) => context.entries)
    .catch(() => undefined);
  // Before the failure handler's own record: this execution's status says best how the run ended.
  await auditRunEnd(deps, run, executionRunEnd(detail.status, detail.error, detail.cause), entries);
  if (detail.status === 'ABORTED') {
    // The subagents it started stop with it: nobody waits for their answers.
    if (entries) await stopChildrenOf(deps, run, entries, 'the run that started it was stopped');
    if (run.child) return childEnded(deps, run, entries ?? [], 'stopped');
    // Stopped on purpose: the one who stopped it has answered; free the thread for what waits.
    await removeStopCard(deps, run);
    await tellOperatorStop(deps, run, detail.cause);
    await countRunEnd(deps, run, 'stopped');
    return { released: (await releaseLease(deps.actor, run.threadId, run.runId)).outcome };
  }
  const error = { Error: detail.status === 'TIMED_OUT' ? 'States.Timeout' : (detail.error ?? 'States.Runtime'), Cause: detail.cause ?? '' };
  return { released: (await fail(deps, run, error)).outcome };
}

/** A subagent stopped outside its own steps (by its parent, or with its root): its parent hears so. */
async function childEnded(deps: AgentDeps, run: RunInput, entries: ContextEntry[], outcome: 'stopped') {
  await countRunEnd(deps, run, outcome);
  await endChild(deps, run, childResultOf(run, entries, outcome, run.agent));
  return { released: 'not-holder' as const };
}

/** A person's stop is answered where they asked; an operator's or an admin's is told in the thread here, once. */
async function tellOperatorStop(deps: AgentDeps, run: RunInput, cause: string | null | undefined): Promise<void> {
  const notice = operatorStopNotice(cause);
  if (!notice) return;
  await postOnce(deps.ledger, run.runId, RUN_RECORD.operatorStopNotice, () => deps.thread(run).post(notice).then(postedMessage));
}
