// `npm run doctor -- --stack <name> [--region <region>]`: checks a deployed stack with the
// operator's credentials from the standard AWS chain (AWS_PROFILE, SSO, environment; AWS_ENDPOINT_URL_*
// too), prints one line per check, and exits 1 when any check found a problem.
import { parseArgs } from 'node:util';
import { STSClient } from '@aws-sdk/client-sts';
import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { ECRClient } from '@aws-sdk/client-ecr';
import { DEFAULT_STACK_NAME } from '../../infra/stack-names.ts';
import { formatReport, runDoctor } from './checks.ts';

const { values } = parseArgs({
  options: {
    stack: { type: 'string', default: DEFAULT_STACK_NAME },
    region: { type: 'string' },
    'timeout-seconds': { type: 'string', default: '10' },
  },
});
const config = { region: values.region };
const clients = {
  sts: new STSClient(config),
  cloudFormation: new CloudFormationClient(config),
  secrets: new SecretsManagerClient(config),
  bedrock: new BedrockRuntimeClient(config),
  ecr: new ECRClient(config),
};
const results = await runDoctor({
  stackName: values.stack ?? DEFAULT_STACK_NAME,
  ...clients,
  slackApiUrl: process.env.SLACK_API_URL ?? 'https://slack.com/api/',
  fetch,
  timeoutMs: Number(values['timeout-seconds']) * 1000,
});
for (const client of Object.values(clients)) client.destroy();
console.log(formatReport(results));
process.exitCode = results.some((r) => r.status !== 'ok') ? 1 : 0;
