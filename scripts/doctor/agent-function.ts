// The agent-step function as Lambda has it: its role, which calls the model, and its environment,
// which says how sandbox tasks start. Read once; the checks that need it share the answer.
import { GetFunctionConfigurationCommand } from '@aws-sdk/client-lambda';
import type { DoctorDeps } from './deps.ts';
import { errorText, isAccessDenied, problem, type CheckResult } from './result.ts';

export interface AgentFunction {
  name: string;
  roleArn: string;
  /** Partition, Region and account, from the function's ARN: where the agent's calls come from. */
  where: { partition: string; region: string; account: string };
  variables: Record<string, string>;
}

export type AgentFunctionRead = { ok: true; fn: AgentFunction } | { ok: false; error: unknown; name: string };

export async function readAgentFunction(deps: DoctorDeps, name: string): Promise<AgentFunctionRead> {
  try {
    const config = await deps.lambda.send(new GetFunctionConfigurationCommand({ FunctionName: name }));
    const arn = /^arn:([^:]+):lambda:([^:]+):(\d+):function:/.exec(config.FunctionArn ?? '');
    if (!arn || !config.Role) throw new Error(`GetFunctionConfiguration of ${name} named no role or ARN`);
    return {
      ok: true,
      fn: {
        name,
        roleArn: config.Role,
        where: { partition: arn[1]!, region: arn[2]!, account: arn[3]! },
        variables: config.Environment?.Variables ?? {},
      },
    };
  } catch (error) {
    return { ok: false, error, name };
  }
}

/** The problem a check reports when it could not read the function. */
export function agentFunctionProblem(check: string, read: Extract<AgentFunctionRead, { ok: false }>): CheckResult {
  return problem(
    check,
    `Lambda GetFunctionConfiguration of ${read.name} failed: ${errorText(read.error)}`,
    isAccessDenied(read.error)
      ? `The credentials need lambda:GetFunctionConfiguration on ${read.name}.`
      : 'Deploy this version of the stack (`npx cdk deploy`): the AgentStepFunctionName output names the function.',
  );
}
