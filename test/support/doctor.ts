// `npm run doctor` against a local test stack: its checks with clients of the operator (a key the
// local IAM did not issue) pointed at the local cloud's endpoints, and its CLI with the standard AWS
// chain pointed there through the environment.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { STSClient } from '@aws-sdk/client-sts';
import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { ECRClient } from '@aws-sdk/client-ecr';
import { ECSClient } from '@aws-sdk/client-ecs';
import { IAMClient } from '@aws-sdk/client-iam';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { S3Client } from '@aws-sdk/client-s3';
import { ServiceQuotasClient } from '@aws-sdk/client-service-quotas';
import { SNSClient } from '@aws-sdk/client-sns';
import type { CheckResult, DoctorDeps } from '../../scripts/doctor/checks.ts';
import type { DoctorClients } from '../../scripts/doctor/deps.ts';
import type { TestStack } from './local-stack.ts';
import { LOCAL_CREDENTIALS } from './dynamo.ts';

export function doctorDeps(stack: TestStack): DoctorDeps & { destroy(): void } {
  const endpoints = stack.cloud.deployment.variables;
  const config = (endpoint: string | undefined) => ({ region: stack.cloud.env.AWS_REGION, credentials: LOCAL_CREDENTIALS, endpoint });
  const clients: DoctorClients = {
    sts: new STSClient(config(endpoints.AWS_ENDPOINT_URL_STS)),
    cloudFormation: new CloudFormationClient(config(endpoints.AWS_ENDPOINT_URL_CLOUDFORMATION)),
    secrets: new SecretsManagerClient(config(endpoints.AWS_ENDPOINT_URL_SECRETS_MANAGER)),
    bedrock: new BedrockRuntimeClient(config(stack.bedrock.endpoint)),
    ecr: new ECRClient(config(endpoints.AWS_ENDPOINT_URL_ECR)),
    ecs: new ECSClient(config(endpoints.AWS_ENDPOINT_URL_ECS)),
    iam: new IAMClient(config(endpoints.AWS_ENDPOINT_URL_IAM)),
    lambda: new LambdaClient(config(endpoints.AWS_ENDPOINT_URL_LAMBDA)),
    cloudWatch: new CloudWatchClient(config(endpoints.AWS_ENDPOINT_URL_CLOUDWATCH)),
    serviceQuotas: new ServiceQuotasClient(config(endpoints.AWS_ENDPOINT_URL_SERVICE_QUOTAS)),
    sns: new SNSClient(config(endpoints.AWS_ENDPOINT_URL_SNS)),
    s3: new S3Client({ ...config(endpoints.AWS_ENDPOINT_URL_S3), forcePathStyle: true }),
  };
  return {
    ...clients,
    stackName: stack.cloud.deployment.stackName,
    slackApiUrl: stack.slack.apiUrl,
    teamsTokenUrl: stack.teams.tokenUrl,
    fetch,
    timeoutMs: 60_000,
    sandbox: { run: true, timeoutMs: 60_000, pollMs: 100 },
    now: Date.now,
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    destroy() {
      for (const client of Object.values(clients)) client.destroy();
    },
  };
}

/** The operator's environment for the CLI: the standard AWS chain, pointed at the local cloud. */
export function operatorEnvironment(stack: TestStack): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
    AWS_REGION: stack.cloud.env.AWS_REGION!,
    ...stack.cloud.deployment.variables,
    AWS_S3_FORCE_PATH_STYLE: 'true',
    AWS_ENDPOINT_URL_BEDROCK_RUNTIME: stack.bedrock.endpoint,
    SLACK_API_URL: stack.slack.apiUrl,
    TEAMS_TOKEN_URL: stack.teams.tokenUrl,
  };
}

/** Runs `npm run doctor` (its script) with these arguments and this environment only. */
export async function runDoctorCli(
  args: string[],
  env: Record<string, string>,
): Promise<{ stdout: string; stderr: string; exitCode: number }> {
  return promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/doctor/main.ts', ...args], { env }).then(
    (out) => ({ ...out, exitCode: 0 }),
    (error: { stdout: string; stderr: string; code: number }) => ({ stdout: error.stdout, stderr: error.stderr, exitCode: error.code }),
  );
}

export const byCheck = (results: CheckResult[]) => Object.fromEntries(results.map((r) => [r.check, r]));
export const problems = (results: CheckResult[]) => results.filter((r) => r.status === 'problem').map((r) => r.check);
/** `ok credentials`, `problem stack`, ...: each line's status and check. */
export const statusLines = (stdout: string) =>
  stdout
    .trim()
    .split('\n')
    .filter((line) => /^(ok|problem|skipped) /.test(line))
    .map((line) => line.slice(0, 8).trim() + ' ' + line.slice(8).split(/\s{2,}/)[0]);
