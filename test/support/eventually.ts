/**
 * How long a wait may take at least, whatever a test asks: a wait ends as soon as its condition holds,
 * so the timeout only bounds a failure, and on a loaded 2-core machine a stack's first cold starts
 * (each handler bundled, DynamoDB Local warming up) can take tens of seconds. Tests assert what
 * happens, never how fast (speed is the bench's).
 */
export const MIN_WAIT_MS = 60_000;

/** Polls an async condition until it yields a value (not undefined/false), or fails after the timeout (at least MIN_WAIT_MS). */
export async function eventually<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 10_000,
  what = 'condition',
): Promise<T> {
  timeoutMs = Math.max(timeoutMs, MIN_WAIT_MS);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`${what} not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
