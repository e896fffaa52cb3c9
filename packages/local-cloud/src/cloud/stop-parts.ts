// Stopping the local cloud must never hang its caller (a test file, `npm start` on Ctrl-C): each
// part gets a deadline, and one that misses it is named on stderr and left behind, so the process
// can still end and the report says which part held it.
import { setTimeout as delay } from 'node:timers/promises';

export const STOP_DEADLINE_MS = 20_000;

/** Stops every part at once; resolves when each has stopped or missed its deadline. */
export async function stopParts(parts: Record<string, () => Promise<unknown>>, deadlineMs = STOP_DEADLINE_MS): Promise<string[]> {
  const late: string[] = [];
  await Promise.all(
    Object.entries(parts).map(async ([name, stop]) => {
      const cancel = new AbortController();
      const stopped = Promise.resolve()
        .then(stop)
        .then(
          () => 'stopped' as const,
          (error: unknown) => {
            console.error(`[local cloud] stopping ${name} failed:`, error);
            return 'stopped' as const;
          },
        );
      const outcome = await Promise.race([
        stopped,
        delay(deadlineMs, 'late' as const, { signal: cancel.signal }).catch(() => 'stopped' as const),
      ]);
      cancel.abort();
      if (outcome === 'late') {
        late.push(name);
        console.error(`[local cloud] ${name} did not stop within ${deadlineMs / 1000} s; leaving it behind`);
      }
    }),
  );
  return late;
}
