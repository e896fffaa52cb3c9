// How a stand-in's `waitFor` polls its in-memory state for what a test expects.

/** A `waitFor` for one stand-in: resolves with the predicate's first truthy result, polling every 20 ms. */
export function pollerFor(standIn: string) {
  return async function waitFor<T>(predicate: () => T | undefined | null | false, timeoutMs = 5000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = predicate();
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`${standIn} stand-in: condition not met within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
}
