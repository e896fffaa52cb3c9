// The parent's side of subagents, in its tool step and its AwaitSubagents state. A subagent call
// starts a child run (its own execution), together with the answer's other subagent calls that no
// approval rule or hook stops first, so they work in parallel; the run then waits, holding no Lambda,
// until the last child resumes it or its time runs out. Back in the tool step, each call gets its
// child's answer as its result; a child still working then is stopped.
import type { LoopState, RunInput } from '../../contracts.ts';
import { type LoadedContext, saveLoadedContext, contextIdOf } from '../../context/store.ts';
import { appendToolResult, pendingToolCalls, toolTime } from '../../context/tool-calls.ts';
import { loadAgent } from '../../agents/load.ts';
import { approvalRuleFor } from '../../approvals/rules.ts';
import { redactSecrets, secretPatternsWith } from '../../policy/secret-filter.ts';
import { formatIssues } from '../../support/validation.ts';
import { runTool } from '../../tools/run.ts';
import { subagent, SUBAGENT_TOOL } from '../../tools/builtin/subagent.ts';
import type { ChildResult, ToolCall } from '../../tools/tool.ts';
import { readRecord } from '../ledger.ts';
import { RUN_RECORD } from '../../table.ts';
import type { AgentDeps } from '../steps/deps.ts';
import { stepMeta } from '../steps/deps.ts';
import { routeAfterTool } from '../steps/run-control.ts';
import { runDeadline, type RunSnapshot } from '../steps/snapshot.ts';
import { countToolCall } from '../steps/step-metrics.ts';
import { createBatch, readBatch, setBatchToken, type SubagentBatch } from './batch.ts';
import { childRunInput } from './child-run.ts';
import { statusLine } from './progress.ts';

type Request = { call: ToolCall; task: string; context?: string; agent?: string };

/** The call as a child's request, or why it cannot start one (the model reads it as the call's result). */
async function requestOf(deps: AgentDeps, run: RunInput, call: ToolCall): Promise<Request | { refused: string }> {
  const input = subagent.input.safeParse(call.input);
  if (!input.success) return { refused: `invalid input for ${SUBAGENT_TOOL}: ${formatIssues(input.error)}` };
  const { agent, task, context } = input.data;
  if (agent) {
    const loaded = await loadAgent(deps.store, run.threadId, agent);
    if (!loaded.ok) return { refused: loaded.error };
  }
  return { call, task, ...(context ? { context } : {}), ...(agent ? { agent } : {}) };
}

/** Calls of the same answer that may start with this one: subagent calls no approval rule holds, when no hook must see each first. */
function companions(context: LoadedContext, call: ToolCall, snapshot: RunSnapshot): ToolCall[] {
  if (snapshot.hooks) return [];
  return pendingToolCalls(context.entries).filter(
    (other) => other.toolUseId !== call.toolUseId && other.name === SUBAGENT_TOOL && !approvalRuleFor(snapshot.approvals, other),
  );
}

export async function delegate(
  deps: AgentDeps,
  run: RunInput,
  loop: LoopState,
  context: LoadedContext,
  call: ToolCall,
  snapshot: RunSnapshot,
): Promise<LoopState> {
  const batchId = call.toolUseId;
  // The tool step gave a waited batch its answers already (collectIfWaited); one here is an earlier attempt's.
  const known = await readBatch(deps.ledger, run.runId, batchId);
  // Not offered at the maximum depth (or with maxSubagentDepth 0), so never started, whatever the model calls.
  const first = snapshot.delegates
    ? await requestOf(deps, run, call)
    : { refused: `${SUBAGENT_TOOL} is not available in this run: subagents may nest at most maxSubagentDepth deep (settings.json)` };
  if ('refused' in first) {
    appendToolResult(context.entries, call, { status: 'error', text: first.refused }, stepMeta(deps.now, run, loop.step));
    await saveLoadedContext(deps.store, contextIdOf(run), context);
    countToolCall(deps.metrics, call.name, 'error');
    return routeAfterTool(context.entries, loop.step);
  }
  // A retried step starts the children it chose the first time; a call left out is answered on its own later.
  const others = companions(context, call, snapshot).filter((c) => !known || known.children.some((k) => k.toolUseId === c.toolUseId));
  const requests = [
    first,
    ...(await Promise.all(others.map((c) => requestOf(deps, run, c)))).filter((r): r is Request => !('refused' in r)),
  ];
  const deadline = runDeadline(snapshot);
  const children = requests.map((request) =>
    childRunInput(
      run,
      { toolUseId: request.call.toolUseId, task: request.task, context: request.context, agent: request.agent },
      { batch: batchId, deadline, maxModelSteps: Math.max(1, snapshot.maxModelSteps - loop.step) },
    ),
  );
  const listed = children.map((child) => ({
    runId: child.runId,
    toolUseId: child.child!.toolUseId,
    ...(child.agent ? { agent: child.agent } : {}),
  }));
  await createBatch(deps.ledger, run.runId, batchId, listed, deps.now());
  // Each execution is named by its child's run id: a retried start starts nothing twice.
  await Promise.all(children.map((child) => deps.actor.startRun(child)));
  deps.logger.info('subagents started', { runId: run.runId, batch: batchId, children: listed.map((c) => c.runId) });
  await deps
    .thread(run)
    .startTyping(statusLine({ children: listed }))
    .catch((error: unknown) => deps.logger.warn('could not show the subagents’ status', { error }));
  const timeoutSeconds = Math.max(1, Math.ceil((deadline - deps.now()) / 1000));
  return { step: loop.step, next: 'subagents', subagents: { batch: batchId, timeoutSeconds } };
}

/**
 * Back from AwaitSubagents (the token is stored only by it): each call of the batch gets its child's
 * answer before anything else, so a steer or a stop that came meanwhile loses none of the children's work.
 */
export async function collectIfWaited(
  deps: AgentDeps,
  run: RunInput,
  loop: LoopState,
  context: LoadedContext,
  call: ToolCall,
  snapshot: RunSnapshot,
): Promise<LoopState | undefined> {
  if (call.name !== SUBAGENT_TOOL) return undefined;
  const batch = await readBatch(deps.ledger, run.runId, call.toolUseId);
  return batch?.token ? collect(deps, run, loop, context, batch, snapshot) : undefined;
}

/** Each call of the batch gets its child's answer; a child with none yet (the wait timed out) is stopped. */
async function collect(
  deps: AgentDeps,
  run: RunInput,
  loop: LoopState,
  context: LoadedContext,
  batch: SubagentBatch,
  snapshot: RunSnapshot,
): Promise<LoopState> {
  const pending = new Map(pendingToolCalls(context.entries).map((c) => [c.toolUseId, c]));
  const secrets = secretPatternsWith(snapshot.secretPatterns);
  const now = deps.now();
  for (const child of batch.children) {
    const call = pending.get(child.toolUseId);
    if (!call) continue;
    let result = await readRecord<ChildResult>(deps.ledger, child.runId, RUN_RECORD.childResult);
    if (!result) {
      await deps.children?.stop(child.runId, 'its parent run stopped waiting: its time ran out');
      result = { outcome: 'timed_out', steps: 0, tokens: { input: 0, output: 0 }, ...(child.agent ? { agent: child.agent } : {}) };
    }
    const outcome = await runTool(subagent, call, { toolUseId: call.toolUseId, result });
    // What a child read and wrote reaches this run's model without secrets, as any agent tool's result.
    outcome.text = redactSecrets(outcome.text, secrets);
    const ran = {
      ...toolTime(batch.startedAt ?? now, now),
      subagent: {
        runId: child.runId,
        ...(result.agent ? { agent: result.agent } : {}),
        outcome: result.outcome,
        steps: result.steps,
        ...(result.costUsd !== undefined ? { costUsd: result.costUsd } : {}),
      },
    };
    appendToolResult(context.entries, call, outcome, stepMeta(deps.now, run, loop.step), ran);
    countToolCall(deps.metrics, call.name, outcome.status);
  }
  await saveLoadedContext(deps.store, contextIdOf(run), context);
  deps.logger.info('subagents answered', { runId: run.runId, children: batch.children.length, pending: batch.pending });
  return routeAfterTool(context.entries, loop.step);
}

/**
 * AwaitSubagents' invocation: stores the task token the run now waits with. When every child has
 * ended already (they were quick, or this is a retry), the run goes on at once.
 */
export async function awaitSubagents(
  deps: AgentDeps,
  run: RunInput,
  loop: LoopState | undefined,
  taskToken: string | undefined,
): Promise<void> {
  const batch = loop?.subagents?.batch;
  if (!batch || !taskToken) throw new Error('AwaitSubagents needs the batch in $.loop.subagents and the task token');
  const state = await setBatchToken(deps.ledger, run.runId, batch, taskToken);
  if (state.pending <= 0) await deps.children?.resume(taskToken);
}
