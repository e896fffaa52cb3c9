// Writes that lose races: a DynamoDB transaction cancelled by another one on a shared item (a
// capacity or spending counter), a conditional write whose condition a concurrent change broke, an
// S3 conditional put that another writer beat. Each is tried again, after a short random wait so
// racing writers spread out, a bounded number of times. No SDK client here: S3 and DynamoDB code
// share it.
import { isTransactionConflict } from './errors.ts';

/** A short random wait before trying again (doubling per attempt, from up to 20 ms). */
const backOff = (attempt: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.random() * 20 * 2 ** attempt));

const ATTEMPTS = 8;

/** What an attempt returns when a concurrent change beat it: it runs again, reading afresh. */
export const TRY_AGAIN: unique symbol = Symbol('try again');

/**
 * Runs `attempt` until it returns a result: again (after `backOff`) when it returns TRY_AGAIN or
 * throws a transaction conflict. After 8 tries it gives up: with the last conflict if the last try
 * threw one, else with "`what`: too many concurrent changes". Any other error ends it at once.
 */
export async function retryOnConflict<T>(what: string, attempt: () => Promise<T | typeof TRY_AGAIN>): Promise<T> {
  for (let n = 0; n < ATTEMPTS; n++) {
    if (n > 0) await backOff(n - 1);
    try {
      const result = await attempt();
      if (result !== TRY_AGAIN) return result;
    } catch (error) {
      if (!isTransactionConflict(error) || n + 1 >= ATTEMPTS) throw error;
    }
  }
  throw new Error(`${what}: too many concurrent changes`);
}
