// The hooks of a run's steps: the event a hook is given, the lambda hooks of an event as the agent
// step runs them, and where their notes are kept (the context entry they concern, for the audit
// record). A run whose snapshot has no hooks costs nothing here: no call, no read.
import type { RunInput } from '../contracts.ts';
import type { ContextEntry } from '../context/store.ts';
import { channelKeyOf } from '../ids.ts';
import type { JsonLogger } from '../observability/log.ts';
import type { MetricsSink } from '../observability/metrics.ts';
import { secretPatternsWith } from '../policy/secret-filter.ts';
import type { RunSnapshot } from '../run/steps/snapshot.ts';
import type { HookInput } from './answer.ts';
import { type HookNote, type HookRunner, type HookVerdict, runHooks } from './run.ts';
import { hookedResult } from './results.ts';
import { type HookEvent, hooksFor } from './settings.ts';

export interface StepHookDeps {
  logger: JsonLogger;
  metrics?: MetricsSink;
  now: () => number;
  /** Invokes lambda hooks (absent: the deployment declares no hook functions, and a lambda hook is an error). */
  lambdaHooks?: HookRunner;
}

export function hookInput(run: RunInput, event: HookEvent, fields: Partial<HookInput> = {}): HookInput {
  return {
    event,
    runId: run.runId,
    threadId: run.threadId,
    channel: channelKeyOf(run.threadId),
    user: { id: run.prompt.author.userId, name: run.prompt.author.userName },
    ...fields,
  };
}

const undeclared: HookRunner = async () => ({
  kind: 'error',
  problem: 'no hook functions are declared (cdk.json context hookFunctions)',
});

/** Runs the event's lambda hooks; undefined when the run has none for it. */
export async function runLambdaHooks(
  deps: StepHookDeps,
  run: RunInput,
  snapshot: Pick<RunSnapshot, 'hooks' | 'secretPatterns'>,
  event: HookEvent,
  fields: Partial<HookInput> = {},
): Promise<HookVerdict | undefined> {
  const hooks = hooksFor(snapshot.hooks, event, { tool: fields.tool?.name, kind: 'lambda' });
  if (!hooks.length) return undefined;
  const secrets = secretPatternsWith(snapshot.secretPatterns);
  return runHooks({ ...deps, secrets }, hooks, deps.lambdaHooks ?? undeclared, hookInput(run, event, fields));
}

/** Keeps the notes of hooks run on `entry` (for a tool event, with the call's id), for the audit record. */
export function noteHooks(entry: ContextEntry | undefined, notes: readonly HookNote[], toolUseId?: string): void {
  if (!entry || !notes.length) return;
  entry.meta.hooks = [...(entry.meta.hooks ?? []), ...notes.map((note) => (toolUseId ? { ...note, toolUseId } : note))];
}

/** Whether hooks of `event` (of `kind`, when given) already ran on the call: a step run again does not run them twice. */
export function hooksRanOn(entry: ContextEntry | undefined, event: HookEvent, toolUseId: string, kind?: 'command' | 'lambda'): boolean {
  return (entry?.meta.hooks ?? []).some(
    (note) =>
      note.event === event &&
      note.toolUseId === toolUseId &&
      (kind === undefined || (kind === 'command') === note.target.startsWith('command: ')),
  );
}

/** The answer that made the call, where its hooks' notes and effects are kept. */
export const answerWithCall = (entries: ContextEntry[], toolUseId: string) =>
  entries.findLast((e) => e.role === 'assistant' && e.content.some((b) => b.toolUse?.toolUseId === toolUseId));

/** A PreToolUse rewrite: the call as the context keeps it (what the model sees it asked, what the tool runs). */
export function rewriteCall(entries: ContextEntry[], toolUseId: string, input: Record<string, unknown>): void {
  const block = answerWithCall(entries, toolUseId)?.content.find((b) => b.toolUse?.toolUseId === toolUseId);
  if (block?.toolUse) block.toolUse.input = input as never;
}

/** A PreToolUse hook asked that the call wait for a person: kept on the answer, so the tool step gates it. */
export function holdForApproval(entries: ContextEntry[], toolUseId: string): void {
  const answer = answerWithCall(entries, toolUseId);
  if (answer) answer.meta.hookHeld = [...new Set([...(answer.meta.hookHeld ?? []), toolUseId])];
}

export const heldByHook = (entries: ContextEntry[], toolUseId: string): boolean =>
  answerWithCall(entries, toolUseId)?.meta.hookHeld?.includes(toolUseId) ?? false;

/** What the model is told of a call a hook blocked. */
export const blockedCallText = (event: HookEvent, reason: string) => `Not run: a ${event} hook blocked this call. Reason: ${reason}`;

/**
 * PostToolUse lambda hooks on the results of calls that ran in another function (the sandbox step,
 * the reach step), before the model reads them: the model step runs them once per call (their notes
 * say which ran). A result a hook replaced is kept replaced in the context.
 */
export async function postToolUseLambdaHooks(
  deps: StepHookDeps,
  run: RunInput,
  snapshot: Pick<RunSnapshot, 'hooks' | 'secretPatterns'>,
  entries: ContextEntry[],
): Promise<void> {
  if (!snapshot.hooks?.some((h) => h.event === 'PostToolUse' && h.lambda)) return;
  for (const entry of entries.filter((e) => e.meta.runId === run.runId && e.role === 'user' && e.meta.toolTimes)) {
    for (const block of entry.content) {
      const result = block.toolResult;
      const id = result?.toolUseId;
      if (!result || !id || !entry.meta.toolTimes?.[id]) continue;
      const answer = answerWithCall(entries, id);
      if (hooksRanOn(answer, 'PostToolUse', id, 'lambda')) continue;
      const use = answer?.content.find((b) => b.toolUse?.toolUseId === id)?.toolUse;
      const text = (result.content ?? []).map((c) => c.text ?? '').join('');
      const status = result.status === 'error' ? 'error' : 'success';
      const verdict = await runLambdaHooks(deps, run, snapshot, 'PostToolUse', {
        tool: { name: use?.name ?? '', toolUseId: id, input: use?.input ?? {} },
        result: { status, text },
      });
      if (!verdict) continue;
      noteHooks(answer, verdict.notes, id);
      const hooked = hookedResult(verdict, { status, text });
      result.status = hooked.status;
      result.content = [{ text: hooked.text }, ...(result.content ?? []).filter((c) => !('text' in c))];
    }
  }
}

/**
 * Whether a call the sandbox or reach step is about to run must go back to the tool step first: its
 * PreToolUse lambda hooks have not run (those steps run the next call of an answer by themselves), or
 * a hook made it wait for a person and it was not handed over approved.
 */
export function toolStepFirst(
  snapshot: Pick<RunSnapshot, 'hooks'>,
  entries: ContextEntry[],
  call: { name: string; toolUseId: string },
  approvedToolUseId: string | undefined,
): boolean {
  if (!snapshot.hooks) return false;
  if (heldByHook(entries, call.toolUseId) && approvedToolUseId !== call.toolUseId) return true;
  const lambdas = hooksFor(snapshot.hooks, 'PreToolUse', { tool: call.name, kind: 'lambda' });
  return lambdas.length > 0 && !hooksRanOn(answerWithCall(entries, call.toolUseId), 'PreToolUse', call.toolUseId, 'lambda');
}
