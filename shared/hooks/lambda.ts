// Lambda hooks: the operator's function invoked synchronously (RequestResponse) with the event as its
// payload; its response payload is the answer (shared/hooks/answer.ts). Only functions declared in
// cdk.json context `hookFunctions` are called: the stack grants invoke on those ARNs alone, and a hook
// naming another is refused here with the reason, before any call. The Lambda client is loaded at
// the first hook, so a deployment (or a container) that runs none loads nothing for it.
import type { LambdaClient } from '@aws-sdk/client-lambda';
import { lazy } from '../support/lazy.ts';
import { lambdaAnswer, type HookAnswer } from './answer.ts';
import type { HookRunner } from './run.ts';

export interface LambdaHookDeps {
  lambda: () => Promise<LambdaClient>;
  /** The ARNs cdk.json `hookFunctions` declares (the HOOK_FUNCTIONS variable of the function). */
  declared: readonly string[];
}

const sdk = lazy(() => import('@aws-sdk/client-lambda'));

const unqualified = (arn: string) => arn.split(':').slice(0, 7).join(':');

export function lambdaHookRunner(deps: LambdaHookDeps): HookRunner {
  return async (hook, input): Promise<HookAnswer> => {
    const arn = hook.lambda!;
    if (!deps.declared.includes(arn) && !deps.declared.includes(unqualified(arn))) {
      return { kind: 'error', problem: `${arn} is not declared in cdk.json context hookFunctions` };
    }
    const signal = AbortSignal.timeout(hook.timeoutSeconds * 1000);
    try {
      const [{ InvokeCommand }, lambda] = await Promise.all([sdk(), deps.lambda()]);
      const out = await lambda.send(
        new InvokeCommand({
          FunctionName: arn,
          InvocationType: 'RequestResponse',
          Payload: new TextEncoder().encode(JSON.stringify(input)),
        }),
        { abortSignal: signal },
      );
      return lambdaAnswer(out.Payload ? new TextDecoder().decode(out.Payload) : undefined, out.FunctionError);
    } catch (error) {
      if (signal.aborted) return { kind: 'error', problem: 'it timed out', timedOut: true };
      return { kind: 'error', problem: `invoke failed: ${(error as Error).name}: ${(error as Error).message}` };
    }
  };
}

/** HOOK_FUNCTIONS: the declared ARNs, comma-separated. */
export const parseHookFunctions = (raw: string | undefined): string[] =>
  (raw ?? '')
    .split(',')
    .map((arn) => arn.trim())
    .filter(Boolean);

/** The agent-step function's lambda hooks: undefined when HOOK_FUNCTIONS declares none. */
export function lambdaHooksFromEnv(hookFunctions: string | undefined): HookRunner | undefined {
  const declared = parseHookFunctions(hookFunctions);
  if (!declared.length) return undefined;
  return lambdaHookRunner({ lambda: lazy(async () => new (await sdk()).LambdaClient({ maxAttempts: 1 })), declared });
}
