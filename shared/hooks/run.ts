// Running the hooks of one event, in order, and what they decided together: the first block wins
// (the rest do not run), a rewritten input is what the next hook sees, contexts add up, a replaced
// result or a continue message is the last one given, and any hook may make a call wait for a person.
// A hook error is passed over unless that hook is failClosed. Every run of a hook is noted (event,
// target, duration, outcome) for the audit record, logged and counted. Whatever a hook says that
// reaches the model is secret-filtered here.
import type { JsonLogger } from '../observability/log.ts';
import type { MetricsSink } from '../observability/metrics.ts';
import { redactSecrets, type SecretPattern } from '../policy/secret-filter.ts';
import type { HookAnswer, HookInput } from './answer.ts';
import { type Hook, hookTarget } from './settings.ts';

/** Runs one hook with the event as its input (a command in the sandbox, or a lambda). */
export type HookRunner = (hook: Hook, input: HookInput) => Promise<HookAnswer>;

export const HOOK_OUTCOMES = ['allowed', 'blocked', 'changed', 'approval', 'error', 'timeout'] as const;
export type HookOutcome = (typeof HOOK_OUTCOMES)[number];

/** One run of a hook, as the audit record shows it. */
export interface HookNote {
  event: string;
  /** The lambda's ARN, or `command: <its first 100 characters>`. */
  target: string;
  tool?: string;
  durationMs: number;
  outcome: HookOutcome;
  /** The error that was passed over (or that blocked, failClosed). */
  problem?: string;
}

export interface HookVerdict {
  /** Why the prompt or the call is refused, when a hook blocked it (secret-filtered). */
  blocked?: string;
  input?: Record<string, unknown>;
  context?: string;
  result?: string;
  continue?: string;
  approve?: true;
  notes: HookNote[];
}

export interface HookRunDeps {
  logger: JsonLogger;
  metrics?: MetricsSink;
  now: () => number;
  /** The run's secret patterns: hook text is filtered with them before the model reads it. */
  secrets: SecretPattern[];
}

function outcomeOf(answer: HookAnswer): HookOutcome {
  if (answer.kind === 'block') return 'blocked';
  if (answer.kind === 'error') return answer.timedOut ? 'timeout' : 'error';
  if (answer.approve) return 'approval';
  return answer.input || answer.context || answer.result !== undefined || answer.continue ? 'changed' : 'allowed';
}

/** Secret-filters every string in a rewritten input (it is kept in the context, which the model reads). */
function redactDeep(value: unknown, secrets: SecretPattern[]): unknown {
  if (typeof value === 'string') return redactSecrets(value, secrets);
  if (Array.isArray(value)) return value.map((item) => redactDeep(item, secrets));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactDeep(v, secrets)]));
  return value;
}

/** Runs `hooks` (all of one event) with `input`; a PreToolUse rewrite is passed on to the next hook. */
export async function runHooks(deps: HookRunDeps, hooks: readonly Hook[], runner: HookRunner, input: HookInput): Promise<HookVerdict> {
  const verdict: HookVerdict = { notes: [] };
  const contexts: string[] = [];
  let current = input;
  for (const hook of hooks) {
    const started = deps.now();
    const answer = await runner(hook, current).catch((error: unknown): HookAnswer => ({
      kind: 'error',
      problem: (error as Error).message ?? String(error),
    }));
    const outcome = outcomeOf(answer);
    const note: HookNote = {
      event: input.event,
      target: hookTarget(hook),
      ...(input.tool ? { tool: input.tool.name } : {}),
      durationMs: Math.max(0, deps.now() - started),
      outcome,
      ...(answer.kind === 'error' ? { problem: answer.problem.slice(0, 300) } : {}),
    };
    verdict.notes.push(note);
    deps.metrics?.put(answer.kind === 'error' ? 'HookErrors' : 'HookRuns', 1, { tool: input.event });
    const log = answer.kind === 'error' ? deps.logger.warn : deps.logger.info;
    log.call(deps.logger, 'hook ran', { runId: input.runId, ...note, failClosed: hook.failClosed });
    if (answer.kind === 'error') {
      if (!hook.failClosed) continue;
      verdict.blocked = `a ${input.event} hook failed (${answer.problem}) and is set to fail closed`;
      break;
    }
    if (answer.kind === 'block') {
      verdict.blocked = redactSecrets(answer.reason, deps.secrets);
      break;
    }
    if (answer.input && input.tool) {
      verdict.input = redactDeep(answer.input, deps.secrets) as Record<string, unknown>;
      current = { ...current, tool: { ...input.tool, input: verdict.input } };
    }
    if (answer.context) contexts.push(redactSecrets(answer.context, deps.secrets));
    if (answer.result !== undefined) verdict.result = redactSecrets(answer.result, deps.secrets);
    if (answer.continue) verdict.continue = redactSecrets(answer.continue, deps.secrets);
    if (answer.approve) verdict.approve = true;
  }
  if (contexts.length) verdict.context = contexts.join('\n\n');
  return verdict;
}

/** How a hook's added context reaches the model: marked as the operator's hook's, not the person's words. */
export const hookContextText = (event: string, context: string) => `[context from a ${event} hook]\n${context}`;
