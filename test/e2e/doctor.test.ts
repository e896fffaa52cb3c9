// `npm run doctor` against the local cloud's stack: the CLI with the standard AWS chain pointed at
// the local endpoints, then the checks with clients of their own, each passing and then failing in
// a state an operator meets on AWS (set through the local cloud's own APIs or the real AWS ones).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PutSecretValueCommand } from '@aws-sdk/client-secrets-manager';
import { BatchDeleteImageCommand } from '@aws-sdk/client-ecr';
import { SetAlarmStateCommand, DescribeAlarmsCommand } from '@aws-sdk/client-cloudwatch';
import { DeleteObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { runDoctor, type DoctorDeps } from '../../scripts/doctor/checks.ts';
import { parseEcrImage } from '../../infra/image-uri.ts';
import { resolveCloudFormation } from '../../packages/local-cloud/src/resources.ts';
import { FARGATE_VCPU_QUOTA, LAMBDA_CONCURRENCY_QUOTA } from '../../infra/quota-codes.ts';
import { DEFAULT_MODEL_ID } from '../../shared/defaults.ts';
import { BOT_TOKEN, SIGNING_SECRET, startTestStack, writeStackFile, type TestStack } from '../support/local-stack.ts';
import { byCheck, doctorDeps, operatorEnvironment, problems, runDoctorCli, statusLines } from '../support/doctor.ts';

const ALARM_EMAIL = 'ops@example.com';
const EVERY_CHECK = [
  'credentials',
  'stack',
  'settings.json',
  'slack secret',
  'slack webhook',
  'agent role',
  'bedrock',
  'bedrock quotas',
  'sandbox image',
  'sandbox',
  'fargate quota',
  'lambda concurrency',
  'alarms',
  'function errors',
  'alarm email',
];

let stack: TestStack;
let deps: DoctorDeps & { destroy(): void };
let topicArn: string;
before(async () => {
  stack = await startTestStack({ alarmEmail: ALARM_EMAIL });
  deps = doctorDeps(stack);
  const outputs = (stack.cloud.template as { Outputs?: Record<string, { Value: unknown }> }).Outputs ?? {};
  assert.ok(outputs.AlarmTopicArn);
  topicArn = String(resolveCloudFormation(stack.cloud.template, outputs.AlarmTopicArn.Value));
});
after(async () => {
  deps?.destroy();
  await stack?.stop();
});

const putSecret = (value: object) =>
  deps.secrets.send(new PutSecretValueCommand({ SecretId: stack.cloud.names.slackSecretArn, SecretString: JSON.stringify(value) }));
/** The doctor's checks, with the model scripted to answer its one-token call. */
const doctor = () => (stack.bedrock.script({ text: 'H' }), runDoctor(deps));

test('doctor: no AWS credentials at all (and no Region) is a line about credentials, not the Region', async () => {
  const home = mkdtempSync(join(tmpdir(), 'doctor-home-'));
  try {
    const { stdout, exitCode } = await runDoctorCli([], {
      PATH: process.env.PATH ?? '',
      HOME: home,
      AWS_CONFIG_FILE: join(home, 'config'),
      AWS_SHARED_CREDENTIALS_FILE: join(home, 'credentials'),
      // No instance role to ask: this machine is not an EC2 instance.
      AWS_EC2_METADATA_DISABLED: 'true',
    });
    assert.equal(exitCode, 1);
    const [first, ...rest] = statusLines(stdout);
    assert.equal(first, 'problem credentials');
    assert.match(stdout, /no AWS credentials found/);
    assert.match(stdout, /what to do: Configure AWS credentials/);
    assert.doesNotMatch(stdout.split('\n').slice(0, 2).join('\n'), /Region/);
    assert.deepEqual(new Set(rest.map((line) => line.split(' ')[0])), new Set(['skipped']));
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

test('doctor: an alarm email nobody confirmed is a problem; once confirmed the whole stack passes, through the CLI', async () => {
  const pending = byCheck(await doctor())['alarm email']!;
  assert.equal(pending.status, 'problem');
  assert.match(pending.detail, new RegExp(`not confirmed: ${ALARM_EMAIL} \\(email\\)`));
  assert.match(pending.fix!, /AWS Notification - Subscription Confirmation/);

  // The recipient follows the link in SNS's mail.
  stack.cloud.deployment.sns.confirm(topicArn, ALARM_EMAIL);
  stack.bedrock.script({ text: 'H' });
  const cli = ['--stack', deps.stackName, '--timeout-seconds', '60', '--sandbox-timeout-seconds', '120'];
  const { stdout, stderr, exitCode } = await runDoctorCli(cli, operatorEnvironment(stack));
  assert.deepEqual(
    statusLines(stdout),
    EVERY_CHECK.map((check) => `ok ${check}`),
    `${stdout}\n${stderr}`,
  );
  assert.match(stdout, /account 000000000000 as arn:aws:iam::000000000000:user\/operator/);
  assert.match(stdout, /401 to an unsigned request/);
  assert.match(stdout, /may call global\.anthropic\.claude-sonnet-4-5/);
  assert.match(stdout, /Global cross-Region model inference tokens per minute for Anthropic Claude Sonnet 4\.5 V1: 5,000,000/);
  assert.doesNotMatch(stdout, /1M Context Length|Sonnet 4 V1/);
  assert.match(stdout, /a sandbox task ran .* after RunTask/);
  assert.match(stdout, new RegExp(`the alarms reach ${ALARM_EMAIL} \\(email\\)`));
  assert.equal(exitCode, 0);
  assert.equal(stack.bedrock.requests.at(-1)!.operation, 'converse');
  // The round trip's task was stopped again.
  const tasks = [...stack.cloud.ecs.tasks.values()];
  assert.ok(tasks.length >= 1);
  assert.ok(tasks.every((task) => task.desiredStatus === 'STOPPED'));
});

test('doctor --local: the CLI finds the running local stack in its stack file, with nothing else in its environment', async (t) => {
  const stackFile = writeStackFile(stack, t);
  stack.cloud.deployment.sns.confirm(topicArn, ALARM_EMAIL);
  stack.bedrock.script({ text: 'H' });
  const { stdout, stderr, exitCode } = await runDoctorCli(['--local', '--skip-sandbox', '--timeout-seconds', '60'], {
    PATH: process.env.PATH ?? '',
    LOCAL_STACK_FILE: stackFile,
  });
  assert.deepEqual(
    statusLines(stdout),
    EVERY_CHECK.map((check) => `${check === 'sandbox' ? 'skipped' : 'ok'} ${check}`),
    `${stdout}\n${stderr}`,
  );
  assert.equal(exitCode, 0);
  assert.equal(stack.bedrock.requests.at(-1)!.operation, 'converse');
});

test('doctor: --skip-sandbox starts no task', async () => {
  const before = stack.cloud.ecs.tasks.size;
  const results = await (stack.bedrock.script({ text: 'H' }), runDoctor({ ...deps, sandbox: { ...deps.sandbox, run: false } }));
  assert.equal(byCheck(results).sandbox!.status, 'skipped');
  assert.deepEqual(problems(results), []);
  assert.equal(stack.cloud.ecs.tasks.size, before);
});

test('doctor: a stack whose last update rolled back is a problem, and the rest is still checked', async () => {
  try {
    stack.cloud.deployment.setStatus('UPDATE_ROLLBACK_COMPLETE');
    const results = await doctor();
    assert.deepEqual(problems(results), ['stack']);
    assert.match(byCheck(results).stack!.detail, /is UPDATE_ROLLBACK_COMPLETE/);
    assert.match(byCheck(results).stack!.fix!, /failed and was rolled back: the stack runs the version before it.*describe-stack-events/);
    assert.equal(results.length, EVERY_CHECK.length);
  } finally {
    stack.cloud.deployment.setStatus('CREATE_COMPLETE');
  }
});

test('doctor: an invalid settings.json in the bucket', async () => {
  const key = { Bucket: stack.cloud.names.bucket, Key: 'settings.json' };
  try {
    await deps.s3.send(new PutObjectCommand({ ...key, Body: '{"limits": {"maxConcurrentRuns": -3}' }));
    let results = await doctor();
    assert.deepEqual(problems(results), ['settings.json']);
    assert.match(byCheck(results)['settings.json']!.detail, /settings\.json is not valid JSON.*nobody may use the agent/);
    await deps.s3.send(new PutObjectCommand({ ...key, Body: JSON.stringify({ limits: { maxConcurrentRuns: -3 } }) }));
    results = await doctor();
    assert.deepEqual(problems(results), ['settings.json']);
    assert.match(byCheck(results)['settings.json']!.detail, /limits\.maxConcurrentRuns/);
    assert.match(byCheck(results)['settings.json']!.fix!, /aws s3 cp s3:\/\/.*\/settings\.json/);
  } finally {
    await deps.s3.send(new DeleteObjectCommand(key));
  }
});

test('doctor: the Slack secret as the deploy left it: the generated signing secret and the placeholder token', async () => {
  try {
    await putSecret({ signingSecret: 'Q9xGeneratedAtDeployXyZ0123456789', botToken: 'xoxb-replace-me' });
    const results = await doctor();
    assert.deepEqual(problems(results), ['slack secret'], JSON.stringify(results));
    const secret = byCheck(results)['slack secret']!;
    assert.match(secret.detail, /placeholder xoxb-replace-me; the signing secret is still the random one the deploy generated/);
    assert.match(secret.fix!, /aws secretsmanager put-secret-value --secret-id Threadwork\/SlackCredentials/);
    // A token Slack does not know.
    await putSecret({ signingSecret: SIGNING_SECRET, botToken: 'xoxb-from-another-app' });
    const refused = byCheck(await doctor())['slack secret']!;
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

test("doctor: the agent's role may not call the model (a policy denies it), which the operator's own call cannot show", async () => {
  const agentRole = stack.cloud.functionRoles.agentStep;
  try {
    // As a permissions boundary or an organization's policy would: a Deny on the role.
    await stack.cloud.redeploy({
      transformTemplate: (template) => {
        template.Resources.DenyBedrock = {
          Type: 'AWS::IAM::Policy',
          Properties: {
            PolicyName: 'DenyBedrock',
            Roles: [{ Ref: agentRole }],
            PolicyDocument: { Version: '2012-10-17', Statement: [{ Effect: 'Deny', Action: 'bedrock:*', Resource: '*' }] },
          },
        };
        return template;
      },
    });
    const results = await doctor();
    assert.deepEqual(problems(results), ['agent role']);
    const role = byCheck(results)['agent role']!;
    assert.match(
      role.detail,
      /may not call global\.anthropic\.claude-sonnet-4-5.*bedrock:InvokeModel on arn:aws:bedrock:local:000000000000:inference-profile\/.* \(explicitDeny\)/,
    );
    assert.match(role.fix!, /permissions boundary or a service control policy/);
    assert.equal(byCheck(results).bedrock!.status, 'ok');
  } finally {
    await stack.cloud.redeploy({});
    stack.cloud.deployment.setStatus('CREATE_COMPLETE');
  }
  assert.equal(byCheck(await doctor())['agent role']!.status, 'ok');
});

test('doctor: quotas below what the deployment needs: Bedrock tokens, Lambda concurrency, Fargate vCPUs', async () => {
  const { quotas } = stack.cloud.deployment;
  const tokensQuota = 'Global cross-Region model inference tokens per minute for Anthropic Claude Sonnet 4.5 V1';
  assert.ok(DEFAULT_MODEL_ID.startsWith('global.anthropic.claude-sonnet-4-5'));
  try {
    quotas.setQuota('bedrock', tokensQuota, 0);
    // A new account's: 10 concurrent executions, 6 vCPUs.
    quotas.setQuota('lambda', LAMBDA_CONCURRENCY_QUOTA, 10);
    quotas.setQuota('fargate', FARGATE_VCPU_QUOTA, 6);
    const results = await doctor();
    assert.deepEqual(problems(results), ['bedrock quotas', 'fargate quota', 'lambda concurrency']);
    const found = byCheck(results);
    assert.match(
      found['bedrock quotas']!.detail,
      new RegExp(`may make no call to ${DEFAULT_MODEL_ID.replace(/\./g, '\\.')}: ${tokensQuota} is 0`),
    );
    assert.match(found['bedrock quotas']!.fix!, /Request an increase in Service Quotas \(Amazon Bedrock, L-[0-9A-F]{8}\)/);
    assert.match(
      found['lambda concurrency']!.detail,
      /at most 10 function invocations at once.*30 runs at once \(limits\.maxConcurrentRuns\) need about 60/,
    );
    assert.match(
      found['lambda concurrency']!.fix!,
      /Concurrent executions, L-B99A9384.*lower limits\.maxConcurrentRuns in settings\.json to 5/,
    );
    assert.match(
      found['fargate quota']!.detail,
      /6 Fargate vCPUs hold 6 sandboxes of 1 vCPU at once; limits\.maxRunningSandboxes allows 40/,
    );
    assert.match(found['fargate quota']!.fix!, /L-3032A538.*lower limits\.maxRunningSandboxes in settings\.json to 6/);
  } finally {
    quotas.setQuota('bedrock', tokensQuota, 5_000_000);
    quotas.setQuota('lambda', LAMBDA_CONCURRENCY_QUOTA, 1000);
    quotas.setQuota('fargate', FARGATE_VCPU_QUOTA, 4000);
  }
});

test('doctor: an alarm in ALARM says what it means and where to look', async () => {
  const alarmName = (
    await deps.cloudWatch.send(new DescribeAlarmsCommand({ ActionPrefix: topicArn, AlarmNamePrefix: 'local-AlarmsInboxOldestMessage' }))
  ).MetricAlarms?.[0]?.AlarmName;
  assert.ok(alarmName);
  try {
    // SetAlarmState: what AWS offers to try an alarm.
    await deps.cloudWatch.send(
      new SetAlarmStateCommand({ AlarmName: alarmName, StateValue: 'ALARM', StateReason: 'Threshold Crossed: 1 datapoint [900.0]' }),
    );
    const results = await doctor();
    assert.deepEqual(problems(results), ['alarms']);
    assert.match(
      byCheck(results).alarms!.detail,
      new RegExp(`1 in ALARM: ${alarmName} \\(Threshold Crossed: 1 datapoint \\[900\\.0\\]\\)`),
    );
    assert.match(byCheck(results).alarms!.fix!, /The oldest prompt in the inbox has waited over .*See the dispatch function logs/);
  } finally {
    await deps.cloudWatch.send(new SetAlarmStateCommand({ AlarmName: alarmName, StateValue: 'OK', StateReason: 'test over' }));
  }
});

test('doctor: a missing sandbox image fails the round trip as Fargate would; and a stack that does not exist', async () => {
  const outputs = byCheck(await doctor());
  assert.equal(outputs['sandbox image']!.status, 'ok');
  const imageUri = /\S+dkr\.ecr\S+/.exec(outputs['sandbox image']!.detail)![0];
  const image = parseEcrImage(imageUri)!;
  await deps.ecr.send(new BatchDeleteImageCommand({ repositoryName: image.repositoryName, imageIds: [{ imageTag: image.tag }] }));
  const results = await doctor();
  assert.deepEqual(problems(results), ['sandbox image', 'sandbox']);
  assert.match(byCheck(results)['sandbox image']!.detail, /ImageNotFoundException/);
  assert.match(byCheck(results)['sandbox image']!.fix!, /deploy again/);
  assert.match(byCheck(results).sandbox!.detail, /stopped before it ran: CannotPullContainerError: .*not found/);
  assert.match(byCheck(results).sandbox!.fix!, /could not pull its image/);

  const elsewhere = await runDoctor({ ...deps, stackName: 'NotDeployed' });
  assert.deepEqual(
    elsewhere.slice(0, 3).map((r) => `${r.status} ${r.check}`),
    ['ok credentials', 'problem stack', 'skipped settings.json'],
  );
  assert.ok(elsewhere.slice(2).every((r) => r.status === 'skipped' && r.detail === 'needs the stack'));
  assert.match(byCheck(elsewhere).stack!.detail, /no stack NotDeployed in us-east-1/);
});

// Last: a function's errors stay in its metric for the rest of the file.
test('doctor: a function that failed lately is named, with where to read why', async () => {
  assert.equal(byCheck(await doctor())['function errors']!.status, 'ok');
  await assert.rejects(stack.cloud.handlers.sandboxStep({ action: 'not-a-step' }), /Invalid sandbox step event/);
  const errors = byCheck(await doctor())['function errors']!;
  assert.equal(errors.status, 'problem');
  assert.match(errors.detail, /failed in the last 24 hours: \S*SandboxStep\S* \(1\)/);
  assert.match(errors.fix!, /aws logs tail \/aws\/lambda\/<function> --since 24h/);
});
