// Bounded concurrency for many small independent calls (S3 objects, sandbox files).

/** Runs `fn` on every item with at most `limit` calls in flight; rejects with the first failure. */
export async function forEachLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
