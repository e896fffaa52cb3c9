// The model, from both sides: whether the agent's role may call it (IAM's policy simulation on the
// role, which needs no call as the role), and a one-token call with the operator's credentials,
// which proves the account can use the model and, made by an administrator, is the first call
// that subscribes the account to a third-party model.
import { ConverseCommand } from '@aws-sdk/client-bedrock-runtime';
import { SimulatePrincipalPolicyCommand } from '@aws-sdk/client-iam';
import { describeFailure } from '../../shared/run/failures.ts';
import { modelInvocationAuthorizations } from '../../shared/model/ids.ts';
import { BEDROCK_INVOKE_ACTIONS } from '../../infra/constructs/bedrock-access.ts';
import { agentFunctionProblem, type AgentFunctionRead } from './agent-function.ts';
import type { DoctorDeps } from './deps.ts';
import { errorText, isAccessDenied, ok, problem, type CheckResult } from './result.ts';

export async function agentRole(deps: DoctorDeps, modelId: string, agent: AgentFunctionRead): Promise<CheckResult> {
  const name = 'agent role';
  if (!agent.ok) return agentFunctionProblem(name, agent);
  const { roleArn, where } = agent.fn;
  // Each resource IAM checks for an invocation, with the context it checks it in (the same for
  // both actions the agent uses, which are simulated together).
  const checks = modelInvocationAuthorizations(BEDROCK_INVOKE_ACTIONS[0]!, modelId, where);
  const refused: string[] = [];
  try {
    for (const { resource, context } of checks) {
      const answer = await deps.iam.send(
        new SimulatePrincipalPolicyCommand({
          PolicySourceArn: roleArn,
          ActionNames: BEDROCK_INVOKE_ACTIONS,
          ResourceArns: [resource],
          ContextEntries: Object.entries(context ?? {}).map(([key, value]) => ({
            ContextKeyName: key,
            ContextKeyValues: [value],
            ContextKeyType: 'string',
          })),
        }),
      );
      for (const result of answer.EvaluationResults ?? []) {
        if (result.EvalDecision !== 'allowed') refused.push(`${result.EvalActionName} on ${resource} (${result.EvalDecision})`);
      }
    }
  } catch (error) {
    return problem(
      name,
      `IAM SimulatePrincipalPolicy of ${roleArn} failed: ${errorText(error)}`,
      isAccessDenied(error)
        ? `The credentials need iam:SimulatePrincipalPolicy on ${roleArn}.`
        : 'Run the doctor again; if it persists, check the role in the IAM console.',
    );
  }
  if (refused.length > 0) {
    return problem(
      name,
      `the agent's role ${roleArn.split('/').pop()} may not call ${modelId}: ${refused.join('; ')}`,
      `The role allows exactly the deployed model: deploy the one you want (\`npx cdk deploy -c modelId=${modelId}\`), and look for a permissions boundary or a service control policy that denies bedrock:InvokeModel.`,
    );
  }
  return ok(name, `${roleArn.split('/').pop()} may call ${modelId} (${checks.length} resources, IAM policy simulation)`);
}

export async function modelCall(deps: DoctorDeps, modelId: string): Promise<CheckResult> {
  const name = 'bedrock';
  try {
    // One token: the cheapest call that proves access.
    await deps.bedrock.send(
      new ConverseCommand({ modelId, messages: [{ role: 'user', content: [{ text: 'Hi' }] }], inferenceConfig: { maxTokens: 1 } }),
    );
    return ok(name, `${modelId} answers`);
  } catch (error) {
    // Refused to whoever runs the doctor, not to the agent: the fix is a permission of theirs.
    if (/is not authorized to perform: bedrock:Invoke/.test(errorText(error))) {
      return problem(
        name,
        `${modelId}: ${errorText(error)}`,
        `The credentials need bedrock:InvokeModel on ${modelId} (the inference profile and its foundation model).`,
      );
    }
    const failure =
      error instanceof Error ? { errorType: error.name, errorMessage: error.message } : { errorType: 'Error', errorMessage: String(error) };
    return problem(name, `${modelId}: ${errorText(error)}`, describeFailure(failure, modelId));
  }
}
