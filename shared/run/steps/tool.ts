// The tool step, in agent-step: agent tools (upload, search_channel) run here; for a sandbox tool (and
// a stdio MCP server's, and the listing of those servers at a run's start) the thread's sandbox is
// made ready (started, or replaced if it died) and the call goes on to the sandbox step inside the VPC; a reach tool (web_fetch, an MCP tool) goes on to the reach step;
// a subagent call starts child runs and waits for them (shared/run/subagents/delegate.ts). Stop
// and steer are checked before every call, and a call a rule of settings.json `approvals` holds waits
// for a person's decision first (shared/approvals/gate.ts).
import { ensureSandbox, SandboxLimitReached } from '../../sandbox/lifecycle.ts';
import { workspaceLayout } from '../../sandbox/workspace.ts';
import type { LoopState, RunInput } from '../../contracts.ts';
import { type LoadedContext, saveLoadedContext, contextIdOf } from '../../context/store.ts';
import { withRunContext } from './run-context.ts';
import { appendToolResult, pendingToolCall, toolTime } from '../../context/tool-calls.ts';
import { runAgentTool } from '../../tools/run.ts';
import type { RunsIn, ToolOutcome } from '../../tools/tool.ts';
import { loadMcpListing, runToolsOf, saveMcpListing } from './run-tools.ts';
import { withoutSandboxServers } from '../../reach/mcp-tools.ts';
import { type AgentDeps, stepMeta } from './deps.ts';
import { checkFlagsBetweenTools, routeAfterTool } from './run-control.ts';
import { loadSnapshot, runDeadline } from './snapshot.ts';
import { toolStatus } from './progress.ts';
import { countToolCall } from './step-metrics.ts';
import { collectIfWaited, delegate } from '../subagents/delegate.ts';
import { showChildProgress } from '../subagents/progress.ts';
import { gateCall, noteInContext } from '../../approvals/gate.ts';
import { redactSecrets, secretPatternsWith } from '../../policy/secret-filter.ts';
import { DEFAULT_APPROVAL_TIMEOUT_MINUTES, type ApprovalRule } from '../../approvals/rules.ts';
import type { ToolCall } from '../../tools/tool.ts';
import type { RunSnapshot } from './snapshot.ts';
import type { ContextEntry } from '../../context/store.ts';
import {
  answerWithCall,
  blockedCallText,
  heldByHook,
  holdForApproval,
  hooksRanOn,
  noteHooks,
  rewriteCall,
  runLambdaHooks,
} from '../../hooks/step-hooks.ts';

/** A sandbox tool's call when the sandbox cannot take it: ready to go on, or the error result. */
async function readySandbox(deps: AgentDeps, run: RunInput): Promise<ToolOutcome | 'ready'> {
  if (!deps.sandbox) return { status: 'error', text: 'This deployment has no sandbox, so files and commands are unavailable.' };
  try {
    // The cap is read only when a sandbox would start: a running one costs no read of the snapshot.
    await ensureSandbox(deps.sandbox, run.threadId, async () => (await loadSnapshot(deps, run)).maxRunningSandboxes);
    return 'ready';
  } catch (error) {
    if (error instanceof SandboxLimitReached) {
      deps.logger.warn('sandbox limit reached', { runId: run.runId, max: error.max });
      return { status: 'error', text: `The sandbox could not be started: ${error.message}.` };
    }
    deps.logger.error('sandbox unavailable', { runId: run.runId, error });
    return { status: 'error', text: `The sandbox could not be started: ${(error as Error).message}` };
  }
}

/**
 * Where the named tool runs. A built-in tool is known without a read; only a name that is not one
 * (web_fetch, an MCP server's tool) reads the run's snapshot and tool listing.
 */
async function whereRuns(deps: AgentDeps, run: RunInput, name: string): Promise<RunsIn | undefined> {
  const builtin = deps.tools.runsIn(name);
  if (builtin) return builtin;
  const tools = await runToolsOf(deps, run, await loadSnapshot(deps, run));
  return tools === 'connect' ? undefined : tools.tools.runsIn(name);
}

export async function toolStep(deps: AgentDeps, run: RunInput, loop: LoopState): Promise<LoopState> {
  return withRunContext(deps, contextIdOf(run), loop.contextVersion, (context) => runTool(deps, run, loop, context));
}

/**
 * Sent here by Connect when the run has stdio MCP servers to list: the sandbox is readied and the
 * sandbox step lists them; a sandbox that cannot start leaves them out, named once in the thread.
 */
async function connectSandbox(deps: AgentDeps, run: RunInput, loop: LoopState): Promise<LoopState> {
  const listing = await loadMcpListing(deps, run);
  if (!listing?.awaitingSandbox?.length) return { step: loop.step, next: 'model' };
  const sandbox = await readySandbox(deps, run);
  if (sandbox === 'ready') return { step: loop.step, next: 'sandbox' };
  await saveMcpListing(deps, run, withoutSandboxServers(listing, sandbox.text));
  return { step: loop.step, next: 'model' };
}

async function runTool(deps: AgentDeps, run: RunInput, loop: LoopState, context: LoadedContext): Promise<LoopState> {
  const call = pendingToolCall(context.entries);
  if (!call) return connectSandbox(deps, run, loop);
  // The snapshot is in the container already (runStep read it for the run's secret patterns).
  const snapshot = await loadSnapshot(deps, run);
  // Back from waiting for subagents: their answers go in first, then a stop or steer that came meanwhile.
  const answered = await collectIfWaited(deps, run, loop, context, call, snapshot);
  const flagged = await checkFlagsBetweenTools(deps, run, loop, context);
  if (flagged) return flagged;
  if (answered) return answered;
  const blocked = await preToolUseHooks(deps, run, snapshot, context.entries, call);
  // Their notes, a rewrite or a hold are kept before the call waits or goes on to another step.
  if (blocked === '') await saveLoadedContext(deps.store, contextIdOf(run), context);
  if (blocked) {
    appendToolResult(context.entries, call, { status: 'error', text: blocked }, stepMeta(deps.now, run, loop.step));
    await saveLoadedContext(deps.store, contextIdOf(run), context);
    countToolCall(deps.metrics, call.name, 'error');
    return routeAfterTool(context.entries, loop.step);
  }
  const gate = await gateCall(
    { ...deps, approvals: deps.actor },
    run,
    loop,
    call,
    rulesFor(snapshot, context.entries, call),
    secretPatternsWith(snapshot.secretPatterns),
    runDeadline(snapshot),
  );
  if (gate.kind === 'wait') return gate.loop;
  if (gate.kind === 'refused') {
    noteInContext(context.entries, gate.record);
    appendToolResult(context.entries, call, gate.outcome, stepMeta(deps.now, run, loop.step));
    await saveLoadedContext(deps.store, contextIdOf(run), context);
    countToolCall(deps.metrics, call.name, 'error');
    return routeAfterTool(context.entries, loop.step);
  }
  if (gate.kind === 'approved') noteInContext(context.entries, gate.record);
  const started = deps.now();
  const thread = deps.thread(run);
  const where = await whereRuns(deps, run, call.name);
  if (where === 'child') {
    if (gate.kind === 'approved') await saveLoadedContext(deps.store, contextIdOf(run), context);
    return delegate(deps, run, loop, context, call, snapshot);
  }
  if (run.child) {
    await showChildProgress(deps, run, `running ${call.name}…`);
  } else {
    // The agent's name in the status line says which agent is at work.
    const agent = run.agent ? snapshot.agent : undefined;
    await thread
      .startTyping(toolStatus(call.name, agent))
      .catch((error: unknown) => deps.logger.warn('could not show the tool status', { error }));
  }
  let outcome: ToolOutcome;
  if (where === 'reach') {
    if (gate.kind !== 'approved') return { step: loop.step, next: 'reach' };
    await saveLoadedContext(deps.store, contextIdOf(run), context);
    return { step: loop.step, next: 'reach', approvedToolUseId: call.toolUseId };
  }
  if (where === 'sandbox') {
    const sandbox = await readySandbox(deps, run);
    if (sandbox === 'ready') {
      if (gate.kind !== 'approved') return { step: loop.step, next: 'sandbox' };
      await saveLoadedContext(deps.store, contextIdOf(run), context);
      return { step: loop.step, next: 'sandbox', approvedToolUseId: call.toolUseId };
    }
    outcome = sandbox;
  } else {
    const tool = { thread, threadId: run.threadId, s3: deps.store.s3, bucket: deps.store.bucket, layout: workspaceLayout(run.threadId) };
    outcome = await runAgentTool(deps.tools, call, tool);
    // What an agent tool read (a channel's history, archived contexts) reaches the model without the secrets in it, as a reach tool's answer does.
    outcome.text = redactSecrets(outcome.text, secretPatternsWith(snapshot.secretPatterns));
    deps.logger.info('tool call', { runId: run.runId, tool: call.name, toolUseId: call.toolUseId, status: outcome.status });
  }
  appendToolResult(context.entries, call, outcome, stepMeta(deps.now, run, loop.step), toolTime(started, deps.now()));
  await saveLoadedContext(deps.store, contextIdOf(run), context);
  countToolCall(deps.metrics, call.name, outcome.status);
  return routeAfterTool(context.entries, loop.step);
}

/**
 * The call's PreToolUse lambda hooks, once per call (a step run again, or back from a wait, finds
 * their notes): a rewrite is kept in the context, so the tool runs it; a hold makes the call wait for
 * a person. Returns what the model is told when a hook blocked the call, '' when hooks ran and let
 * it go on (the context changed), undefined when none ran.
 */
async function preToolUseHooks(
  deps: AgentDeps,
  run: RunInput,
  snapshot: RunSnapshot,
  entries: ContextEntry[],
  call: ToolCall,
): Promise<string | undefined> {
  if (!snapshot.hooks || hooksRanOn(answerWithCall(entries, call.toolUseId), 'PreToolUse', call.toolUseId, 'lambda')) return undefined;
  const verdict = await runLambdaHooks(deps, run, snapshot, 'PreToolUse', {
    tool: { name: call.name, toolUseId: call.toolUseId, input: call.input },
  });
  if (!verdict) return undefined;
  noteHooks(answerWithCall(entries, call.toolUseId), verdict.notes, call.toolUseId);
  if (verdict.blocked !== undefined) return blockedCallText('PreToolUse', verdict.blocked);
  if (verdict.input) {
    rewriteCall(entries, call.toolUseId, verdict.input);
    call.input = verdict.input;
  }
  if (verdict.approve) holdForApproval(entries, call.toolUseId);
  return '';
}

/** The run's approval rules, and for a call a hook held, one more: it waits for an admin, like a rule's call. */
function rulesFor(snapshot: RunSnapshot, entries: ContextEntry[], call: ToolCall): ApprovalRule[] | undefined {
  if (!snapshot.hooks || !heldByHook(entries, call.toolUseId)) return snapshot.approvals;
  const held: ApprovalRule = {
    tool: call.name,
    approversSetting: 'admins',
    approvers: snapshot.hookApprovers ?? [],
    timeoutMinutes: DEFAULT_APPROVAL_TIMEOUT_MINUTES,
  };
  return [held, ...(snapshot.approvals ?? [])];
}
