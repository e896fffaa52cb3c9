// What a zod failure says, in one line a log or an error message can carry.
import type * as z from 'zod';

interface Issue {
  readonly path: readonly PropertyKey[];
  readonly message: string;
}

/** One entry per problem, `path: message` (`(root)` when the value as a whole is wrong). */
export function issueLines(issues: readonly Issue[]): string[] {
  return issues.map((i) => `${i.path.map(String).join('.') || '(root)'}: ${i.message}`);
}

/** `path: message; path: message`. */
export function formatIssues(error: { readonly issues: readonly Issue[] }): string {
  return issueLines(error.issues).join('; ');
}

/** The parsed value, or an error named `name` (`InvalidStepEvent`, ...) that says what was wrong. */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown, what: string, name: string): z.output<S> {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  throw Object.assign(new Error(`${what}: ${formatIssues(parsed.error)}`), { name });
}
