// Deployment settings read from CDK context, and how a model id maps to Bedrock resources.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { PROJECT_ROOT } from '../../infra/function-entries.ts';
import { parseModelId } from '../../infra/constructs/bedrock-access.ts';
import { isImageReference, parseEcrImage } from '../../infra/image-uri.ts';
import { CONTEXT_KEYS, ContextError, DEFAULT_SETTINGS, readSettings } from '../../infra/settings.ts';
import { runApp } from './synth.ts';

const settingsFrom = (context: Record<string, unknown>) => readSettings(new App({ context }).node);

test('defaults when the context says nothing', () => {
  assert.deepEqual(settingsFrom({}), {
    modelId: 'global.anthropic.claude-sonnet-4-5-20250929-v1:0',
    logRetentionDays: 30,
    runTimeoutMinutes: 60,
    sandboxNetwork: 'isolated',
    sandboxAzs: 1,
    sandboxCpu: 1024,
    sandboxMemoryMiB: 2048,
    sandboxIdleMinutes: 5,
    chatPlatforms: ['slack', 'teams'],
    teamsMultiTenant: false,
    bundleAwsSdk: false,
    triggers: [],
    dailyCostAlarmUsd: 25,
    hookFunctions: [],
    reachAllowLoopback: false,
  });
  assert.deepEqual(settingsFrom({}), DEFAULT_SETTINGS);
});

test('alarm settings: an email address to notify and a daily cost threshold (also as -c strings); bad values are refused', () => {
  assert.equal(settingsFrom({ alarmEmail: 'ops@example.com' }).alarmEmail, 'ops@example.com');
  assert.equal('alarmEmail' in settingsFrom({}), false);
  for (const bad of ['', 'ops', 'ops@example', 'a@b.c,d@e.f', 'ops @example.com', 42]) {
    assert.throws(() => settingsFrom({ alarmEmail: bad }), /context alarmEmail must be one email address/, String(bad));
  }
  assert.equal(settingsFrom({ dailyCostAlarmUsd: '7.5' }).dailyCostAlarmUsd, 7.5);
  assert.equal(settingsFrom({ dailyCostAlarmUsd: 100 }).dailyCostAlarmUsd, 100);
  for (const bad of ['', 'ten', '0', '-5', 'Infinity', '1000001', true]) {
    assert.throws(
      () => settingsFrom({ dailyCostAlarmUsd: bad }),
      /context dailyCostAlarmUsd must be a number of US dollars above 0/,
      String(bad),
    );
  }
});

test('bundleAwsSdk: a boolean, also as the -c strings true and false; anything else is refused', () => {
  assert.equal(settingsFrom({ bundleAwsSdk: true }).bundleAwsSdk, true);
  assert.equal(settingsFrom({ bundleAwsSdk: 'true' }).bundleAwsSdk, true);
  assert.equal(settingsFrom({ bundleAwsSdk: 'false' }).bundleAwsSdk, false);
  assert.throws(() => settingsFrom({ bundleAwsSdk: 'yes' }), /context bundleAwsSdk must be true or false; got "yes"/);
  assert.throws(() => settingsFrom({ bundleAwsSdk: 1 }), /bundleAwsSdk/);
});

test('cdk.json states every deployment setting, with the defaults', () => {
  const { context } = JSON.parse(readFileSync(`${PROJECT_ROOT}cdk.json`, 'utf8')) as { context: Record<string, unknown> };
  for (const [key, value] of Object.entries(DEFAULT_SETTINGS)) assert.deepEqual(context[key], value, key);
  assert.deepEqual(settingsFrom(context), DEFAULT_SETTINGS);
});

test('sandbox settings: network mode, AZs, Fargate size and idle timeout, also as -c strings', () => {
  const settings = settingsFrom({
    sandboxNetwork: 'egress',
    sandboxAzs: '2',
    sandboxCpu: '2048',
    sandboxMemoryMiB: '8192',
    sandboxIdleMinutes: '30',
  });
  assert.equal(settings.sandboxNetwork, 'egress');
  assert.equal(settingsFrom({ sandboxNetwork: 'public' }).sandboxNetwork, 'public');
  assert.equal(settings.sandboxAzs, 2);
  assert.equal(settings.sandboxCpu, 2048);
  assert.equal(settings.sandboxMemoryMiB, 8192);
  assert.equal(settings.sandboxIdleMinutes, 30);
  // Every Fargate size at the edges of its range.
  for (const [cpu, memory] of [
    [256, 512],
    [256, 2048],
    [512, 4096],
    [4096, 30720],
    [8192, 61440],
    [16384, 122880],
  ]) {
    assert.equal(settingsFrom({ sandboxCpu: cpu, sandboxMemoryMiB: memory }).sandboxMemoryMiB, memory, `${cpu}/${memory}`);
  }
});

test('invalid sandbox settings fail the synth with a message naming the setting', () => {
  assert.throws(() => settingsFrom({ sandboxNetwork: 'open' }), /sandboxNetwork must be one of isolated, egress, public; got "open"/);
  assert.throws(() => settingsFrom({ sandboxAzs: 0 }), /sandboxAzs must be a whole number from 1 to 3/);
  assert.throws(() => settingsFrom({ sandboxAzs: '4' }), /sandboxAzs/);
  assert.throws(() => settingsFrom({ sandboxAzs: '' }), /sandboxAzs/);
  assert.throws(() => settingsFrom({ sandboxIdleMinutes: 0 }), /sandboxIdleMinutes must be a whole number from 1 to 120/);
  assert.throws(() => settingsFrom({ sandboxIdleMinutes: '121' }), /sandboxIdleMinutes/);
  assert.throws(() => settingsFrom({ sandboxIdleMinutes: 2.5 }), /sandboxIdleMinutes/);
  // Not a Fargate CPU value, and memory Fargate does not offer with the CPU (default or given).
  assert.throws(() => settingsFrom({ sandboxCpu: 1000 }), /sandboxCpu must be one of Fargate's CPU values 256, 512, 1024/);
  assert.throws(
    () => settingsFrom({ sandboxMemoryMiB: 1024 }),
    /sandboxMemoryMiB 1024 is not offered by Fargate with sandboxCpu 1024; use 2048 to 8192 in steps of 1024/,
  );
  assert.throws(() => settingsFrom({ sandboxMemoryMiB: 2500 }), /sandboxMemoryMiB 2500/);
  assert.throws(() => settingsFrom({ sandboxCpu: 256, sandboxMemoryMiB: 1536 }), /use 512, 1024, 2048/);
  assert.throws(() => settingsFrom({ sandboxCpu: 8192, sandboxMemoryMiB: 18432 }), /steps of 4096/);
  assert.throws(() => settingsFrom({ sandboxCpu: 'lots' }), /sandboxCpu/);
});

test('sandboxAzIds: 1 to 3 distinct AZ IDs, as a list or comma-separated; they set the count', () => {
  assert.deepEqual(settingsFrom({ sandboxAzIds: 'use1-az1, use1-az4' }).sandboxAzIds, ['use1-az1', 'use1-az4']);
  assert.equal(settingsFrom({ sandboxAzIds: 'use1-az1,use1-az4', sandboxAzs: 1 }).sandboxAzs, 2);
  assert.deepEqual(settingsFrom({ sandboxAzIds: ['apne1-az4'] }).sandboxAzIds, ['apne1-az4']);
  assert.equal(settingsFrom({}).sandboxAzIds, undefined);
  for (const bad of ['', 'us-east-1a', 'use1-az1,use1-az1', 'use1-az1,use1-az2,use1-az4,use1-az6', [], 3]) {
    assert.throws(
      () => settingsFrom({ sandboxAzIds: bad }),
      /sandboxAzIds must be 1 to 3 different AZ IDs such as use1-az1/,
      JSON.stringify(bad),
    );
  }
});

test('sandboxImageUri: a private ECR image in any mode; another registry only with egress', () => {
  const ecr = '123456789012.dkr.ecr.us-east-1.amazonaws.com/sandbox:v1';
  assert.equal(settingsFrom({ sandboxImageUri: ecr }).sandboxImageUri, ecr);
  assert.equal(settingsFrom({}).sandboxImageUri, undefined);
  const digest = `123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn/team/sandbox@sha256:${'a'.repeat(64)}`;
  assert.equal(settingsFrom({ sandboxImageUri: digest }).sandboxImageUri, digest);
  for (const uri of [
    'ghcr.io/acme/sandbox:1.2',
    'public.ecr.aws/acme/sandbox:latest',
    'node:22-bookworm-slim',
    'registry.example.com:5000/a/b',
  ]) {
    assert.equal(settingsFrom({ sandboxNetwork: 'egress', sandboxImageUri: uri }).sandboxImageUri, uri);
    // Public tasks pull from the internet as egress ones do.
    assert.equal(settingsFrom({ sandboxNetwork: 'public', sandboxImageUri: uri }).sandboxImageUri, uri);
    assert.throws(
      () => settingsFrom({ sandboxImageUri: uri }),
      /sandboxImageUri must be a private Amazon ECR image .* when sandboxNetwork is isolated/,
    );
  }
  for (const bad of ['', 'Sandbox:v1', 'acme/sandbox:', 'acme/sandbox:v1 --rm', `a/${'b'.repeat(260)}`, 42]) {
    assert.throws(
      () => settingsFrom({ sandboxNetwork: 'egress', sandboxImageUri: bad }),
      /sandboxImageUri must be a container image reference/,
    );
  }
});

test('image URIs: which are private ECR images, and their account, Region, repository and tag or digest', () => {
  assert.deepEqual(parseEcrImage('123456789012.dkr.ecr.eu-west-1.amazonaws.com/team/sandbox:v1'), {
    account: '123456789012',
    region: 'eu-west-1',
    repositoryName: 'team/sandbox',
    tag: 'v1',
  });
  const digest = `sha256:${'a'.repeat(64)}`;
  assert.equal(parseEcrImage(`123456789012.dkr.ecr.eu-west-1.amazonaws.com/sandbox@${digest}`)?.digest, digest);
  assert.deepEqual(parseEcrImage('123456789012.dkr.ecr-fips.us-gov-west-1.amazonaws.com/sandbox'), {
    account: '123456789012',
    region: 'us-gov-west-1',
    repositoryName: 'sandbox',
  });
  for (const other of ['public.ecr.aws/acme/sandbox:1', 'ghcr.io/acme/sandbox', '12345.dkr.ecr.us-east-1.amazonaws.com/x', 'sandbox:v1']) {
    assert.equal(parseEcrImage(other), undefined, other);
    assert.ok(isImageReference(other), other);
  }
});

test('numbers given as strings (cdk deploy -c key=value) are parsed', () => {
  const settings = settingsFrom({
    modelId: 'eu.anthropic.claude-sonnet-4-5-20250929-v1:0',
    logRetentionDays: '90',
    runTimeoutMinutes: '15',
  });
  assert.equal(settings.modelId, 'eu.anthropic.claude-sonnet-4-5-20250929-v1:0');
  assert.equal(settings.logRetentionDays, 90);
  assert.equal(settings.runTimeoutMinutes, 15);
});

test('invalid values fail the synth with a message naming the setting', () => {
  assert.throws(() => settingsFrom({ logRetentionDays: 31 }), /logRetentionDays must be one of 1, 3, 5/);
  assert.throws(() => settingsFrom({ logRetentionDays: 'a month' }), /logRetentionDays/);
  assert.throws(() => settingsFrom({ runTimeoutMinutes: 0 }), /runTimeoutMinutes/);
  assert.throws(() => settingsFrom({ runTimeoutMinutes: '1.5' }), /runTimeoutMinutes/);
  assert.throws(() => settingsFrom({ modelId: '' }), /modelId/);
  assert.throws(() => settingsFrom({ modelId: 'model/../../x' }), /modelId/);
});

test('model ids: cross-Region inference profiles and plain foundation models', () => {
  assert.deepEqual(parseModelId('global.anthropic.claude-sonnet-4-5-20250929-v1:0'), {
    profileScope: 'global',
    foundationModelId: 'anthropic.claude-sonnet-4-5-20250929-v1:0',
  });
  for (const scope of ['us', 'eu', 'apac', 'us-gov', 'jp', 'au']) {
    assert.equal(parseModelId(`${scope}.anthropic.claude-x-v1:0`).profileScope, scope);
    assert.equal(parseModelId(`${scope}.anthropic.claude-x-v1:0`).foundationModelId, 'anthropic.claude-x-v1:0');
  }
  assert.deepEqual(parseModelId('anthropic.claude-3-5-haiku-20241022-v1:0'), {
    foundationModelId: 'anthropic.claude-3-5-haiku-20241022-v1:0',
  });
});

test('chatPlatforms: Slack, Teams or both, as a list or comma-separated; teamsMultiTenant a boolean', () => {
  assert.deepEqual(settingsFrom({ chatPlatforms: 'teams' }).chatPlatforms, ['teams']);
  assert.deepEqual(settingsFrom({ chatPlatforms: 'slack, teams' }).chatPlatforms, ['slack', 'teams']);
  assert.deepEqual(settingsFrom({ chatPlatforms: ['slack'] }).chatPlatforms, ['slack']);
  for (const bad of ['', 'discord', 'slack,slack', []]) {
    assert.throws(() => settingsFrom({ chatPlatforms: bad }), /context chatPlatforms must be one or more of slack, teams/);
  }
  assert.equal(settingsFrom({ teamsMultiTenant: 'true' }).teamsMultiTenant, true);
  assert.throws(() => settingsFrom({ teamsMultiTenant: 'yes' }), /context teamsMultiTenant must be true or false/);
});

test("the reach step's VPC: the VPC, subnets and security groups together (lists also as -c strings), or none; reachAllowLoopback is a boolean", () => {
  const placed = settingsFrom({
    reachVpcId: 'vpc-0123456789abcdef0',
    reachSubnetIds: 'subnet-0aaaaaaaa,subnet-0bbbbbbbb',
    reachSecurityGroupIds: ['sg-0cccccccc'],
  });
  assert.deepEqual(
    [placed.reachVpcId, placed.reachSubnetIds, placed.reachSecurityGroupIds],
    ['vpc-0123456789abcdef0', ['subnet-0aaaaaaaa', 'subnet-0bbbbbbbb'], ['sg-0cccccccc']],
  );
  assert.throws(
    () => settingsFrom({ reachVpcId: 'vpc-0123456789abcdef0' }),
    /reachVpcId, reachSubnetIds and reachSecurityGroupIds go together/,
  );
  assert.throws(() => settingsFrom({ reachSubnetIds: 'subnet-0aaaaaaaa', reachSecurityGroupIds: 'sg-0cccccccc' }), /go together/);
  assert.throws(
    () => settingsFrom({ reachVpcId: 'vpc-x', reachSubnetIds: 's', reachSecurityGroupIds: 'g' }),
    /context reachVpcId must be a VPC id/,
  );
  assert.throws(
    () => settingsFrom({ reachVpcId: 'vpc-0123456789abcdef0', reachSubnetIds: 'subnet-nothex', reachSecurityGroupIds: 'sg-0cccccccc' }),
    /reachSubnetIds must be 1 to 16 different subnet ids/,
  );
  assert.equal(settingsFrom({ reachAllowLoopback: 'true' }).reachAllowLoopback, true);
  assert.throws(() => settingsFrom({ reachAllowLoopback: 'yes' }), /context reachAllowLoopback must be true or false/);
});

test('an unknown context key fails with the setting it may mean; CDK’s own keys pass', () => {
  assert.throws(() => settingsFrom({ modelld: 'x' }), {
    name: 'Error',
    message: `unknown context key modelld (did you mean modelId?): it is not a setting of this app (the settings: ${CONTEXT_KEYS.join(', ')})`,
  });
  assert.throws(
    () => settingsFrom({ sandboxAZs: 2, colour: 'blue' }),
    /^Error: unknown context keys sandboxAZs \(did you mean sandboxAzs\?\), colour: they are not/,
  );
  assert.throws(() => settingsFrom({ stackname: 'X' }), /did you mean stackName\?/);
  const cdkOwn = {
    '@aws-cdk/core:checkSecretUsage': true,
    '@aws-cdk-containers/ecs-service-extensions:enableDefaultLogDriver': true,
    'aws:cdk:bundling-stacks': [],
    'aws:cdk:enable-path-metadata': true,
    'availability-zones:account=123456789012:region=us-east-1': ['us-east-1a'],
    'acknowledged-issue-numbers': [32775],
    stackName: 'Mine',
  };
  assert.deepEqual(settingsFrom(cdkOwn), DEFAULT_SETTINGS);
});

test('a bad context value is one line, even where the check finds several problems', () => {
  assert.throws(
    () => settingsFrom({ triggers: [{ name: 'a' }, { name: 'b' }] }),
    (error: Error) =>
      error instanceof ContextError && !error.message.includes('\n') && /^Invalid triggers in the CDK context: .+; .+/.test(error.message),
  );
});

test('cdk synth (infra/app.ts) says an unknown key or a bad value in one line, without a stack trace', () => {
  const outdir = mkdtempSync(join(tmpdir(), 'threadwork-context-'));
  try {
    for (const [context, line] of [
      [{ modelld: 'x' }, /^unknown context key modelld \(did you mean modelId\?\): it is not a setting of this app \(the settings: .*\)$/],
      [{ sandboxAzs: '4' }, /^context sandboxAzs must be a whole number from 1 to 3; got "4"$/],
    ] as const) {
      const run = runApp(outdir, context);
      assert.equal(run.status, 1);
      assert.match(run.stderr.trim(), line);
    }
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
});
