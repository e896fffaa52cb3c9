// The thread's context as the run's steps see it, read once: a step that saves the context returns
// the version it saved (`contextVersion` in the loop state) and the container keeps what it saved;
// the next step, if it lands on the same container and the state names that same version, goes on
// from there without reading context.jsonl again. Anything else (another container, the sandbox
// step's write, a hand-over, a failed step) reads S3. Saves stay conditional on the version, so a
// kept context that S3 no longer has cannot overwrite anything: the save fails as a stale read's would.
import { ContextConflict, loadContext, type LoadedContext, type StoreDeps } from '../../context/store.ts';
import type { LoopState } from '../../contracts.ts';

/** Contexts a handler container saved or read last, by thread. */
export interface ContextCache {
  /** Takes the thread's kept context if it is at `version` (the caller then owns it). */
  take(threadId: string, version: string): LoadedContext | undefined;
  keep(threadId: string, context: LoadedContext): void;
  forget(threadId: string): void;
}

/** The `max` most recently kept contexts (a container steps a few runs at a time). */
export function recentContexts(max = 20): ContextCache {
  const kept = new Map<string, LoadedContext>();
  return {
    take(threadId, version) {
      const context = kept.get(threadId);
      kept.delete(threadId);
      return context?.version === version ? context : undefined;
    },
    keep(threadId, context) {
      kept.delete(threadId);
      kept.set(threadId, { entries: [...context.entries], version: context.version });
      if (kept.size > max) kept.delete(kept.keys().next().value!);
    },
    forget: (threadId) => void kept.delete(threadId),
  };
}

export interface RunContextDeps {
  store: StoreDeps;
  /** Absent: every step reads S3. */
  contexts?: ContextCache;
}

/** The context at the version the loop state names, from the container when it has it, else from S3. */
export async function loadRunContext(deps: RunContextDeps, threadId: string, version: string | undefined): Promise<LoadedContext> {
  const kept = version ? deps.contexts?.take(threadId, version) : undefined;
  return kept ?? loadContext(deps.store, threadId);
}

/**
 * Runs a step on the thread's context: on success the container keeps the context as the step left
 * it and the loop state names its version; on failure it forgets it (the retry reads S3). `from`:
 * the version the loop state names, or the context itself when the step follows prepare in the same
 * invocation (prepare's save may still be in flight: the step waits for it, and its failure is not
 * a stale context to read again).
 */
export async function withRunContext(
  deps: RunContextDeps,
  threadId: string,
  from: string | undefined | { context: LoadedContext },
  step: (context: LoadedContext) => Promise<LoopState>,
): Promise<LoopState> {
  const inHand = typeof from === 'object';
  const kept = inHand ? from.context : from ? deps.contexts?.take(threadId, from) : undefined;
  const context = kept ?? (await loadContext(deps.store, threadId));
  try {
    const next = await step(context);
    if (context.version === null) return next;
    deps.contexts?.keep(threadId, context);
    return { ...next, contextVersion: context.version };
  } catch (error) {
    deps.contexts?.forget(threadId);
    // A kept context S3 no longer has (an earlier attempt of this step, elsewhere, saved after it):
    // the step runs again on what S3 has, as a retry would (steps are idempotent).
    if (kept && !inHand && error instanceof ContextConflict) return withRunContext(deps, threadId, undefined, step);
    throw error;
  }
}
