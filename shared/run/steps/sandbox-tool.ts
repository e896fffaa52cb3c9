// The sandbox side of a tool call, in the sandbox-step Lambda (inside the VPC, next to the task):
// bring the workspace up to date from S3, run the tool, write what changed back to S3, save the
// result in the context. S3 is listed only for a new task, at a run's first call, and when the
// channel's workspace version moved (another writer changed what the sandbox mirrors, see
// shared/sandbox/workspace-version.ts); a call that changed nothing lists and writes nothing in S3. A sandbox that stopped answering is marked lost and the call goes back to
// the agent step, which replaces it; the retry then runs on the new task with the files from S3.
import type { ActorDeps } from '../actor.ts';
import { dataKeys } from '../../ids.ts';
import { eventWriteMetadata } from '../../events/chain.ts';
import { eventFileSaveRefusal, takeEventFileSave } from '../../events/run-writes.ts';
import type { JsonLogger } from '../../observability/log.ts';
import { cancel, SandboxUnreachable } from '../../sandbox/client.ts';
import { addressOf, markLost, type SandboxStoreDeps, touchSandbox, waitUntilAnswering } from '../../sandbox/lifecycle.ts';
import { type Listed, loadSyncState, saveSyncState } from '../../sandbox/sync-state.ts';
import { syncOut } from '../../sandbox/sync-out.ts';
import { emptyStats, sameSyncState, syncIn, workspaceLayout } from '../../sandbox/workspace.ts';
import { bumpWorkspaceVersion, getSandboxAndVersion } from '../../sandbox/workspace-version.ts';
import { syncLimits, syncNotes, WorkspaceSyncError } from '../../sandbox/sync-notes.ts';
import type { LoopState, RunInput } from '../../contracts.ts';
import { loadContext, saveLoadedContext, contextIdOf } from '../../context/store.ts';
import { appendToolResult, pendingToolCall, toolTime } from '../../context/tool-calls.ts';
import type { ToolOutcome } from '../../tools/tool.ts';
import type { ReachCall } from '../../context/store.ts';
import { isStdioServer } from '../../reach/run-reach.ts';
import { listInSandbox, stdioCaller } from './sandbox-mcp.ts';
import { loadMcpListing, runToolsOf, type RunToolsDeps } from './run-tools.ts';
import { runSandboxTool } from '../../tools/run.ts';
import { stepMeta } from './deps.ts';
import { checkFlagsBetweenTools, flagsFor, routeAfterTool, stoppedAt, watchForStop } from './run-control.ts';
import type { MetricsSink } from '../../observability/metrics.ts';
import { countReachCall, countToolCall } from './step-metrics.ts';
import { loadSnapshot } from './snapshot.ts';
import { approvalRuleFor } from '../../approvals/rules.ts';
import { commandHooks, type PreCall } from '../../hooks/sandbox-hooks.ts';
import { toolStepFirst } from '../../hooks/step-hooks.ts';
import { hasCommandHooks } from '../../hooks/settings.ts';

/** `store`, `snapshots`, `listings`: the data bucket, and the run snapshots and MCP listings this container has read; `tools`: the built-in ones. */
export interface SandboxStepDeps extends RunToolsDeps {
  sandboxes: SandboxStoreDeps;
  /** The thread's actor item: stop and steer flags. */
  actor: Pick<ActorDeps, 'db' | 'tableName'>;
  port: number;
  logger: JsonLogger;
  /** Epoch milliseconds. */
  now: () => number;
  metrics?: MetricsSink;
}

export async function sandboxToolStep(deps: SandboxStepDeps, run: RunInput, loop: LoopState): Promise<LoopState> {
  // The step's reads at once: the context, the run's flags, the sandbox item with the workspace version, the snapshot.
  const [context, flags, { item, version }, snapshot] = await Promise.all([
    loadContext(deps.store, contextIdOf(run)),
    flagsFor(deps, run),
    getSandboxAndVersion(deps.sandboxes, run.threadId),
    loadSnapshot(deps, run),
  ]);
  // The run's stdio MCP servers are listed here once, before its first model call (the tool step sent it).
  const listing = snapshot.reach?.mcpServers?.some(isStdioServer) ? await loadMcpListing(deps, run) : undefined;
  const connecting = listing?.awaitingSandbox?.length ? listing : undefined;
  const runTools = connecting ? undefined : await runToolsOf(deps, run, snapshot);
  const tools = runTools && runTools !== 'connect' ? runTools.tools : deps.tools;
  const call = pendingToolCall(context.entries);
  if (connecting) {
    if (flags.abort) return stoppedAt(loop.step);
  } else {
    if (!call || !tools.runsInSandbox(call.name)) return routeAfterTool(context.entries, loop.step);
    const flagged = await checkFlagsBetweenTools(deps, run, loop, context, flags);
    if (flagged) return flagged;
  }
  const address = item && item.status === 'running' ? addressOf(item, deps.port) : undefined;
  if (!item || !address) return { step: loop.step, next: 'tool' };
  if (!(await waitUntilAnswering(deps.sandboxes, item, address))) {
    deps.logger.warn('sandbox never answered; it will be replaced', { runId: run.runId, taskArn: item.taskArn });
    await markLost(deps.sandboxes, run.threadId, item.taskArn);
    return { step: loop.step, next: 'tool' };
  }
  const started = deps.now();
  const layout = workspaceLayout(run.threadId, { hooks: hasCommandHooks(snapshot.hooks) });
  let status: 'success' | 'error' = 'success';
  let reached: ReachCall | undefined;
  try {
    const recorded = await loadSyncState(deps.store, run.threadId, item.taskArn);
    // A call a rule holds runs here only once a person approved it; the tool step asks them.
    if (call && !connecting && loop.approvedToolUseId !== call.toolUseId && approvalRuleFor(snapshot.approvals, call))
      return { step: loop.step, next: 'tool' };
    // So is a call whose PreToolUse lambda hooks have not run, or that a hook holds.
    if (call && !connecting && toolStepFirst(snapshot, context.entries, call, loop.approvedToolUseId))
      return { step: loop.step, next: 'tool' };
    const max = snapshot.maxEventFilesPerRun;
    const eventWrites = {
      metadata: eventWriteMetadata(run.threadId, run.prompt),
      take: () => takeEventFileSave(deps.actor, run.runId, max, deps.now()),
      refusal: (key: string) => eventFileSaveRefusal(key, max),
    };
    const sync = { s3: deps.store.s3, bucket: deps.store.bucket, address, eventWrites };
    const known = Object.keys(recorded.files).length ? recorded.files : (item.synced ?? {});
    // The version was read before listing: a write bumped after it is seen by the next call.
    const fresh = recorded.listed?.runId === run.runId && recorded.listed.version === version;
    const before = fresh ? { state: known, stats: emptyStats() } : await syncIn(sync, layout, known);
    let listed: Listed = fresh ? recorded.listed! : { runId: run.runId, version };
    let outcome: ToolOutcome | undefined;
    const hooks = call && !connecting ? commandHooks(deps, run, snapshot, context.entries, call, address) : undefined;
    let pre: PreCall = {};
    if (connecting) {
      // A stdio server sees the workspace as the commands do (a script of the channel's files, say).
      await listInSandbox(deps, run, snapshot, connecting, address);
    } else if ((pre = (await hooks?.pre(() => syncOut(sync, layout, before.state, syncLimits(snapshot)))) ?? {}).held) {
      // A command hook made the call wait for a person: the tool step asks.
      await Promise.all([
        saveLoadedContext(deps.store, contextIdOf(run), context),
        saveSyncState(deps.store, run.threadId, item.taskArn, { files: pre.state ?? before.state, listed }),
      ]);
      return { step: loop.step, next: 'tool' };
    } else if (pre.blocked) {
      outcome = pre.blocked;
    } else {
      // A stop kills the running command's whole process tree at once, and cuts a stdio MCP call.
      const stopWatch = watchForStop(deps, run);
      stopWatch.signal.addEventListener('abort', () => void cancel(address, call!.toolUseId).catch(() => undefined));
      const callMcpTool = stdioCaller(deps, run, call!.toolUseId, snapshot, address, (r) => (reached = r));
      outcome = await runSandboxTool(tools, call!, { address, layout, signal: stopWatch.signal, callMcpTool })
        .catch((error: unknown) => {
          if (stopWatch.signal.aborted) return undefined;
          throw error;
        })
        .finally(() => stopWatch.stop());
      if (stopWatch.signal.aborted || !outcome) {
        deps.logger.info('tool call stopped', { runId: run.runId, tool: call!.name, toolUseId: call!.toolUseId });
        return stoppedAt(loop.step);
      }
    }
    const after = await syncOut(sync, layout, pre.state ?? before.state, syncLimits(snapshot));
    // After the sync: a hook file the call changed is back as the operator wrote it before any hook runs.
    if (hooks && outcome && !pre.blocked) outcome = await hooks.post(outcome);
    if (after.sharedWrites > 0) {
      // Other threads' sandboxes list again; this one need not, unless someone else wrote meanwhile.
      const bumped = await bumpWorkspaceVersion(deps.sandboxes, dataKeys(run.threadId).channelDir);
      if (bumped === listed.version + 1) listed = { ...listed, version: bumped };
    }
    const unchanged =
      sameSyncState(after.state, recorded.files) && recorded.listed?.runId === listed.runId && recorded.listed.version === listed.version;
    await Promise.all([
      unchanged ? undefined : saveSyncState(deps.store, run.threadId, item.taskArn, { files: after.state, listed }),
      touchSandbox(deps.sandboxes, run.threadId, item.taskArn),
    ]);
    if (after.restored.length > 0) {
      deps.logger.warn('read-only files restored', { runId: run.runId, toolUseId: call?.toolUseId, files: after.restored });
    }
    if (after.overLimit) deps.logger.warn('sandbox over its sync limits', { runId: run.runId, ...after.overLimit });
    if (!outcome || !call)
      return { step: loop.step, next: 'model', ...(loop.contextVersion ? { contextVersion: loop.contextVersion } : {}) };
    const notes = syncNotes(after, snapshot);
    if (notes.length) {
      outcome.status = 'error';
      outcome.text += notes.map((note) => `\n[${note}]`).join('');
    }
    deps.logger.info('tool call', {
      runId: run.runId,
      tool: call.name,
      toolUseId: call.toolUseId,
      status: outcome.status,
      bytesIn: before.stats.bytesIn + after.stats.bytesIn,
      bytesOut: after.stats.bytesOut,
      s3Calls: before.stats.s3Calls + after.stats.s3Calls,
      conflicts: after.conflicts.length,
      ...(reached ? { server: reached.server, serverTool: reached.tool, bytes: reached.bytes } : {}),
    });
    const ran = { ...toolTime(started, deps.now()), ...(reached ? { reach: reached } : {}) };
    appendToolResult(context.entries, call, outcome, stepMeta(deps.now, run, loop.step), ran);
    status = outcome.status;
    if (reached) countReachCall(deps.metrics, reached.server, reached.tool, status, ran.durationMs);
  } catch (error) {
    if (!(error instanceof SandboxUnreachable)) throw new WorkspaceSyncError(error);
    deps.logger.warn('sandbox lost; it will be replaced', { runId: run.runId, taskArn: item.taskArn, error });
    await markLost(deps.sandboxes, run.threadId, item.taskArn);
    return { step: loop.step, next: 'tool' };
  }
  await saveLoadedContext(deps.store, contextIdOf(run), context);
  countToolCall(deps.metrics, call!.name, status);
  return routeAfterTool(context.entries, loop.step, tools);
}
