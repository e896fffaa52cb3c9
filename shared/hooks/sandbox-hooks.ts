// Command hooks around a sandbox tool call, in the sandbox step (the one function that reaches the
// sandbox). Before the call: what the sandbox changed since the last sync is saved or undone first
// (hook files are read-only there, like broad-scope memory, so a change to one is undone), then the
// PreToolUse hooks run, once per call. After it (and after the sync that undoes any change to a hook
// file): the PostToolUse hooks. A call with no command hooks costs nothing here.
import type { RunInput } from '../contracts.ts';
import type { ContextEntry } from '../context/store.ts';
import type { JsonLogger } from '../observability/log.ts';
import type { MetricsSink } from '../observability/metrics.ts';
import { secretPatternsWith } from '../policy/secret-filter.ts';
import type { RunSnapshot } from '../run/steps/snapshot.ts';
import type { SandboxAddress } from '../sandbox/client.ts';
import type { SyncState } from '../sandbox/workspace.ts';
import type { ToolCall, ToolOutcome } from '../tools/tool.ts';
import { commandHookRunner } from './command.ts';
import { hookedResult } from './results.ts';
import { runHooks } from './run.ts';
import { hooksFor } from './settings.ts';
import { answerWithCall, blockedCallText, holdForApproval, hookInput, hooksRanOn, noteHooks, rewriteCall } from './step-hooks.ts';

export interface CommandHookDeps {
  logger: JsonLogger;
  metrics?: MetricsSink;
  now: () => number;
}

export interface PreCall {
  /** The sandbox's files as the sync before the hooks left them. */
  state?: SyncState;
  /** A hook blocked the call: the result the model gets instead. */
  blocked?: ToolOutcome;
  /** A hook made the call wait for a person: the tool step asks. */
  held?: true;
}

export function commandHooks(
  deps: CommandHookDeps,
  run: RunInput,
  snapshot: Pick<RunSnapshot, 'hooks' | 'secretPatterns'>,
  entries: ContextEntry[],
  call: ToolCall,
  address: SandboxAddress,
) {
  const of = (event: 'PreToolUse' | 'PostToolUse') =>
    snapshot.hooks ? hooksFor(snapshot.hooks, event, { tool: call.name, kind: 'command' }) : [];
  const run_ = (event: 'PreToolUse' | 'PostToolUse', fields: Parameters<typeof hookInput>[2]) =>
    runHooks(
      { ...deps, secrets: secretPatternsWith(snapshot.secretPatterns) },
      of(event),
      commandHookRunner(address),
      hookInput(run, event, fields),
    );
  const tool = () => ({ name: call.name, toolUseId: call.toolUseId, input: call.input });
  return {
    async pre(settle: () => Promise<{ state: SyncState }>): Promise<PreCall> {
      if (!of('PreToolUse').length || hooksRanOn(answerWithCall(entries, call.toolUseId), 'PreToolUse', call.toolUseId, 'command'))
        return {};
      const { state } = await settle();
      const verdict = await run_('PreToolUse', { tool: tool() });
      noteHooks(answerWithCall(entries, call.toolUseId), verdict.notes, call.toolUseId);
      if (verdict.blocked !== undefined)
        return { state, blocked: { status: 'error', text: blockedCallText('PreToolUse', verdict.blocked) } };
      if (verdict.input) {
        rewriteCall(entries, call.toolUseId, verdict.input);
        call.input = verdict.input;
      }
      if (verdict.approve) {
        holdForApproval(entries, call.toolUseId);
        return { state, held: true };
      }
      return { state };
    },
    async post(outcome: ToolOutcome): Promise<ToolOutcome> {
      if (!of('PostToolUse').length) return outcome;
      const verdict = await run_('PostToolUse', { tool: tool(), result: { status: outcome.status, text: outcome.text } });
      noteHooks(answerWithCall(entries, call.toolUseId), verdict.notes, call.toolUseId);
      return hookedResult(verdict, outcome);
    },
  };
}
