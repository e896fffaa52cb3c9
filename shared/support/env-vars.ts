// How one environment variable is read: the pieces shared/env.ts builds each handler's schema from,
// and each chat platform its own variables (shared/platforms/<name>/descriptor.ts).
import * as z from 'zod';

export const required = z.string({ error: 'is not set' }).min(1, 'is empty');
export const optional = z.string().optional();

/** A number `ok` accepts; `fallback` when unset (or empty). */
function numberVar<F extends number | undefined>(ok: (n: number) => boolean, expected: string, fallback: F) {
  return z
    .string()
    .optional()
    .transform((raw, ctx): number | F => {
      if (raw === undefined || raw.trim() === '') return fallback;
      const value = Number(raw);
      if (ok(value)) return value;
      ctx.addIssue({ code: 'custom', message: `must be ${expected}, not ${JSON.stringify(raw)}` });
      return z.NEVER;
    });
}
export const wholeFrom = <F extends number | undefined>(min: number, fallback: F) =>
  numberVar((n) => Number.isInteger(n) && n >= min, `a whole number from ${min}`, fallback);
export const positive = <F extends number | undefined>(fallback: F) =>
  numberVar((n) => Number.isFinite(n) && n > 0, 'a positive number', fallback);
export const nonNegative = <F extends number | undefined>(fallback: F) =>
  numberVar((n) => Number.isFinite(n) && n >= 0, 'a number from 0', fallback);

/** Comma-separated values (subnets, security groups, origins), blanks dropped. */
export const list = optional.transform((value) =>
  (value ?? '')
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean),
);
