// The account's quotas that stop a deployment that is otherwise fine: Lambda's concurrent
// executions (a new account's are far below the default of 1000), Fargate's vCPUs (the sandboxes
// settings.json lets run at once must fit) and Bedrock's per-minute quotas of the deployed model (a
// model the account may use with a quota of 0 is refused every time).
import { GetAccountSettingsCommand } from '@aws-sdk/client-lambda';
import { GetServiceQuotaCommand, paginateListServiceQuotas, type ServiceQuota } from '@aws-sdk/client-service-quotas';
import { parseModelId } from '../../shared/model/ids.ts';
import { FARGATE_VCPU_QUOTA, LAMBDA_CONCURRENCY_QUOTA } from '../../infra/quota-codes.ts';
import type { Settings } from '../../shared/settings/schema.ts';
import { agentFunctionProblem, type AgentFunctionRead } from './agent-function.ts';
import type { DoctorDeps } from './deps.ts';
import { errorText, isAccessDenied, ok, problem, type CheckResult } from './result.ts';

/**
 * A run holds one function invocation at a time (a model step, a tool call), and each prompt takes
 * the webhook's and dispatch's: twice `limits.maxConcurrentRuns` leaves room for the ingress.
 */
export const INVOCATIONS_PER_RUN = 2;

const count = (value: number) => value.toLocaleString('en-US');

export async function lambdaConcurrency(deps: DoctorDeps, settings: Settings): Promise<CheckResult> {
  const name = 'lambda concurrency';
  let unreserved: number;
  let total: number;
  try {
    const account = await deps.lambda.send(new GetAccountSettingsCommand({}));
    total = account.AccountLimit?.ConcurrentExecutions ?? 0;
    unreserved = account.AccountLimit?.UnreservedConcurrentExecutions ?? total;
  } catch (error) {
    return problem(name, `Lambda GetAccountSettings failed: ${errorText(error)}`, 'The credentials need lambda:GetAccountSettings.');
  }
  const { maxConcurrentRuns } = settings.limits;
  const needed = INVOCATIONS_PER_RUN * maxConcurrentRuns;
  if (unreserved < needed) {
    return problem(
      name,
      `the account runs at most ${count(unreserved)} function invocations at once (of ${count(total)}); ${maxConcurrentRuns} runs at once (limits.maxConcurrentRuns) need about ${count(needed)}`,
      `Request 1000 in Service Quotas (AWS Lambda, Concurrent executions, ${LAMBDA_CONCURRENCY_QUOTA}); new accounts start far lower. Until then lower limits.maxConcurrentRuns in settings.json to ${Math.max(1, Math.floor(unreserved / INVOCATIONS_PER_RUN))}.`,
    );
  }
  return ok(name, `${count(unreserved)} unreserved concurrent executions, enough for ${maxConcurrentRuns} runs at once`);
}

export async function fargateVcpus(deps: DoctorDeps, settings: Settings, agent: AgentFunctionRead): Promise<CheckResult> {
  const name = 'fargate quota';
  if (!agent.ok) return agentFunctionProblem(name, agent);
  let quota: number;
  try {
    const answer = await deps.serviceQuotas.send(new GetServiceQuotaCommand({ ServiceCode: 'fargate', QuotaCode: FARGATE_VCPU_QUOTA }));
    quota = answer.Quota?.Value ?? 0;
  } catch (error) {
    return problem(
      name,
      `Service Quotas GetServiceQuota (fargate ${FARGATE_VCPU_QUOTA}) failed: ${errorText(error)}`,
      'The credentials need servicequotas:GetServiceQuota.',
    );
  }
  const vcpus = Number(agent.fn.variables.SANDBOX_CPU ?? 1024) / 1024;
  const fits = Math.floor(quota / vcpus);
  const { maxRunningSandboxes } = settings.limits;
  if (fits < maxRunningSandboxes) {
    return problem(
      name,
      `${count(quota)} Fargate vCPUs hold ${fits} sandboxes of ${vcpus} vCPU at once; limits.maxRunningSandboxes allows ${maxRunningSandboxes}`,
      `Request ${maxRunningSandboxes * vcpus} or more in Service Quotas (AWS Fargate, Fargate On-Demand vCPU resource count, ${FARGATE_VCPU_QUOTA}), or lower limits.maxRunningSandboxes in settings.json to ${fits}.`,
    );
  }
  return ok(name, `${count(quota)} Fargate vCPUs hold ${maxRunningSandboxes} sandboxes (limits.maxRunningSandboxes) of ${vcpus} vCPU`);
}

/** The words that name a model, without its date and version: `anthropic claude sonnet 4 5`. */
function modelWords(text: string): string {
  return text
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word !== '' && !/^\d{8}$/.test(word) && !/^v\d+$/.test(word))
    .join(' ');
}

/** Which quotas name the deployed model for the way it is called (global, cross-Region or on-demand), per minute. */
export function modelQuotas(modelId: string, quotas: ServiceQuota[]): ServiceQuota[] {
  const { profileScope, foundationModelId } = parseModelId(modelId);
  // "anthropic.claude-sonnet-4-5-20250929-v1:0": the trailing ":0" is the model's revision.
  const wanted = modelWords(foundationModelId.replace(/:\d+$/, ''));
  const scope = profileScope === 'global' ? /^global cross-region/ : profileScope ? /^cross-region/ : /^on-demand/;
  return quotas.filter((quota) => {
    const [kind = '', model = ''] = (quota.QuotaName ?? '').toLowerCase().split(' for ');
    return scope.test(kind) && /per minute/.test(kind) && modelWords(model) === wanted;
  });
}

export async function bedrockQuotas(deps: DoctorDeps, modelId: string): Promise<CheckResult> {
  const name = 'bedrock quotas';
  const quotas: ServiceQuota[] = [];
  try {
    for await (const page of paginateListServiceQuotas({ client: deps.serviceQuotas, pageSize: 100 }, { ServiceCode: 'bedrock' })) {
      quotas.push(...(page.Quotas ?? []));
    }
  } catch (error) {
    return problem(
      name,
      `Service Quotas ListServiceQuotas (bedrock) failed: ${errorText(error)}`,
      isAccessDenied(error) ? 'The credentials need servicequotas:ListServiceQuotas.' : 'Run the doctor again.',
    );
  }
  const found = modelQuotas(modelId, quotas);
  if (found.length === 0) return ok(name, `no per-minute quota named for ${modelId} (see Service Quotas, Amazon Bedrock)`);
  const zero = found.filter((quota) => (quota.Value ?? 0) <= 0);
  const listed = found.map((quota) => `${quota.QuotaName}: ${count(quota.Value ?? 0)}`).join('; ');
  if (zero.length > 0) {
    return problem(
      name,
      `the account may make no call to ${modelId}: ${zero.map((quota) => `${quota.QuotaName} is 0`).join('; ')}`,
      `Request an increase in Service Quotas (Amazon Bedrock, ${zero.map((quota) => quota.QuotaCode).join(', ')}); if it is not adjustable, use the limit increase form the Bedrock quotas page links.`,
    );
  }
  return ok(name, listed);
}
