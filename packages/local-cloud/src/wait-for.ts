// How a stand-in's `waitFor` polls its in-memory state for what a test expects.

/**
 * The least time a `waitFor` gives its condition: it returns as soon as the condition holds, so the
 * timeout only bounds a failure, and a loaded machine's first cold starts can take tens of seconds.
 */
const MIN_WAIT_MS = 60_000;

/** A `waitFor` for one stand-in: resolves with the predicate's first truthy result, polling every 20 ms. */
export function pollerFor(standIn: string) {
  return async function waitFor<T>(predicate: () => T | undefined | null | false, timeoutMs = 5000): Promise<T> {
    timeoutMs = Math.max(timeoutMs, MIN_WAIT_MS);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = predicate();
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`${standIn} stand-in: condition not met within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
}
