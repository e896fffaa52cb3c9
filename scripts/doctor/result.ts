// One check's result, and what every check needs to say it: ok, or the problem and what to do
// about it, or skipped because an earlier check failed.
export interface CheckResult {
  check: string;
  status: 'ok' | 'problem' | 'skipped';
  detail: string;
  /** What to do about a problem. */
  fix?: string;
}

export const ok = (check: string, detail: string): CheckResult => ({ check, status: 'ok', detail });
export const problem = (check: string, detail: string, fix: string): CheckResult => ({ check, status: 'problem', detail, fix });
export const skipped = (check: string, detail: string): CheckResult => ({ check, status: 'skipped', detail });

export const errorText = (error: unknown) => (error instanceof Error ? `${error.name}: ${error.message}` : String(error));

/** The error is IAM's refusal of the operator's own call: the fix is a permission. */
export const isAccessDenied = (error: unknown) => /AccessDenied|UnauthorizedOperation|not authorized/i.test(errorText(error));

/** The outputs of the stack, by key. */
export type Outputs = Partial<Record<string, string>>;

/** A check that needs these outputs; a problem (saying which) when the stack lacks one. */
export async function withOutputs<K extends string>(
  check: string,
  outputs: Outputs,
  keys: readonly K[],
  run: (values: Record<K, string>) => Promise<CheckResult>,
): Promise<CheckResult> {
  const absent = keys.filter((key) => !outputs[key]);
  if (absent.length > 0) return withoutOutputs(check, absent);
  return run(outputs as Record<K, string>);
}

/** A check that cannot run because the stack lacks the outputs it reads (an older version deployed it). */
export const withoutOutputs = (check: string, absent: readonly string[]): CheckResult =>
  problem(check, `the stack has no output ${absent.join(', ')}`, 'Deploy this version of the stack (`npx cdk deploy`).');
