// `npm run doctor` against the local cloud's stack: the CLI with the standard AWS chain pointed at
// the local endpoints, then the checks with clients of their own for each broken state.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { STSClient } from '@aws-sdk/client-sts';
import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { PutSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { BatchDeleteImageCommand, ECRClient } from '@aws-sdk/client-ecr';
import { runDoctor, type CheckResult, type DoctorDeps } from '../../scripts/doctor/checks.ts';
import { parseEcrImage } from '../../infra/image-uri.ts';
import { BOT_TOKEN, SIGNING_SECRET, startTestStack, type TestStack } from '../support/local-stack.ts';
import { LOCAL_CREDENTIALS } from '../support/dynamo.ts';

let stack: TestStack;
let deps: DoctorDeps;
before(async () => {
  stack = await startTestStack();
  const endpoints = stack.cloud.deployment.variables;
  // The operator's clients: a key the local IAM did not issue.
  const config = { region: stack.cloud.env.AWS_REGION, credentials: LOCAL_CREDENTIALS };
  deps = {
    stackName: stack.cloud.deployment.stackName,
    sts: new STSClient({ ...config, endpoint: endpoints.AWS_ENDPOINT_URL_STS }),
    cloudFormation: new CloudFormationClient({ ...config, endpoint: endpoints.AWS_ENDPOINT_URL_CLOUDFORMATION }),
    secrets: new SecretsManagerClient({ ...config, endpoint: endpoints.AWS_ENDPOINT_URL_SECRETS_MANAGER }),
    bedrock: new BedrockRuntimeClient({ ...config, endpoint: stack.bedrock.endpoint }),
    ecr: new ECRClient({ ...config, endpoint: endpoints.AWS_ENDPOINT_URL_ECR }),
    slackApiUrl: stack.slack.apiUrl,
    fetch,
    timeoutMs: 5000,
  };
});
after(async () => {
  for (const client of [deps?.sts, deps?.cloudFormation, deps?.secrets, deps?.bedrock, deps?.ecr]) client?.destroy();
  await stack?.stop();
});

const byCheck = (results: CheckResult[]) => Object.fromEntries(results.map((r) => [r.check, r]));
const problems = (results: CheckResult[]) => results.filter((r) => r.status !== 'ok').map((r) => r.check);
const putSecret = (value: object) =>
  deps.secrets.send(new PutSecretValueCommand({ SecretId: stack.cloud.names.slackSecretArn, SecretString: JSON.stringify(value) }));

test('doctor: a healthy stack passes every check, through the CLI and the standard AWS chain', async () => {
  stack.bedrock.script({ text: 'H' });
  const cli = ['--import', 'tsx', 'scripts/doctor/main.ts', '--stack', deps.stackName, '--timeout-seconds', '60'];
  // A failed check exits 1: its output says which.
  const { stdout, exitCode } = await promisify(execFile)(process.execPath, cli, {
    env: {
      PATH: process.env.PATH,
      AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
      AWS_REGION: stack.cloud.env.AWS_REGION,
      ...stack.cloud.deployment.variables,
      AWS_ENDPOINT_URL_BEDROCK_RUNTIME: stack.bedrock.endpoint,
      SLACK_API_URL: stack.slack.apiUrl,
    },
  }).then(
    (out) => ({ ...out, exitCode: 0 }),
    (error: { stdout: string; code: number }) => ({ stdout: error.stdout, exitCode: error.code }),
  );
  const lines = stdout.trim().split('\n');
  assert.deepEqual(
    lines.map((line) => line.split(/\s+/).slice(0, 2).join(' ')),
    ['ok credentials', 'ok stack', 'ok slack', 'ok webhook', 'ok bedrock', 'ok sandbox'],
    stdout,
  );
  assert.match(stdout, /account 000000000000 as arn:aws:iam::000000000000:user\/operator/);
  assert.match(stdout, /401 to an unsigned request/);
  assert.equal(exitCode, 0);
  const converse = stack.bedrock.requests.at(-1)!;
  assert.equal(converse.operation, 'converse');
});

test('doctor: the Slack secret as the deploy left it: the generated signing secret and the placeholder token', async () => {
  try {
    await putSecret({ signingSecret: 'Q9xGeneratedAtDeployXyZ0123456789', botToken: 'xoxb-replace-me' });
    stack.bedrock.script({ text: 'H' });
    const results = await runDoctor(deps);
    assert.deepEqual(problems(results), ['slack secret'], JSON.stringify(results));
    const secret = byCheck(results)['slack secret']!;
    assert.match(secret.detail, /placeholder xoxb-replace-me; the signing secret is still the random one the deploy generated/);
    assert.match(secret.fix!, /aws secretsmanager put-secret-value --secret-id Threadwork\/SlackCredentials/);
    // A token Slack does not know.
    await putSecret({ signingSecret: SIGNING_SECRET, botToken: 'xoxb-from-another-app' });
    stack.bedrock.script({ text: 'H' });
    const refused = byCheck(await runDoctor(deps))['slack secret']!;
    assert.equal(refused.status, 'problem');
    assert.match(refused.detail, /Slack refuses the bot token \(auth\.test: invalid_auth\)/);
  } finally {
    await putSecret({ signingSecret: SIGNING_SECRET, botToken: BOT_TOKEN });
  }
});

test('doctor: a model the account is not subscribed to says how to make the first call', async () => {
  stack.bedrock.script({
    error: {
      type: 'AccessDeniedException',
      message:
        'Model access is denied due to IAM user or service role is not authorized to perform the required AWS Marketplace actions (aws-marketplace:ViewSubscriptions, aws-marketplace:Subscribe) to enable access to this model.',
    },
  });
  const results = await runDoctor(deps);
  assert.deepEqual(problems(results), ['bedrock']);
  const bedrock = byCheck(results).bedrock!;
  assert.match(bedrock.detail, /AccessDeniedException: Model access is denied/);
  assert.match(bedrock.fix!, /`aws-marketplace:Subscribe` and `aws-marketplace:ViewSubscriptions`/);
});

test('doctor: a missing sandbox image, and a stack that does not exist', async () => {
  const outputs = byCheck(await (stack.bedrock.script({ text: 'H' }), runDoctor(deps)));
  assert.equal(outputs['sandbox image']!.status, 'ok');
  const imageUri = /\S+dkr\.ecr\S+/.exec(outputs['sandbox image']!.detail)![0];
  const image = parseEcrImage(imageUri)!;
  await deps.ecr.send(new BatchDeleteImageCommand({ repositoryName: image.repositoryName, imageIds: [{ imageTag: image.tag }] }));
  stack.bedrock.script({ text: 'H' });
  const results = await runDoctor(deps);
  assert.deepEqual(problems(results), ['sandbox image']);
  assert.match(byCheck(results)['sandbox image']!.detail, /ImageNotFoundException/);
  assert.match(byCheck(results)['sandbox image']!.fix!, /deploy again/);

  const elsewhere = await runDoctor({ ...deps, stackName: 'NotDeployed' });
  assert.deepEqual(
    elsewhere.map((r) => `${r.status} ${r.check}`),
    ['ok credentials', 'problem stack', 'skipped slack secret', 'skipped webhook', 'skipped bedrock', 'skipped sandbox image'],
  );
  assert.match(byCheck(elsewhere).stack!.detail, /no stack NotDeployed in us-east-1/);
});
