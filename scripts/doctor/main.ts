// `npm run doctor -- --stack <name> [--region <region>]`: checks a deployed stack with the
// operator's credentials from the standard AWS chain (AWS_PROFILE, SSO, environment; AWS_ENDPOINT_URL_*
// too), prints one line per check, and exits 1 when any check found a problem (a check skipped for
// want of an earlier one comes with that one's problem).
import { setTimeout as sleep } from 'node:timers/promises';
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
import { DEFAULT_STACK_NAME } from '../../infra/stack-names.ts';
import { formatReport, runDoctor } from './checks.ts';
import type { DoctorClients } from './deps.ts';
import { LocalStackError, openLocalStack } from '../../packages/local-cloud/src/stack-file.ts';
import { parseCommandLine } from '../../shared/support/cli-args.ts';

const USAGE = `usage: npm run doctor -- [--stack NAME | --local] [--region REGION] [options]
Checks a deployed stack with your AWS credentials (the standard AWS chain: AWS_PROFILE, SSO,
AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY), one line per check, and exits 1 when one found a problem.
  --stack NAME                   the stack (default ${DEFAULT_STACK_NAME})
  --local                        the local stack instead (npm start; found in .local/stack.json, or
                                 the file LOCAL_STACK_FILE names)
  --region REGION                its Region (default: the AWS chain's)
  --timeout-seconds N            how long the webhooks, Slack and Microsoft may take (default 10)
  --sandbox-timeout-seconds N    how long a sandbox task may take to run (default 180)
  --skip-sandbox                 do not start a sandbox task (the round trip costs a minute of Fargate)
  -h, --help                     this text
docs/operations.md, "Checking a deployment", says what each check does and the permissions it needs.`;

const { values } = parseCommandLine('doctor', USAGE, {
  options: {
    stack: { type: 'string' },
    local: { type: 'boolean', default: false },
    region: { type: 'string' },
    'timeout-seconds': { type: 'string', default: '10' },
    'sandbox-timeout-seconds': { type: 'string', default: '180' },
    'skip-sandbox': { type: 'boolean', default: false },
  },
});
if (values.local && values.stack !== undefined) {
  console.error('--local and --stack name different stacks: give one (npm run doctor -- --help lists the options)');
  process.exit(2);
}
const seconds = (name: 'timeout-seconds' | 'sandbox-timeout-seconds') => {
  const value = Number(values[name]);
  if (!(value > 0)) {
    console.error(`--${name} must be a positive number, got ${JSON.stringify(values[name])}`);
    process.exit(2);
  }
  return value * 1000;
};
const timeoutMs = seconds('timeout-seconds');
const sandboxTimeoutMs = seconds('sandbox-timeout-seconds');

/** --local: the running local stack, reached as a deployed one through the variables npm start wrote. */
async function localStack(): Promise<string> {
  try {
    const local = await openLocalStack();
    Object.assign(process.env, local.env, {
      ...(local.urls.model ? { AWS_ENDPOINT_URL_BEDROCK_RUNTIME: local.urls.model } : {}),
      ...(local.urls.slackApi ? { SLACK_API_URL: local.urls.slackApi } : {}),
      ...(local.urls.teamsToken ? { TEAMS_TOKEN_URL: local.urls.teamsToken } : {}),
    });
    return local.stackName;
  } catch (error) {
    if (!(error instanceof LocalStackError)) throw error;
    console.error(error.message);
    process.exit(2);
  }
}
const stackName = values.local ? await localStack() : (values.stack ?? DEFAULT_STACK_NAME);

const config = { region: values.region };
const clients: DoctorClients = {
  sts: new STSClient(config),
  cloudFormation: new CloudFormationClient(config),
  secrets: new SecretsManagerClient(config),
  bedrock: new BedrockRuntimeClient(config),
  ecr: new ECRClient(config),
  ecs: new ECSClient(config),
  iam: new IAMClient(config),
  lambda: new LambdaClient(config),
  cloudWatch: new CloudWatchClient(config),
  serviceQuotas: new ServiceQuotasClient(config),
  sns: new SNSClient(config),
  s3: new S3Client({ ...config, forcePathStyle: process.env.AWS_S3_FORCE_PATH_STYLE === 'true' }),
};
const results = await runDoctor({
  stackName,
  ...clients,
  slackApiUrl: process.env.SLACK_API_URL ?? 'https://slack.com/api/',
  teamsTokenUrl: process.env.TEAMS_TOKEN_URL,
  fetch,
  timeoutMs,
  sandbox: { run: !values['skip-sandbox'], timeoutMs: sandboxTimeoutMs, pollMs: 3000 },
  now: Date.now,
  sleep: (ms) => sleep(ms),
});
for (const client of Object.values(clients)) client.destroy();
console.log(formatReport(results));
process.exitCode = results.some((r) => r.status === 'problem') ? 1 : 0;
