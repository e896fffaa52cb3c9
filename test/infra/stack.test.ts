// Template tests for the CDK app: what each construct creates, least privilege, the state machine's
// shape, cdk-nag, and (once) a real esbuild bundle per function.
import { isDeepStrictEqual } from 'node:util';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import aslValidator from 'asl-validator';
import { Validations } from 'aws-cdk-lib';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { CfnPolicy, CfnRole } from 'aws-cdk-lib/aws-iam';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { CfnStateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { FUNCTION_ENTRIES, type FunctionRole } from '../../infra/function-entries.ts';
import { DEFAULT_SETTINGS } from '../../infra/settings.ts';
import type { AgentRuntimeStack } from '../../infra/stack.ts';
import { TABLE_KEYS } from '../../shared/table.ts';
import { flatten, functionOf, logicalId, STACK_NAME, synth } from './synth.ts';
import { BUNDLE_BUDGET, bundleBudgetOf } from '../../infra/constructs/agent-function.ts';

type Resource = { Type: string; Properties: Record<string, unknown>; DeletionPolicy?: string };
type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Condition?: Record<string, unknown> };

const { app, stack, template } = synth();
const resources = template.toJSON().Resources as Record<string, Resource>;
const ROLES: FunctionRole[] = [
  'webhook',
  'teamsWebhook',
  'dispatch',
  'runEnded',
  'agentStep',
  'sandboxStep',
  'reachStep',
  'sandboxReaper',
  'scheduler',
  'mcpOAuth',
];
const STATE_MACHINE_NAME = `${STACK_NAME}-AgentRun`;
const COMPUTED_STATE_MACHINE_ARN = `arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:stateMachine:${STATE_MACHINE_NAME}`;
const EXECUTIONS_ARN = 'arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:TestRuntime-AgentRun:*';

const list = <T>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);
const resource = (id: string): Resource => {
  const found = resources[id];
  assert.ok(found, `resource ${id} not in template`);
  return found;
};
const idOf = (construct: IConstruct): string => logicalId(stack, construct);
const props = (construct: IConstruct): Record<string, unknown> => resource(idOf(construct)).Properties;
const env = (role: FunctionRole): Record<string, unknown> =>
  (props(functionOf(stack, role)).Environment as { Variables: Record<string, unknown> }).Variables;

/** Every IAM policy of a stack with its statements (resolved) and the construct that owns it. */
function policies(target: AgentRuntimeStack): { policy: CfnPolicy; statements: Statement[] }[] {
  return target.node
    .findAll()
    .filter((c): c is CfnPolicy => c instanceof CfnPolicy)
    .map((policy) => ({
      policy,
      statements: (target.resolve(policy.policyDocument) as { Statement: Statement[] }).Statement,
    }));
}

/** The role (construct path) a default policy belongs to. */
const roleOf = (policy: CfnPolicy): string => policy.node.scope!.node.scope!.node.path;
const roleOfFunction = (target: AgentRuntimeStack, role: FunctionRole): string => functionOf(target, role).role!.node.path;

/** Acknowledgements recorded on a construct or its ancestors, by rule id (without the Annotation:: prefix). */
function acknowledgementsFor(construct: IConstruct): Map<string, string> {
  const found = new Map<string, string>();
  for (let c: IConstruct | undefined = construct; c; c = c.node.scope) {
    for (const entry of c.node.metadata) {
      if (entry.type !== Validations.ACKNOWLEDGED_RULES_METADATA_KEY) continue;
      for (const [id, reason] of Object.entries(entry.data as Record<string, string>)) {
        found.set(id.replace(/^annotation::/i, ''), reason);
      }
    }
  }
  return found;
}

function allAcknowledgements(root: IConstruct): { path: string; id: string; reason: string }[] {
  return root.node.findAll().flatMap((c) =>
    c.node.metadata
      .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      .flatMap((entry) =>
        Object.entries(entry.data as Record<string, string>).map(([id, reason]) => ({
          path: c.node.path,
          id: id.replace(/^annotation::/i, ''),
          reason,
        })),
      ),
  );
}

test('the stack exposes each function, keyed like FUNCTION_ENTRIES, and the resources a local runner maps', () => {
  assert.deepEqual(Object.keys(stack.functions).sort(), Object.keys(FUNCTION_ENTRIES).sort());
  for (const role of ROLES) {
    assert.ok(functionOf(stack, role) instanceof NodejsFunction, role);
    assert.equal(resource(idOf(functionOf(stack, role))).Type, 'AWS::Lambda::Function');
  }
  const expected: [IConstruct, string][] = [
    [stack.stateMachine, 'AWS::StepFunctions::StateMachine'],
    [stack.table, 'AWS::DynamoDB::Table'],
    [stack.bucket, 'AWS::S3::Bucket'],
    [stack.inbox, 'AWS::SQS::Queue'],
    [stack.chatSecrets.slack!, 'AWS::SecretsManager::Secret'],
    [stack.chatSecrets.teams!, 'AWS::SecretsManager::Secret'],
    [stack.api, 'AWS::ApiGatewayV2::Api'],
    [stack.runEndedRule, 'AWS::Events::Rule'],
    [stack.sandbox.network.vpc, 'AWS::EC2::VPC'],
    [stack.sandbox.task.cluster, 'AWS::ECS::Cluster'],
    [stack.sandbox.task.taskDefinition, 'AWS::ECS::TaskDefinition'],
    [stack.sandbox.securityGroups.task, 'AWS::EC2::SecurityGroup'],
    [stack.sandbox.securityGroups.step, 'AWS::EC2::SecurityGroup'],
    [stack.sandbox.reaperRule, 'AWS::Events::Rule'],
  ];
  for (const [construct, type] of expected) assert.equal(resource(idOf(construct)).Type, type, construct.node.path);
});

test('outputs: API URL, Slack events URL, Teams messaging endpoint, secret names, model, bucket name, state table and machine, agent-step function, sandbox cluster and image, event bus, schedule group, dashboard, alarm topic', () => {
  const outputs = template.findOutputs('*') as Record<string, { Value: unknown }>;
  assert.deepEqual(Object.keys(outputs).sort(), [
    'AgentStepFunctionName',
    'AlarmTopicArn',
    'ApiUrl',
    'DashboardUrl',
    'DataBucketName',
    'EventBusArn',
    'EventBusName',
    'ModelId',
    'SandboxClusterName',
    'SandboxImageUri',
    'ScheduleGroupName',
    'SlackEventsUrl',
    'SlackSecretName',
    'StateMachineArn',
    'StateTableName',
    'TeamsMessagingEndpoint',
    'TeamsSecretName',
  ]);
  assert.deepEqual(outputs.StateTableName!.Value, { Ref: idOf(stack.table) });
  assert.deepEqual(outputs.StateMachineArn!.Value, { Ref: idOf(stack.stateMachine) });
  assert.deepEqual(outputs.SandboxClusterName!.Value, { Ref: idOf(stack.sandbox.task.cluster) });
  assert.deepEqual(outputs.AgentStepFunctionName!.Value, { Ref: idOf(stack.functions.agentStep) });
  assert.match(flatten(outputs.SlackEventsUrl!.Value), new RegExp(`^<${idOf(stack.api)}.ApiEndpoint>/slack/events$`));
  assert.match(flatten(outputs.TeamsMessagingEndpoint!.Value), new RegExp(`^<${idOf(stack.api)}.ApiEndpoint>/api/messages$`));
  assert.match(flatten(outputs.ApiUrl!.Value), /^https:\/\/<\w+>\.execute-api\.<AWS::Region>\.<AWS::URLSuffix>\/$/);
  assert.deepEqual(outputs.DataBucketName!.Value, { Ref: idOf(stack.bucket) });
  assert.equal(outputs.ModelId!.Value, DEFAULT_SETTINGS.modelId);
  assert.match(JSON.stringify(outputs.SandboxImageUri!.Value), /SandboxTaskImageRepository.*dkr\.ecr/);
});

test('HTTP API: POST /slack/events and GET /health reach the webhook, POST /api/messages the Teams webhook; auto-deployed, throttled, access-logged stage', () => {
  template.resourceCountIs('AWS::ApiGatewayV2::Api', 1);
  template.hasResourceProperties('AWS::ApiGatewayV2::Api', { ProtocolType: 'HTTP' });
  const routes = Object.values(template.findResources('AWS::ApiGatewayV2::Route')) as Resource[];
  const targetOf = (route: Resource) => {
    const integrationId = ((route.Properties.Target as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1][1] as { Ref: string }).Ref;
    const integration = resource(integrationId).Properties;
    assert.equal(integration.IntegrationType, 'AWS_PROXY');
    return (integration.IntegrationUri as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
  };
  assert.deepEqual(Object.fromEntries(routes.map((r) => [r.Properties.RouteKey, targetOf(r)])), {
    'GET /health': idOf(stack.functions.webhook),
    'POST /slack/events': idOf(stack.functions.webhook),
    'POST /api/messages': idOf(functionOf(stack, 'teamsWebhook')),
    // A person connecting their own account to an MCP server that needs OAuth.
    'GET /oauth/start': idOf(stack.functions.mcpOAuth),
    'GET /oauth/callback': idOf(stack.functions.mcpOAuth),
  });
  template.resourceCountIs('AWS::ApiGatewayV2::Stage', 1);
  template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
    StageName: '$default',
    AutoDeploy: true,
    DefaultRouteSettings: { ThrottlingBurstLimit: Match.anyValue(), ThrottlingRateLimit: Match.anyValue() },
    AccessLogSettings: { DestinationArn: { 'Fn::GetAtt': [Match.anyValue(), 'Arn'] }, Format: Match.anyValue() },
  });
  const accessLogGroup = (
    (Object.values(template.findResources('AWS::ApiGatewayV2::Stage'))[0] as Resource).Properties.AccessLogSettings as {
      DestinationArn: { 'Fn::GetAtt': [string, string] };
    }
  ).DestinationArn['Fn::GetAtt'][0];
  assert.equal(resource(accessLogGroup).Type, 'AWS::Logs::LogGroup');
  assert.equal(resource(accessLogGroup).Properties.RetentionInDays, DEFAULT_SETTINGS.logRetentionDays);
});

test('inbox: SQS FIFO, producer-set dedup ids, visibility >= 6x dispatch timeout, SSE, DLQ after 5 receives kept 14 days', () => {
  const inbox = props(stack.inbox);
  assert.equal(inbox.FifoQueue, true);
  assert.equal(inbox.ContentBasedDeduplication, false);
  assert.equal(inbox.SqsManagedSseEnabled, true);
  const dispatchTimeout = props(stack.functions.dispatch).Timeout as number;
  assert.ok((inbox.VisibilityTimeout as number) >= 6 * dispatchTimeout, 'visibility timeout >= 6x dispatch timeout');
  const redrive = inbox.RedrivePolicy as { deadLetterTargetArn: { 'Fn::GetAtt': [string, string] }; maxReceiveCount: number };
  assert.equal(redrive.maxReceiveCount, 5);
  const dlq = resource(redrive.deadLetterTargetArn['Fn::GetAtt'][0]);
  assert.equal(dlq.Type, 'AWS::SQS::Queue');
  assert.equal(dlq.Properties.FifoQueue, true);
  assert.equal(dlq.Properties.MessageRetentionPeriod, 14 * 24 * 3600);
  assert.equal(dlq.Properties.SqsManagedSseEnabled, true);
});

test('every queue is encrypted and refuses requests without TLS', () => {
  const queuePolicies = Object.values(template.findResources('AWS::SQS::QueuePolicy')) as Resource[];
  for (const [id, queue] of Object.entries(template.findResources('AWS::SQS::Queue')) as [string, Resource][]) {
    assert.equal(queue.Properties.SqsManagedSseEnabled, true, id);
    const denies = queuePolicies.some(
      (p) =>
        (p.Properties.Queues as unknown[]).some((q) => flatten(q) === `<${id}>`) &&
        (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement.some(
          (s) => s.Effect === 'Deny' && JSON.stringify(s.Condition) === JSON.stringify({ Bool: { 'aws:SecureTransport': 'false' } }),
        ),
    );
    assert.ok(denies, `${id} has no SSL-only policy`);
  }
});

test('dispatch consumes the inbox in batches of 10 and reports failed items one by one', () => {
  template.resourceCountIs('AWS::Lambda::EventSourceMapping', 1);
  template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
    FunctionName: { Ref: idOf(stack.functions.dispatch) },
    EventSourceArn: { 'Fn::GetAtt': [idOf(stack.inbox), 'Arn'] },
    BatchSize: 10,
    FunctionResponseTypes: ['ReportBatchItemFailures'],
  });
});

test('table: pk/sk strings, on-demand, PITR, TTL on expiresAt, AWS-managed encryption, retained', () => {
  template.resourceCountIs('AWS::DynamoDB::Table', 1);
  const table = resource(idOf(stack.table));
  assert.equal(table.DeletionPolicy, 'Retain');
  assert.deepEqual(table.Properties.KeySchema, [
    { AttributeName: TABLE_KEYS.partitionKey, KeyType: 'HASH' },
    { AttributeName: TABLE_KEYS.sortKey, KeyType: 'RANGE' },
  ]);
  assert.deepEqual(table.Properties.AttributeDefinitions, [
    { AttributeName: 'pk', AttributeType: 'S' },
    { AttributeName: 'sk', AttributeType: 'S' },
  ]);
  assert.equal(table.Properties.BillingMode, 'PAY_PER_REQUEST');
  assert.deepEqual(table.Properties.PointInTimeRecoverySpecification, { PointInTimeRecoveryEnabled: true });
  assert.deepEqual(table.Properties.TimeToLiveSpecification, { AttributeName: 'expiresAt', Enabled: true });
  assert.deepEqual(table.Properties.SSESpecification, { SSEEnabled: true });
});

test('buckets: SSE-S3, all public access blocked, SSL-only; the data bucket is versioned, access-logged and retained', () => {
  const buckets = template.findResources('AWS::S3::Bucket') as Record<string, Resource>;
  assert.equal(Object.keys(buckets).length, 2, 'data bucket + its access log bucket');
  const bucketPolicies = Object.values(template.findResources('AWS::S3::BucketPolicy')) as Resource[];
  for (const [id, bucket] of Object.entries(buckets)) {
    assert.equal(bucket.DeletionPolicy, 'Retain', id);
    assert.deepEqual(bucket.Properties.BucketEncryption, {
      ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
    });
    assert.deepEqual(bucket.Properties.PublicAccessBlockConfiguration, {
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    const policy = bucketPolicies.find((p) => flatten(p.Properties.Bucket) === `<${id}>`);
    assert.ok(policy, `${id} has no bucket policy`);
    const statements = (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement;
    assert.ok(
      statements.some(
        (s) => s.Effect === 'Deny' && JSON.stringify(s.Condition) === JSON.stringify({ Bool: { 'aws:SecureTransport': 'false' } }),
      ),
      `${id} does not deny plain HTTP`,
    );
  }
  const data = props(stack.bucket);
  assert.deepEqual(data.VersioningConfiguration, { Status: 'Enabled' });
  const logging = data.LoggingConfiguration as { DestinationBucketName: { Ref: string } };
  assert.ok(buckets[logging.DestinationBucketName.Ref], 'access logs go to the second bucket');
});

/**
 * Lambda functions CDK and libraries add for custom resources: the VPC's default-security-group
 * restriction (a CustomResourceProvider, whose role carries AWSLambdaBasicExecutionRole), the
 * AwsCustomResource that looks up the S3 and DynamoDB prefix lists (given our own role and log group),
 * the bucket notifications handler, deploy-time-build's function that starts the image build, and
 * the one that fails the image build's custom resource when the build fails.
 */
const cdkProviderFunctions = (): Record<string, Resource> =>
  Object.fromEntries(
    (Object.entries(template.findResources('AWS::Lambda::Function')) as [string, Resource][]).filter(
      ([id]) => !ROLES.some((role) => idOf(functionOf(stack, role)) === id),
    ),
  );

test('functions: nodejs22.x on arm64, X-Ray active, source maps on, own log group with the retention setting', () => {
  assert.deepEqual(
    Object.keys(cdkProviderFunctions())
      .map((id) => id.replace(/[0-9A-F]{8}$/, ''))
      .sort(),
    [
      'AWS679f53fac002430cb0da5b7982bd2287',
      'BucketNotificationsHandler050a0587b7544547bf325f094a3db834',
      'CustomVpcRestrictDefaultSGCustomResourceProviderHandler',
      'DeployTimeBuildCustomResourceHandlerdb740fd554364a848a09e6dfcd01f4f3',
      'FunctionVersionPruningPruneHandler',
      'FunctionVersionPruningPruneProviderframeworkonEvent',
      'SandboxAzsLookupHandler',
      'SandboxAzsLookupProviderframeworkonEvent',
      'SandboxTeardownStopTasksHandler',
      'SandboxTeardownStopTasksProviderframeworkonEvent',
      'SandboxTaskImageBuildFailuresHandler',
    ].sort(),
  );
  template.resourceCountIs('AWS::Lambda::Function', ROLES.length + 11);
  for (const role of ROLES) {
    const fn = props(functionOf(stack, role));
    assert.equal(fn.Runtime, 'nodejs22.x', role);
    assert.deepEqual(fn.Architectures, ['arm64'], role);
    assert.equal(fn.Handler, 'index.handler', role);
    assert.deepEqual(fn.TracingConfig, { Mode: 'Active' }, role);
    assert.equal(env(role).NODE_OPTIONS, '--enable-source-maps', role);
    const logGroup = (fn.LoggingConfig as { LogGroup: { Ref: string } }).LogGroup.Ref;
    assert.equal(resource(logGroup).Type, 'AWS::Logs::LogGroup', role);
    assert.equal(resource(logGroup).Properties.RetentionInDays, DEFAULT_SETTINGS.logRetentionDays, role);
  }
  for (const [id, group] of Object.entries(template.findResources('AWS::Logs::LogGroup')) as [string, Resource][]) {
    assert.equal(group.Properties.RetentionInDays, DEFAULT_SETTINGS.logRetentionDays, id);
  }
  // Every function, custom resource functions included, logs to a log group with the retention setting
  // (otherwise Lambda creates /aws/lambda/<name> on first use, kept forever).
  for (const [id, fn] of Object.entries(template.findResources('AWS::Lambda::Function')) as [string, Resource][]) {
    const logGroup = (fn.Properties.LoggingConfig as { LogGroup?: { Ref: string } } | undefined)?.LogGroup?.Ref;
    assert.ok(logGroup, `${id} has no log group of its own`);
    assert.equal(resource(logGroup).Type, 'AWS::Logs::LogGroup', id);
    assert.equal(resource(logGroup).Properties.RetentionInDays, DEFAULT_SETTINGS.logRetentionDays, id);
  }
  // No deprecated logRetention custom resource, no AWSLambdaBasicExecutionRole (IAM4) on any role but
  // the one of CDK's restrict-default-security-group provider, a raw CloudFormation role CDK builds
  // itself (the function runs only during deploys, to revoke the default security group's rules).
  template.resourceCountIs('Custom::LogRetention', 0);
  const roleOfProvider = (prefix: string): string =>
    (
      Object.entries(cdkProviderFunctions()).find(([id]) => id.startsWith(prefix))![1].Properties.Role as { 'Fn::GetAtt': [string, string] }
    )['Fn::GetAtt'][0];
  const providerRoles = [roleOfProvider('CustomVpcRestrictDefaultSG')];
  for (const [id, role] of Object.entries(template.findResources('AWS::IAM::Role')) as [string, Resource][]) {
    if (providerRoles.includes(id)) continue;
    assert.equal(role.Properties.ManagedPolicyArns, undefined, `${id} has managed policies`);
  }
  // The prefix-list lookup runs with our role and a log group with retention, like the functions.
  const lookup = Object.entries(cdkProviderFunctions()).find(([id]) => id.startsWith('AWS679f53fa'))![1];
  assert.deepEqual(lookup.Properties.Role, { 'Fn::GetAtt': [idOf(stack.sandbox.prefixLists.role), 'Arn'] });
  const lookupLogs = (lookup.Properties.LoggingConfig as { LogGroup: { Ref: string } }).LogGroup.Ref;
  assert.equal(resource(lookupLogs).Properties.RetentionInDays, DEFAULT_SETTINGS.logRetentionDays);
});

test('functions: environment, timeout and memory per role', () => {
  const table = { Ref: idOf(stack.table) };
  const secret = { Ref: idOf(stack.chatSecrets.slack!) };
  const teamsSecret = { Ref: idOf(stack.chatSecrets.teams!) };
  const bucket = { Ref: idOf(stack.bucket) };
  const stateMachine = { Ref: idOf(stack.stateMachine) };
  const clusterArn = { 'Fn::GetAtt': [idOf(stack.sandbox.task.cluster), 'Arn'] };
  const sandboxSubnets = stack.sandbox.network.vpc.isolatedSubnets.map((subnet) => stack.resolve(subnet.subnetId) as unknown);
  assert.equal(sandboxSubnets.length, 1);
  const sandboxLaunch = {
    SANDBOX_CLUSTER_ARN: clusterArn,
    // The family alone: ECS runs its latest ACTIVE revision, also for a run that outlives a deploy.
    SANDBOX_TASK_DEFINITION_FAMILY: stack.sandbox.task.taskDefinition.family,
    SANDBOX_CONTAINER_NAME: 'sandbox',
    SANDBOX_SUBNET_IDS: sandboxSubnets[0],
    SANDBOX_SECURITY_GROUP_IDS: { 'Fn::GetAtt': [idOf(stack.sandbox.securityGroups.task), 'GroupId'] },
    SANDBOX_PORT: '8080',
    SANDBOX_IDLE_MINUTES: '5',
    SANDBOX_CPU: '1024',
    SANDBOX_MEMORY_MIB: '2048',
  };
  const tokensKey = { 'Fn::GetAtt': [idOf(stack.mcpTokensKey), 'Arn'] };
  const expected: Record<FunctionRole, { env: Record<string, unknown>; timeout: number; memory?: number }> = {
    // Each webhook reads its own platform's secret only.
    // The Slack webhook also reads settings.json, for `/usage`.
    webhook: {
      env: { TABLE_NAME: table, INBOX_QUEUE_URL: { Ref: idOf(stack.inbox) }, SLACK_SECRET_ARN: secret, DATA_BUCKET: bucket },
      timeout: 10,
      memory: 512,
    },
    teamsWebhook: {
      env: { TABLE_NAME: table, INBOX_QUEUE_URL: { Ref: idOf(stack.inbox) }, TEAMS_SECRET_ARN: teamsSecret },
      timeout: 10,
      memory: 512,
    },
    dispatch: {
      env: {
        TABLE_NAME: table,
        STATE_MACHINE_ARN: stateMachine,
        SLACK_SECRET_ARN: secret,
        TEAMS_SECRET_ARN: teamsSecret,
        DATA_BUCKET: bucket,
      },
      timeout: 30,
    },
    runEnded: {
      env: {
        TABLE_NAME: table,
        STATE_MACHINE_ARN: stateMachine,
        DATA_BUCKET: bucket,
        SLACK_SECRET_ARN: secret,
        TEAMS_SECRET_ARN: teamsSecret,
      },
      timeout: 60,
    },
    agentStep: {
      env: {
        TABLE_NAME: table,
        DATA_BUCKET: bucket,
        SLACK_SECRET_ARN: secret,
        TEAMS_SECRET_ARN: teamsSecret,
        BEDROCK_MODEL_ID: DEFAULT_SETTINGS.modelId,
        ...sandboxLaunch,
        OAUTH_START_URL: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [idOf(stack.api), 'ApiEndpoint'] }, '/oauth/start']] },
      },
      timeout: 900,
      memory: 1024,
    },
    sandboxStep: { env: { TABLE_NAME: table, DATA_BUCKET: bucket, SANDBOX_PORT: '8080' }, timeout: 900, memory: 1024 },
    // Loopback stays refused unless the deployment is a local test's (cdk context reachAllowLoopback).
    reachStep: {
      env: {
        TABLE_NAME: table,
        DATA_BUCKET: bucket,
        MCP_SECRET_PREFIX: `${stack.stackName}/mcp/`,
        REACH_ALLOW_LOOPBACK: 'false',
        SANDBOX_NETWORK: 'isolated',
        OAUTH_KEY_ARN: tokensKey,
      },
      timeout: 900,
      memory: 512,
    },
    mcpOAuth: {
      env: { TABLE_NAME: table, OAUTH_KEY_ARN: tokensKey, MCP_SECRET_PREFIX: `${stack.stackName}/mcp/` },
      timeout: 29,
      memory: 256,
    },
    sandboxReaper: {
      env: { TABLE_NAME: table, SANDBOX_CLUSTER_ARN: clusterArn, SANDBOX_IDLE_MINUTES: '5' },
      timeout: 60,
    },
    scheduler: {
      env: {
        TABLE_NAME: table,
        DATA_BUCKET: bucket,
        INBOX_QUEUE_URL: { Ref: idOf(stack.inbox) },
        SLACK_SECRET_ARN: secret,
        TEAMS_SECRET_ARN: teamsSecret,
        SCHEDULE_GROUP_NAME: { Ref: idOf(stack.eventSchedules.group) },
        SCHEDULER_ROLE_ARN: { 'Fn::GetAtt': [idOf(stack.eventSchedules.role), 'Arn'] },
        SCHEDULE_DLQ_ARN: { 'Fn::GetAtt': [idOf(stack.eventSchedules.deadLetterQueue), 'Arn'] },
      },
      timeout: 60,
      memory: 512,
    },
  };
  for (const role of ROLES) {
    const { NODE_OPTIONS: _node, METRICS_NAMESPACE: namespace, ...variables } = env(role);
    // Metrics are published under the stack's name.
    assert.equal(namespace, STACK_NAME, role);
    const want = expected[role];
    if (role === 'agentStep' || role === 'webhook' || role === 'teamsWebhook') {
      // The state machine ARN is computed from its name (breaks the function <-> state machine cycle).
      assert.equal(flatten(variables.STATE_MACHINE_ARN), COMPUTED_STATE_MACHINE_ARN);
      delete variables.STATE_MACHINE_ARN;
    }
    if (role === 'scheduler') {
      // Its own ARN, computed from its name: schedules created at runtime name it as their target.
      assert.equal(
        flatten(variables.SCHEDULER_TARGET_ARN),
        `arn:<AWS::Partition>:lambda:<AWS::Region>:<AWS::AccountId>:function:${STACK_NAME}-Scheduler`,
      );
      delete variables.SCHEDULER_TARGET_ARN;
    }
    assert.deepEqual(variables, want.env, role);
    assert.equal(props(functionOf(stack, role)).Timeout, want.timeout, role);
    if (want.memory) assert.equal(props(functionOf(stack, role)).MemorySize, want.memory, role);
  }
});

test('state machine: Standard, named, run timeout, logging ALL without execution data to a vended-logs group, tracing', () => {
  template.resourceCountIs('AWS::StepFunctions::StateMachine', 1);
  const sm = props(stack.stateMachine);
  assert.equal(sm.StateMachineType, 'STANDARD');
  assert.equal(sm.StateMachineName, STATE_MACHINE_NAME);
  assert.deepEqual(sm.TracingConfiguration, { Enabled: true });
  const logging = sm.LoggingConfiguration as {
    Level: string;
    IncludeExecutionData: boolean;
    Destinations: { CloudWatchLogsLogGroup: { LogGroupArn: { 'Fn::GetAtt': [string, string] } } }[];
  };
  assert.equal(logging.Level, 'ALL');
  assert.equal(logging.IncludeExecutionData, false);
  const logGroup = resource(logging.Destinations[0]!.CloudWatchLogsLogGroup.LogGroupArn['Fn::GetAtt'][0]);
  assert.equal(logGroup.Properties.RetentionInDays, DEFAULT_SETTINGS.logRetentionDays);
  // Under Step Functions' vended-logs prefix; named, so deleted with the stack (a retained one would
  // block the next deploy under the same name).
  assert.equal(logGroup.Properties.LogGroupName, `/aws/vendedlogs/states/${STATE_MACHINE_NAME}`);
  assert.equal(logGroup.DeletionPolicy, 'Delete');
});

test('run-ended rule: this state machine, FAILED/TIMED_OUT/ABORTED, retried target with an encrypted DLQ', () => {
  const rule = props(stack.runEndedRule);
  assert.deepEqual(rule.EventPattern, {
    source: ['aws.states'],
    'detail-type': ['Step Functions Execution Status Change'],
    detail: { status: ['FAILED', 'TIMED_OUT', 'ABORTED'], stateMachineArn: [{ Ref: idOf(stack.stateMachine) }] },
  });
  const [target] = rule.Targets as {
    Arn: unknown;
    RetryPolicy: { MaximumRetryAttempts: number };
    DeadLetterConfig: { Arn: { 'Fn::GetAtt': [string, string] } };
  }[];
  assert.deepEqual(target!.Arn, { 'Fn::GetAtt': [idOf(stack.functions.runEnded), 'Arn'] });
  assert.ok(target!.RetryPolicy.MaximumRetryAttempts > 0);
  const dlq = resource(target!.DeadLetterConfig.Arn['Fn::GetAtt'][0]);
  assert.equal(dlq.Type, 'AWS::SQS::Queue');
  assert.equal(dlq.Properties.SqsManagedSseEnabled, true);
});

test('secret: TeamsCredentials JSON with a generated app password and placeholders for the app id and tenant', () => {
  const secret = props(stack.chatSecrets.teams!);
  assert.equal(secret.Name, `${STACK_NAME}/TeamsCredentials`);
  const generate = secret.GenerateSecretString as { SecretStringTemplate: string; GenerateStringKey: string };
  assert.equal(generate.GenerateStringKey, 'appPassword');
  assert.deepEqual(JSON.parse(generate.SecretStringTemplate), { appId: 'replace-me', tenantId: 'replace-me' });
});

test('Slack only or Teams only: one secret, one webhook route, one pair of outputs; each chat function reads exactly that secret', () => {
  for (const [platform, path, secretEnv, outputs] of [
    ['slack', 'POST /slack/events', 'SLACK_SECRET_ARN', ['SlackEventsUrl', 'SlackSecretName']],
    ['teams', 'POST /api/messages', 'TEAMS_SECRET_ARN', ['TeamsMessagingEndpoint', 'TeamsSecretName']],
  ] as const) {
    const only = synth({ settings: { chatPlatforms: platform } });
    only.template.resourceCountIs('AWS::SecretsManager::Secret', 1);
    const routes = Object.values(only.template.findResources('AWS::ApiGatewayV2::Route')) as Resource[];
    assert.deepEqual(
      routes.map((r) => r.Properties.RouteKey).sort(),
      ['GET /health', 'GET /oauth/callback', 'GET /oauth/start', path].sort(),
    );
    const outputNames = Object.keys(only.template.findOutputs('*'));
    for (const name of ['SlackEventsUrl', 'SlackSecretName', 'TeamsMessagingEndpoint', 'TeamsSecretName']) {
      assert.equal(outputNames.includes(name), (outputs as readonly string[]).includes(name), `${platform}: ${name}`);
    }
    const secret = { Ref: idOf(platform === 'slack' ? only.stack.chatSecrets.slack! : only.stack.chatSecrets.teams!) };
    // Each platform has its webhook function; a Teams-only stack keeps the Slack one for /health, with no secret.
    assert.equal(only.stack.functions.teamsWebhook !== undefined, platform === 'teams');
    const webhook = platform === 'slack' ? 'webhook' : 'teamsWebhook';
    for (const role of [webhook, 'dispatch', 'runEnded', 'agentStep', 'scheduler'] as const) {
      const fn = only.template.toJSON().Resources[logicalId(only.stack, functionOf(only.stack, role))];
      const variables = fn.Properties.Environment.Variables as Record<string, unknown>;
      assert.deepEqual(variables[secretEnv], secret, `${platform}: ${role}`);
      assert.equal(variables[platform === 'slack' ? 'TEAMS_SECRET_ARN' : 'SLACK_SECRET_ARN'], undefined, `${platform}: ${role}`);
    }
  }
  const multi = synth({ settings: { teamsMultiTenant: true } });
  const webhook = multi.template.toJSON().Resources[logicalId(multi.stack, functionOf(multi.stack, 'teamsWebhook'))];
  assert.equal(webhook.Properties.Environment.Variables.TEAMS_MULTI_TENANT, 'true');
});

test('secret: SlackCredentials JSON with a generated signing secret and a bot token placeholder', () => {
  const secret = props(stack.chatSecrets.slack!);
  assert.equal(secret.Name, `${STACK_NAME}/SlackCredentials`);
  const generate = secret.GenerateSecretString as { SecretStringTemplate: string; GenerateStringKey: string };
  assert.equal(generate.GenerateStringKey, 'signingSecret');
  assert.match((JSON.parse(generate.SecretStringTemplate) as { botToken: string }).botToken, /^xoxb-/);
});

/**
 * The one place with action wildcards: deploy-time-build's Asset.grantRead, so its CodeBuild project can
 * download the sandbox build context from the CDK bootstrap assets bucket (acknowledged in infra/nag.ts).
 */
const ASSET_READ_ACTIONS = ['s3:GetBucket*', 's3:GetObject*', 's3:List*'];

test('least privilege: no action wildcards; secrets, queue and table grants name their one resource', () => {
  const queueArn = (queue: IConstruct) => ({ 'Fn::GetAtt': [idOf(queue), 'Arn'] });
  // Besides the inbox: the scheduler function's failed-invocations destination, the schedule role's DLQ.
  const otherQueues = new Map<string, unknown[]>([
    [roleOfFunction(stack, 'scheduler'), [queueArn(stack.eventBus.failedInvocations), queueArn(stack.inbox)]],
    [stack.eventSchedules.role.node.path, [queueArn(stack.eventSchedules.deadLetterQueue)]],
  ]);
  for (const { policy, statements } of policies(stack)) {
    for (const s of statements) {
      assert.equal(s.Effect, 'Allow', roleOf(policy));
      const imageBuild = roleOf(policy) === stack.sandbox.task.image.build?.project.role?.node.path;
      if (imageBuild && list(s.Action).some((a) => a.includes('*'))) {
        assert.deepEqual(list(s.Action).sort(), ASSET_READ_ACTIONS);
        assert.deepEqual(list(s.Resource).map(flatten).sort(), [
          'arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-<AWS::AccountId>-<AWS::Region>',
          'arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-<AWS::AccountId>-<AWS::Region>/*',
        ]);
        continue;
      }
      for (const action of list(s.Action)) assert.ok(!action.includes('*'), `${roleOf(policy)}: ${action}`);
      const actions = list(s.Action);
      const mcpSecretReaders = [roleOfFunction(stack, 'reachStep'), roleOfFunction(stack, 'mcpOAuth')];
      if (actions.some((a) => a.startsWith('secretsmanager:')) && mcpSecretReaders.includes(roleOf(policy))) {
        // The MCP secrets: a prefix, since the operator names them in settings.json (the test below).
        assert.deepEqual(list(s.Resource).map(flatten), [
          `arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:${stack.stackName}/mcp/*`,
        ]);
      } else if (actions.some((a) => a.startsWith('secretsmanager:'))) {
        const chatSecrets = [stack.chatSecrets.slack!, stack.chatSecrets.teams!].map((secret) => ({ Ref: idOf(secret) }));
        // Each chat function reads the Slack and the Teams secret (CDK merges both grants into one statement).
        for (const r of list(s.Resource))
          assert.ok(
            chatSecrets.some((ref) => isDeepStrictEqual(ref, r)),
            roleOf(policy),
          );
      }
      if (actions.some((a) => a.startsWith('dynamodb:'))) {
        assert.deepEqual(list(s.Resource), [{ 'Fn::GetAtt': [idOf(stack.table), 'Arn'] }]);
      }
      if (actions.some((a) => a.startsWith('sqs:'))) {
        const allowed = otherQueues.get(roleOf(policy)) ?? [queueArn(stack.inbox)];
        for (const arn of list(s.Resource))
          assert.ok(
            allowed.some((a) => isDeepStrictEqual(a, arn)),
            `${roleOf(policy)}: ${flatten(arn)}`,
          );
      }
    }
  }
  for (const role of stack.node.findAll().filter((c): c is CfnRole => c instanceof CfnRole)) {
    assert.equal(stack.resolve(role.policies), undefined, `${role.node.path} has inline policies`);
  }
});

test('least privilege: states:StartExecution only on the agent-run state machine, only for dispatch, run-ended, agent-step; stop/describe only on its executions; SendTaskSuccess only for the webhooks (approvals) and agent-step and run-ended (a subagent resuming its parent)', () => {
  const holders = new Set<string>();
  const stoppers = new Map<string, string[]>();
  const answerers = new Set<string>();
  for (const { policy, statements } of policies(stack)) {
    for (const s of statements.filter((st) => list(st.Action).some((a) => a.startsWith('states:')))) {
      if (list(s.Action).includes('states:SendTaskSuccess')) {
        // IAM authorizes it on "*" only (no resource type); the webhooks take the approval clicks, and a
        // subagent's end (agent-step, run-ended) resumes its parent. (CDK merges it into the statement of
        // the X-Ray actions, also on "*".)
        assert.deepEqual(
          list(s.Action).filter((a) => a.startsWith('states:')),
          ['states:SendTaskSuccess'],
          roleOf(policy),
        );
        assert.deepEqual(list(s.Resource), ['*'], roleOf(policy));
        answerers.add(roleOf(policy));
        continue;
      }
      if (list(s.Action).includes('states:StartExecution')) {
        assert.deepEqual(list(s.Action), ['states:StartExecution'], roleOf(policy));
        for (const arn of list(s.Resource)) {
          assert.ok([`<${idOf(stack.stateMachine)}>`, COMPUTED_STATE_MACHINE_ARN].includes(flatten(arn)), flatten(arn));
        }
        holders.add(roleOf(policy));
        continue;
      }
      assert.deepEqual(list(s.Resource).map(flatten), [EXECUTIONS_ARN], roleOf(policy));
      stoppers.set(roleOf(policy), list(s.Action));
    }
  }
  assert.deepEqual([...holders].sort(), (['dispatch', 'runEnded', 'agentStep'] as const).map((r) => roleOfFunction(stack, r)).sort());
  assert.deepEqual(
    [...answerers].sort(),
    (['webhook', 'teamsWebhook', 'agentStep', 'runEnded'] as const).map((r) => roleOfFunction(stack, r)).sort(),
  );
  assert.deepEqual(Object.fromEntries(stoppers), {
    [roleOfFunction(stack, 'webhook')]: ['states:StopExecution'],
    [roleOfFunction(stack, 'teamsWebhook')]: ['states:StopExecution'],
    [roleOfFunction(stack, 'dispatch')]: ['states:DescribeExecution', 'states:StopExecution'],
    [roleOfFunction(stack, 'agentStep')]: ['states:StopExecution'],
    [roleOfFunction(stack, 'runEnded')]: ['states:StopExecution'],
  });
});

test("least privilege: the Slack webhook only reads settings.json (`/usage`); dispatch writes only long prompt texts and settings.json (an admin's `settings set`), and reads only settings.json, threads' context (an admin's `runs`) and agent definitions (`agents`, which writes an invalid one's error file)", () => {
  const s3Of = (role: FunctionRole) =>
    policies(stack)
      .filter(({ policy }) => roleOf(policy) === roleOfFunction(stack, role))
      .flatMap(({ statements }) => statements.filter((st) => list(st.Action).some((a) => a.startsWith('s3:'))));
  const bucket = `<${idOf(stack.bucket)}.Arn>`;
  const grantsOf = (role: FunctionRole) => [
    ...new Set(s3Of(role).flatMap((st) => list(st.Action).flatMap((action) => list(st.Resource).map((r) => `${action} ${flatten(r)}`)))),
  ];
  assert.deepEqual(grantsOf('webhook').sort(), [`s3:GetObject ${bucket}/settings.json`, `s3:ListBucket ${bucket}`]);
  assert.deepEqual(s3Of('teamsWebhook'), []);
  assert.deepEqual(
    grantsOf('dispatch').sort(),
    [
      `s3:GetObject ${bucket}/*/context.jsonl`,
      `s3:GetObject ${bucket}/settings.json`,
      `s3:GetObject ${bucket}/agents/*/AGENT.md`,
      `s3:GetObject ${bucket}/*/*/agents/*/AGENT.md`,
      `s3:ListBucket ${bucket}`,
      `s3:PutObject ${bucket}/prompts/*`,
      `s3:PutObject ${bucket}/settings.json`,
      `s3:PutObject ${bucket}/agents/*/AGENT.error.json`,
      `s3:PutObject ${bucket}/*/*/agents/*/AGENT.error.json`,
    ].sort(),
  );
});

test('least privilege: Bedrock invoke only for agent-step, only on the configured profile and its foundation model', () => {
  const profile = `arn:<AWS::Partition>:bedrock:<AWS::Region>:<AWS::AccountId>:inference-profile/${DEFAULT_SETTINGS.modelId}`;
  const model = 'anthropic.claude-sonnet-4-5-20250929-v1:0';
  const granted: string[] = [];
  for (const { policy, statements } of policies(stack)) {
    for (const s of statements.filter((st) => list(st.Action).some((a) => a.startsWith('bedrock:')))) {
      assert.equal(roleOf(policy), roleOfFunction(stack, 'agentStep'));
      assert.deepEqual(list(s.Action), ['bedrock:InvokeModel', 'bedrock:InvokeModelWithResponseStream']);
      const arns = list(s.Resource).map(flatten);
      granted.push(...arns);
      if (arns.some((a) => a.includes(':foundation-model/'))) {
        assert.equal(flatten((s.Condition?.StringEquals as Record<string, unknown>)['bedrock:InferenceProfileArn']), profile);
      }
    }
  }
  assert.deepEqual(granted.sort(), [
    `arn:<AWS::Partition>:bedrock:*::foundation-model/${model}`,
    `arn:<AWS::Partition>:bedrock:::foundation-model/${model}`,
    profile,
  ]);
});

test('least privilege: every wildcard resource is acknowledged for nag with a reason, and these are all of them', () => {
  const bucketObjects = `<${idOf(stack.bucket)}.Arn>/*`;
  const sandboxTasks = `arn:<AWS::Partition>:ecs:<AWS::Region>:<AWS::AccountId>:task/<${idOf(stack.sandbox.task.cluster)}>/*`;
  const networkInterfaces = 'arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:network-interface/*';
  const azLookup = stack.sandbox.availabilityZones.provider;
  const stopTasks = stack.sandbox.teardown.provider;
  const pruning = stack.versionPruning.provider;
  const imageBuild = stack.sandbox.task.image.build!;
  const imageBuildRole = imageBuild.project.role!.node.path;
  const imageBuildProject = idOf(imageBuild.project);
  const expected = [
    ...ROLES.map((r) => `${roleOfFunction(stack, r)} *`),
    `${stack.stateMachine.role.node.path} *`,
    `${roleOfFunction(stack, 'agentStep')} ${bucketObjects}`,
    `${roleOfFunction(stack, 'runEnded')} ${bucketObjects}`,
    `${roleOfFunction(stack, 'sandboxStep')} ${bucketObjects}`,
    `${roleOfFunction(stack, 'sandboxStep')} ${networkInterfaces}`,
    `${roleOfFunction(stack, 'reachStep')} ${bucketObjects}`,
    `${roleOfFunction(stack, 'reachStep')} arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:${stack.stackName}/mcp/*`,
    `${roleOfFunction(stack, 'mcpOAuth')} arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:${stack.stackName}/mcp/*`,
    `${stack.stateMachine.role.node.path} <${idOf(stack.functions.reachStep)}.Arn>:*`,
    `${pruning.handler.role!.node.path} <${idOf(stack.functions.reachStep)}.Arn>:*`,
    `${roleOfFunction(stack, 'agentStep')} ${sandboxTasks}`,
    `${roleOfFunction(stack, 'sandboxReaper')} ${sandboxTasks}`,
    `${roleOfFunction(stack, 'agentStep')} arn:<AWS::Partition>:ecs:<AWS::Region>:<AWS::AccountId>:task-definition/${stack.sandbox.task.taskDefinition.family}:*`,
    `${stack.stateMachine.role.node.path} <${idOf(stack.functions.agentStep)}.Arn>:*`,
    `${stack.stateMachine.role.node.path} <${idOf(stack.functions.sandboxStep)}.Arn>:*`,
    `${stack.sandbox.task.executionRole.node.path} *`,
    `${stack.sandbox.prefixLists.role.node.path} *`,
    `${imageBuildRole} *`,
    `${imageBuild.failures.handler.role!.node.path} *`,
    `${azLookup.handler.role!.node.path} *`,
    `${azLookup.frameworkRole.node.path} <${idOf(azLookup.handler)}.Arn>:*`,
    `${stopTasks.handler.role!.node.path} *`,
    `${stopTasks.handler.role!.node.path} ${sandboxTasks}`,
    `${stopTasks.frameworkRole.node.path} <${idOf(stopTasks.handler)}.Arn>:*`,
    `${pruning.handler.role!.node.path} *`,
    `${pruning.handler.role!.node.path} <${idOf(stack.functions.agentStep)}.Arn>:*`,
    `${pruning.handler.role!.node.path} <${idOf(stack.functions.sandboxStep)}.Arn>:*`,
    `${pruning.frameworkRole.node.path} <${idOf(pruning.handler)}.Arn>:*`,
    `${imageBuildRole} arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:/aws/codebuild/<${imageBuildProject}>:*`,
    `${imageBuildRole} arn:<AWS::Partition>:codebuild:<AWS::Region>:<AWS::AccountId>:report-group/<${imageBuildProject}>-*`,
    `${imageBuildRole} arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-<AWS::AccountId>-<AWS::Region>/*`,
    `${roleOfFunction(stack, 'agentStep')} arn:<AWS::Partition>:bedrock:*::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0`,
    `${roleOfFunction(stack, 'webhook')} ${EXECUTIONS_ARN}`,
    `${roleOfFunction(stack, 'teamsWebhook')} ${EXECUTIONS_ARN}`,
    `${roleOfFunction(stack, 'dispatch')} ${EXECUTIONS_ARN}`,
    `${roleOfFunction(stack, 'agentStep')} ${EXECUTIONS_ARN}`,
    `${roleOfFunction(stack, 'runEnded')} ${EXECUTIONS_ARN}`,
    `${roleOfFunction(stack, 'dispatch')} ${bucketObjects.replace(/\*$/, 'prompts/*')}`,
    `${roleOfFunction(stack, 'dispatch')} ${bucketObjects.replace(/\*$/, '*/context.jsonl')}`,
    ...['agents/*/AGENT.md', '*/*/agents/*/AGENT.md', 'agents/*/AGENT.error.json', '*/*/agents/*/AGENT.error.json'].map(
      (key) => `${roleOfFunction(stack, 'dispatch')} ${bucketObjects.replace(/\*$/, key)}`,
    ),
    `${roleOfFunction(stack, 'scheduler')} ${bucketObjects.replace(/\*$/, 'events/*')}`,
    `${roleOfFunction(stack, 'scheduler')} ${bucketObjects.replace(/\*$/, 'uploads/*')}`,
    `${roleOfFunction(stack, 'scheduler')} ${bucketObjects.replace(/\*$/, '*/attachments/*')}`,
    `${roleOfFunction(stack, 'scheduler')} arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule/${STACK_NAME}-events/*`,
  ];
  const found: string[] = [];
  for (const { policy, statements } of policies(stack)) {
    const acks = acknowledgementsFor(policy);
    for (const arn of statements.flatMap((s) => list(s.Resource)).map(flatten)) {
      if (!arn.includes('*')) continue;
      found.push(`${roleOf(policy)} ${arn}`);
      const reason = acks.get(`AwsSolutions-IAM5[Resource::${arn}]`);
      assert.ok(reason && reason.length >= 20, `${roleOf(policy)}: ${arn} is not acknowledged with a reason`);
    }
  }
  assert.deepEqual([...new Set(found)].sort(), expected.sort());
});

const CALLBACK_RESOURCE = 'arn:aws:states:::lambda:invoke.waitForTaskToken';

/** The state machine's definition with intrinsics replaced by placeholder ARNs. */
function definitionOf(target: AgentRuntimeStack): { asl: Record<string, unknown>; refs: Map<string, string> } {
  const definition = target.resolve((target.stateMachine.node.defaultChild as CfnStateMachine).definitionString);
  const refs = new Map<string, string>();
  const render = (part: unknown): string => {
    if (typeof part === 'string') return part;
    if (flatten(part) === '<AWS::Partition>') return 'aws';
    const id = flatten(part).replace(/[<>]/g, '');
    const placeholder = `arn:aws:lambda:us-east-1:123456789012:function:placeholder-${refs.size}`;
    refs.set(placeholder, id);
    return placeholder;
  };
  const [, parts] = (definition as { 'Fn::Join': [string, unknown[]] })['Fn::Join'];
  return { asl: JSON.parse(parts.map(render).join('')) as Record<string, unknown>, refs };
}

test('state machine definition: valid ASL (asl-validator), JSONPath, the Prepare/Model/NextStep/Tool/SandboxTool/Finish loop, tool progress, approval waits, hand-over', () => {
  const { asl, refs } = definitionOf(stack);
  assert.notEqual(asl.QueryLanguage, 'JSONata');
  const validation = aslValidator(structuredClone(asl), { checkPaths: true, checkArn: true });
  assert.ok(validation.isValid, validation.errorsText('\n'));
  assert.equal(asl.TimeoutSeconds, DEFAULT_SETTINGS.runTimeoutMinutes * 60);

  type State = Record<string, unknown> & { Type: string };
  const states = asl.States as Record<string, State>;
  for (const [name, state] of Object.entries(states)) assert.notEqual(state.QueryLanguage, 'JSONata', name);
  // A run handed over from an earlier execution resumes at the choice; a new one prepares.
  assert.equal(asl.StartAt, 'Start');
  assert.deepEqual(states.Start, {
    Type: 'Choice',
    Choices: [{ Variable: '$.loop.next', IsPresent: true, Next: 'NextStep' }],
    Default: 'Prepare',
  });
  assert.deepEqual(Object.keys(states).sort(), [
    'AwaitApproval',
    'AwaitSubagents',
    'Connect',
    'Finish',
    'HandedOff',
    'HandleFailure',
    'Handoff',
    'Model',
    'NextStep',
    'Prepare',
    'ReachTool',
    'RunFailed',
    'RunSucceeded',
    'SandboxTool',
    'Start',
    'Tool',
    'ToolProgress',
  ]);

  // Which function (published version) and action each task invokes.
  const tasksWant: Record<string, { action: string; fn: FunctionRole }> = {
    Prepare: { action: 'prepare', fn: 'agentStep' },
    Model: { action: 'model', fn: 'agentStep' },
    Tool: { action: 'tool', fn: 'agentStep' },
    SandboxTool: { action: 'tool', fn: 'sandboxStep' },
    // A long command's last line reaches the chat from agent-step: the sandbox step has no route to it.
    ToolProgress: { action: 'progress', fn: 'agentStep' },
    ReachTool: { action: 'tool', fn: 'reachStep' },
    Connect: { action: 'connect', fn: 'reachStep' },
    Finish: { action: 'finish', fn: 'agentStep' },
    Handoff: { action: 'handoff', fn: 'agentStep' },
    HandleFailure: { action: 'fail', fn: 'agentStep' },
  };
  const tasks = Object.entries(states).filter(([, s]) => s.Type === 'Task' && s.Resource !== CALLBACK_RESOURCE);
  assert.deepEqual(tasks.map(([name]) => name).sort(), Object.keys(tasksWant).sort());
  for (const [name, task] of tasks) {
    const want = tasksWant[name]!;
    assert.deepEqual(task.Parameters, { action: want.action, 'state.$': '$' }, name);
    assert.equal(task.ResultPath, '$.loop', name);
    // Executions invoke the published version of the function, not $LATEST.
    const target = refs.get(task.Resource as string);
    assert.equal(resource(target!).Type, 'AWS::Lambda::Version', name);
    assert.equal((resource(target!).Properties.FunctionName as { Ref: string }).Ref, idOf(functionOf(stack, want.fn)), name);
    const retried = (task.Retry as { ErrorEquals: string[] }[]).flatMap((r) => r.ErrorEquals);
    assert.ok(retried.includes('Lambda.ServiceException') && retried.includes('Lambda.TooManyRequestsException'), name);
    assert.deepEqual(
      task.Catch,
      [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: name === 'HandleFailure' ? 'RunFailed' : 'HandleFailure' }],
      name,
    );
  }

  // Prepare goes on into the first model step in the same invocation, so NextStep comes after it:
  // a prompt a hook blocked (or a run stopped before it began) goes from there to Finish.
  assert.equal(states.Prepare!.Next, 'NextStep');
  assert.equal(states.Model!.Next, 'NextStep');
  // The tool steps and Connect go back to the choice.
  for (const name of ['Tool', 'SandboxTool', 'ToolProgress', 'ReachTool', 'Connect']) assert.equal(states[name]!.Next, 'NextStep', name);
  const choice = states.NextStep!;
  assert.equal(choice.Type, 'Choice');
  const choices = choice.Choices as { Next: string; And?: Record<string, unknown>[]; Variable?: string; IsPresent?: boolean }[];
  // First: a step that finished the run (its invocation released the thread) ends the execution.
  assert.deepEqual(choices[0], { Variable: '$.loop.released', IsPresent: true, Next: 'RunSucceeded' });
  assert.deepEqual(
    choices.slice(1).map((c) => [c.Next, c.And]),
    [
      [
        'Model',
        [
          { Variable: '$.loop.next', IsPresent: true },
          { Variable: '$.loop.next', StringEquals: 'model' },
        ],
      ],
      [
        'Tool',
        [
          { Variable: '$.loop.next', IsPresent: true },
          { Variable: '$.loop.next', StringEquals: 'tool' },
        ],
      ],
      [
        'SandboxTool',
        [
          { Variable: '$.loop.next', IsPresent: true },
          { Variable: '$.loop.next', StringEquals: 'sandbox' },
        ],
      ],
      [
        'ToolProgress',
        [
          { Variable: '$.loop.next', IsPresent: true },
          { Variable: '$.loop.next', StringEquals: 'progress' },
        ],
      ],
      [
        'ReachTool',
        [
          { Variable: '$.loop.next', IsPresent: true },
          { Variable: '$.loop.next', StringEquals: 'reach' },
        ],
      ],
      [
        'Connect',
        [
          { Variable: '$.loop.next', IsPresent: true },
          { Variable: '$.loop.next', StringEquals: 'connect' },
        ],
      ],
      [
        'AwaitApproval',
        [
          { Variable: '$.loop.next', IsPresent: true },
          { Variable: '$.loop.next', StringEquals: 'approval' },
        ],
      ],
      [
        'AwaitSubagents',
        [
          { Variable: '$.loop.next', IsPresent: true },
          { Variable: '$.loop.next', StringEquals: 'subagents' },
        ],
      ],
      [
        'Handoff',
        [
          { Variable: '$.loop.next', IsPresent: true },
          { Variable: '$.loop.next', StringEquals: 'handoff' },
        ],
      ],
    ],
  );
  assert.equal(states.Handoff!.Next, 'HandedOff');
  // AwaitApproval invokes agent-step with the task token and waits, for at most the loop's timeout;
  // it keeps its input, and every way out of it but a failure goes to the Tool step.
  const wait = states.AwaitApproval!;
  assert.equal(wait.Resource, CALLBACK_RESOURCE);
  const parameters = wait.Parameters as { FunctionName: string; Payload: Record<string, unknown> };
  assert.equal(resource(refs.get(parameters.FunctionName)!).Type, 'AWS::Lambda::Version');
  assert.equal(
    (resource(refs.get(parameters.FunctionName)!).Properties.FunctionName as { Ref: string }).Ref,
    idOf(functionOf(stack, 'agentStep')),
  );
  assert.deepEqual(parameters.Payload, { action: 'approval', 'state.$': '$', 'taskToken.$': '$$.Task.Token' });
  assert.equal(wait.TimeoutSecondsPath, '$.loop.approval.timeoutSeconds');
  assert.equal(wait.ResultPath, null);
  assert.equal(wait.Next, 'Tool');
  assert.deepEqual(wait.Catch, [
    { ErrorEquals: ['States.Timeout', 'ApprovalNotWaiting'], ResultPath: null, Next: 'Tool' },
    { ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'HandleFailure' },
  ]);
  // AwaitSubagents waits the same way for the children a run's subagent calls started, for at most the
  // run's time left; the Tool step after it gives each call its child's answer (or stops a late child).
  const children = states.AwaitSubagents!;
  assert.equal(children.Resource, CALLBACK_RESOURCE);
  const childParameters = children.Parameters as { FunctionName: string; Payload: Record<string, unknown> };
  assert.equal(
    (resource(refs.get(childParameters.FunctionName)!).Properties.FunctionName as { Ref: string }).Ref,
    idOf(functionOf(stack, 'agentStep')),
  );
  assert.deepEqual(childParameters.Payload, { action: 'subagents', 'state.$': '$', 'taskToken.$': '$$.Task.Token' });
  assert.equal(children.TimeoutSecondsPath, '$.loop.subagents.timeoutSeconds');
  assert.equal(children.ResultPath, null);
  assert.equal(children.Next, 'Tool');
  assert.deepEqual(children.Catch, [
    { ErrorEquals: ['States.Timeout'], ResultPath: null, Next: 'Tool' },
    { ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'HandleFailure' },
  ]);
  assert.equal(states.HandedOff!.Type, 'Succeed');
  assert.equal(choice.Default, 'Finish');
  assert.equal(states.Finish!.Next, 'RunSucceeded');
  assert.equal(states.RunSucceeded!.Type, 'Succeed');
  assert.equal(states.HandleFailure!.Next, 'RunFailed');
  assert.equal(states.RunFailed!.Type, 'Fail');
  assert.equal(states.RunFailed!.Error, 'AgentRunFailed');
});

test('state machine role: invokes the published versions of agent-step and sandbox-step, old ones included; versions outlive deploys', () => {
  const invoked = policies(stack)
    .filter(({ policy }) => roleOf(policy) === stack.stateMachine.role.node.path)
    .flatMap(({ statements }) => statements)
    .filter((s) => list(s.Action).includes('lambda:InvokeFunction'))
    .flatMap((s) => list(s.Resource))
    .map(flatten);
  const stepFunctions = [stack.functions.agentStep, stack.functions.sandboxStep, stack.functions.reachStep];
  for (const fn of stepFunctions) assert.ok(invoked.includes(`<${idOf(fn)}.Arn>:*`), `every version of ${idOf(fn)}`);
  const versions = Object.entries(
    template.toJSON().Resources as Record<string, { Type: string; DeletionPolicy?: string; Properties: { FunctionName: { Ref: string } } }>,
  ).filter(([, r]) => r.Type === 'AWS::Lambda::Version');
  assert.deepEqual(versions.map(([, r]) => r.Properties.FunctionName.Ref).sort(), stepFunctions.map(idOf).sort());
  for (const [id, version] of versions)
    assert.equal(version.DeletionPolicy, 'Retain', `${id}: a deploy must not delete the version a run uses`);
});

test('cdk-nag AwsSolutions: no unacknowledged errors or warnings', () => {
  const report = new AwsSolutionsChecks().validateScope(app);
  const findings = report.violations.map(
    (v) => `${v.severity} ${v.ruleName} ${v.violatingResources.map((r) => r.constructPath).join(', ')}`,
  );
  assert.deepEqual(findings, []);
  // cdk-nag v3 reports through the validation report, not annotations; none may appear either way.
  const nag = Match.stringLikeRegexp('AwsSolutions-.*');
  assert.deepEqual(Annotations.fromStack(stack).findError('*', nag), []);
  assert.deepEqual(Annotations.fromStack(stack).findWarning('*', nag), []);
});

/**
 * CDK acknowledges some of its own template-validation rules (cfn-lint ids, not cdk-nag findings, and
 * not ours to justify): W3010 (literal AZs) on the stack once the VPC reads stack.availabilityZones, and
 * the flow log's spec quirks. Anything else acknowledged must be an AwsSolutions rule.
 */
const isCdkOwnAcknowledgement = (id: string): boolean => id.startsWith('CloudFormation-Validate::');

test('cdk-nag: every acknowledgement is an AwsSolutions rule with a specific reason', () => {
  const acknowledgements = allAcknowledgements(app);
  assert.ok(acknowledgements.length > 0);
  const cdkOwn = acknowledgements.filter((a) => isCdkOwnAcknowledgement(a.id)).map((a) => a.path);
  assert.deepEqual([...new Set(cdkOwn)].sort(), [stack.node.path, `${stack.sandbox.network.vpc.node.path}/FlowLog`].sort());
  for (const { path, id, reason } of acknowledgements.filter((a) => !isCdkOwnAcknowledgement(a.id))) {
    assert.match(id, /^AwsSolutions-[A-Z]+\d+(\[.+\])?$/, path);
    assert.ok(reason.trim().length >= 20, `${path} ${id}: reason too short`);
  }
});

test('cdk-nag registered as in infra/app.ts: synth passes and the validation report is clean', () => {
  const outdir = mkdtempSync(join(tmpdir(), 'threadwork-nag-'));
  try {
    // The plugin runs inside synth (and makes it throw on errors), so it is registered before.
    const { app: nagApp } = synth({ outdir, withNag: true });
    const assembly = nagApp.synth();
    // Acknowledgements are kept in the template as an audit trail.
    const synthesized = JSON.parse(readFileSync(join(assembly.directory, `${STACK_NAME}.template.json`), 'utf8')) as {
      Resources: Record<string, { Metadata?: { cdk_nag?: { rules_to_suppress: { id: string; reason: string }[] } } }>;
    };
    const secretAudit = synthesized.Resources[idOf(stack.chatSecrets.slack!)]?.Metadata?.cdk_nag?.rules_to_suppress ?? [];
    assert.deepEqual(
      secretAudit.map((r) => r.id).filter((id) => !isCdkOwnAcknowledgement(id)),
      ['AwsSolutions-SMG4'],
    );
    const reportFile = join(assembly.directory, 'validation-report.json');
    if (existsSync(reportFile)) {
      const report = JSON.parse(readFileSync(reportFile, 'utf8')) as { pluginReports: { violations?: unknown[] }[] };
      for (const plugin of report.pluginReports) assert.deepEqual(plugin.violations ?? [], [], JSON.stringify(plugin));
    }
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
});

test('settings from context: another profile, retention and run timeout flow into the template; nag stays clean', () => {
  const modelId = 'us.anthropic.claude-haiku-4-5-20251001-v1:0';
  const custom = synth({ settings: { modelId, logRetentionDays: '90', runTimeoutMinutes: '15' } });
  const agentStep = custom.template.toJSON().Resources[logicalId(custom.stack, custom.stack.functions.agentStep)] as Resource;
  assert.equal((agentStep.Properties.Environment as { Variables: Record<string, unknown> }).Variables.BEDROCK_MODEL_ID, modelId);
  for (const group of Object.values(custom.template.findResources('AWS::Logs::LogGroup')) as Resource[]) {
    assert.equal(group.Properties.RetentionInDays, 90);
  }
  assert.equal(definitionOf(custom.stack).asl.TimeoutSeconds, 15 * 60);
  const bedrock = policies(custom.stack)
    .flatMap((p) => p.statements)
    .filter((s) => list(s.Action).includes('bedrock:InvokeModel'))
    .flatMap((s) => list(s.Resource).map(flatten));
  assert.deepEqual(bedrock.sort(), [
    'arn:<AWS::Partition>:bedrock:*::foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0',
    `arn:<AWS::Partition>:bedrock:<AWS::Region>:<AWS::AccountId>:inference-profile/${modelId}`,
  ]);
  assert.deepEqual(new AwsSolutionsChecks().validateScope(custom.app).violations, []);
});

test('settings from context: the reach step in a VPC (its subnets and security groups, network-interface permissions scoped to them); nag has nothing to say about it', () => {
  const placed = synth({
    settings: {
      reachVpcId: 'vpc-0123456789abcdef0',
      reachSubnetIds: 'subnet-0aaaaaaaa,subnet-0bbbbbbbb',
      reachSecurityGroupIds: 'sg-0cccccccc',
    },
  });
  const reach = placed.template.toJSON().Resources[logicalId(placed.stack, placed.stack.functions.reachStep)] as Resource;
  assert.deepEqual(reach.Properties.VpcConfig, { SubnetIds: ['subnet-0aaaaaaaa', 'subnet-0bbbbbbbb'], SecurityGroupIds: ['sg-0cccccccc'] });
  const create = policies(placed.stack)
    .filter(({ policy }) => roleOf(policy) === roleOfFunction(placed.stack, 'reachStep'))
    .flatMap((p) => p.statements)
    .filter((s) => list(s.Action).includes('ec2:CreateNetworkInterface'))
    .flatMap((s) => list(s.Resource).map(flatten));
  assert.ok(
    create.some((arn) => arn.endsWith(':subnet/subnet-0aaaaaaaa')) && create.some((arn) => arn.endsWith(':security-group/sg-0cccccccc')),
    create.join(', '),
  );
  const reachFindings = new AwsSolutionsChecks()
    .validateScope(placed.app)
    .violations.filter((v) => JSON.stringify(v).includes('ReachStep'));
  assert.deepEqual(reachFindings, []);
  // Without the context the function stays out of any VPC.
  assert.equal((template.toJSON().Resources[idOf(stack.functions.reachStep)] as Resource).Properties.VpcConfig, undefined);
});

test('settings from context: a plain foundation model id is granted in this Region only', () => {
  const custom = synth({ settings: { modelId: 'anthropic.claude-3-5-haiku-20241022-v1:0' } });
  const bedrock = policies(custom.stack)
    .flatMap((p) => p.statements)
    .filter((s) => list(s.Action).includes('bedrock:InvokeModel'));
  assert.equal(bedrock.length, 1);
  assert.deepEqual(list(bedrock[0]!.Resource).map(flatten), [
    'arn:<AWS::Partition>:bedrock:<AWS::Region>::foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0',
  ]);
  assert.equal(bedrock[0]!.Condition, undefined);
  assert.deepEqual(new AwsSolutionsChecks().validateScope(custom.app).violations, []);
});

// The AWS SDK clients each function's code uses: a bundle imports these from the Lambda runtime
// (or, with bundleAwsSdk, carries them) and no other.
const SDK_CLIENTS: Record<FunctionRole, string[]> = {
  webhook: ['client-dynamodb', 'client-s3', 'client-secrets-manager', 'client-sfn', 'client-sqs'],
  // S3: the command registry's settings command (answered at dispatch, but registered in both webhooks).
  teamsWebhook: ['client-dynamodb', 'client-s3', 'client-secrets-manager', 'client-sfn', 'client-sqs'],
  dispatch: ['client-dynamodb', 'client-s3', 'client-secrets-manager', 'client-sfn'],
  runEnded: ['client-bedrock-runtime', 'client-dynamodb', 'client-ecs', 'client-s3', 'client-secrets-manager', 'client-sfn'],
  // client-lambda: lambda hooks (settings.json `hooks`) invoke the functions cdk.json `hookFunctions` declares (loaded at the first hook).
  agentStep: [
    'client-bedrock-runtime',
    'client-dynamodb',
    'client-ecs',
    'client-lambda',
    'client-s3',
    'client-secrets-manager',
    'client-sfn',
  ],
  sandboxStep: ['client-dynamodb', 'client-s3'],
  reachStep: ['client-dynamodb', 'client-kms', 'client-s3', 'client-secrets-manager'],
  sandboxReaper: ['client-dynamodb', 'client-ecs'],
  scheduler: ['client-dynamodb', 'client-s3', 'client-scheduler', 'client-secrets-manager', 'client-sqs'],
  mcpOAuth: ['client-dynamodb', 'client-kms', 'client-secrets-manager'],
};
// esbuild keeps an import of an external package even when nothing imported is used (it cannot know
// the package has no side effects), so a function also loads from the runtime the clients of shared
// modules it imports for other exports: sandbox-step the ECS commands of shared/sandbox/lifecycle.ts,
// the scheduler a Step Functions command.
const UNUSED_RUNTIME_IMPORTS: Partial<Record<FunctionRole, string[]>> = { sandboxStep: ['client-ecs'] };
// Functions that never talk to Slack: the Chat SDK (~700 KB minified) stays out of their bundles.
const WITHOUT_CHAT_SDK: FunctionRole[] = ['sandboxStep', 'reachStep', 'sandboxReaper', 'mcpOAuth'];
// The Teams SDK and what it brings: no function carries them (the Teams webhook receives through
// the Connector adapter, shared/platforms/teams/receive.ts).
const TEAMS_SDK = [
  '@microsoft/teams.apps',
  '@microsoft/teams.api',
  '@microsoft/teams.graph-endpoints',
  '@azure/msal-node',
  'express',
  'iconv-lite',
];

interface Bundle {
  /** index.mjs as deployed. */
  readonly source: string;
  readonly path: string;
  /** The packages that went into it, from the source map's list of inputs. */
  readonly packages: Set<string>;
  readonly sources: string[];
}

/** Synthesizes the stack with real bundling and hands each function's bundle to `check`. */
function withBundles(settings: Record<string, unknown>, check: (role: FunctionRole, bundle: Bundle) => void): void {
  const outdir = mkdtempSync(join(tmpdir(), 'threadwork-bundle-'));
  try {
    const bundled = synth({ bundle: true, outdir, settings });
    const assembly = bundled.app.synth();
    const manifest = JSON.parse(readFileSync(join(assembly.directory, `${STACK_NAME}.assets.json`), 'utf8')) as {
      files: Record<string, { source: { path: string }; destinations: Record<string, { objectKey: string }> }>;
    };
    for (const role of ROLES) {
      const cfnFunction = functionOf(bundled.stack, role).node.defaultChild as CfnFunction;
      const code = bundled.stack.resolve(cfnFunction.code) as { s3Key: string };
      const asset = Object.values(manifest.files).find((f) => Object.values(f.destinations).some((d) => d.objectKey === code.s3Key));
      assert.ok(asset, `${role}: asset ${code.s3Key} not in the manifest`);
      const path = join(assembly.directory, asset.source.path, 'index.mjs');
      assert.ok(existsSync(path), `${role}: no index.mjs`);
      assert.ok(existsSync(`${path}.map`), `${role}: no source map`);
      const { sources } = JSON.parse(readFileSync(`${path}.map`, 'utf8')) as { sources: string[] };
      const packages = new Set(sources.flatMap((source) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(source)?.[1] ?? []));
      check(role, { source: readFileSync(path, 'utf8'), path, packages, sources });
    }
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}

/** The packages a bundle imports (ESM, also on first use: `import("…")`) or requires (bundled CommonJS) at run time, by specifier prefix. */
const importedAtRunTime = (source: string, prefix: string): string[] => {
  const specifiers = [...source.matchAll(/(?:from|import\(?|require\()\s*["']([^"']+)["']/g)].map((m) => m[1]!);
  return [...new Set(specifiers.filter((s) => s.startsWith(prefix)))].sort();
};

test('bundling for real: each function is an ESM bundle within 1 MB with the require shim, a handler export and a source map, importing the runtime AWS SDK clients it uses and carrying only the SDKs it needs', () => {
  const sizes: Partial<Record<FunctionRole, number>> = {};
  withBundles({}, (role, { source, path, packages, sources }) => {
    assert.ok(source.startsWith("import { createRequire as __threadworkCreateRequire } from 'node:module';"), role);
    assert.match(source, /export\s*\{[^}]*\bhandler\b[^}]*\}/, `${role}: no handler export`);
    // Parses as an ES module (node --check treats .mjs as ESM): no CommonJS wrapper left at the top level.
    const check = spawnSync(process.execPath, ['--check', path], { encoding: 'utf8' });
    assert.equal(check.status, 0, `${role}: ${check.stderr}`);
    const limit = bundleBudgetOf(role);
    assert.ok(Buffer.byteLength(source) <= limit, `${role}: index.mjs is ${Buffer.byteLength(source)} bytes, over ${limit}`);
    assert.equal(limit, BUNDLE_BUDGET, `${role}: a budget of its own`);
    assert.deepEqual(
      TEAMS_SDK.filter((name) => packages.has(name)),
      [],
      `${role}: the Teams SDK`,
    );
    // The media type database stays out of every bundle (infra/bundled/mime-db-empty.ts), and so do
    // debug and get-intrinsic's polyfills (infra/bundled/debug-off.cjs, set-tostringtag.cjs).
    assert.equal(packages.has('mime-db'), false, `${role}: mime-db`);
    assert.deepEqual(
      ['debug', 'get-intrinsic', 'es-set-tostringtag'].filter((name) => packages.has(name)),
      [],
      `${role}: replaced packages`,
    );
    sizes[role] = Buffer.byteLength(source);
    // The AWS SDK comes from the Lambda runtime: none of it is bundled, and the clients are imported by name.
    assert.deepEqual(
      [...packages].filter((name) => /^@(aws-sdk|smithy|aws-crypto)\//.test(name)),
      [],
      `${role}: bundled AWS SDK code`,
    );
    assert.deepEqual(importedAtRunTime(source, '@smithy/'), [], `${role}: @smithy imported directly`);
    assert.deepEqual(
      importedAtRunTime(source, '@aws-sdk/'),
      [...SDK_CLIENTS[role], ...(UNUSED_RUNTIME_IMPORTS[role] ?? []), 'lib-dynamodb'].map((name) => `@aws-sdk/${name}`).sort(),
      `${role}: AWS SDK packages imported from the runtime`,
    );
    assert.equal(packages.has('chat'), !WITHOUT_CHAT_SDK.includes(role), `${role}: the Chat SDK`);
    // Socket mode is never used: its client and the WebSocket package stay out, replaced by a module that
    // throws where the full Slack adapter (with @slack/web-api) is bundled: the Slack webhook only; every
    // other function sends through shared/platforms/slack/sender.ts.
    assert.equal(packages.has('@slack/socket-mode') || packages.has('ws'), false, `${role}: socket mode client bundled`);
    assert.equal(packages.has('@slack/web-api'), role === 'webhook', `${role}: the full Slack adapter's Web API client`);
    assert.equal(
      sources.some((s) => s.endsWith('infra/bundled/socket-mode-unused.ts')),
      role === 'webhook',
      `${role}: the socket mode stand-in`,
    );
    const locales = sources.filter((s) => /zod\/v4\/locales\/(?!en\.js)/.test(s));
    assert.deepEqual(locales, [], `${role}: zod's other locales`);
  });
  console.log(`bundle sizes (KB): ${JSON.stringify(Object.fromEntries(Object.entries(sizes).map(([r, b]) => [r, Math.round(b / 1024)])))}`);
});

test('bundling for real with bundleAwsSdk: each function carries the pinned AWS SDK clients it uses and imports none from the runtime', () => {
  withBundles({ bundleAwsSdk: 'true' }, (role, { source, packages }) => {
    const clients = [...packages].filter((name) => name.startsWith('@aws-sdk/client-')).map((name) => name.slice('@aws-sdk/'.length));
    assert.deepEqual(clients.sort(), SDK_CLIENTS[role], `${role}: AWS SDK clients`);
    assert.ok(packages.has('@smithy/core'), role);
    // (The SDK's own optional requires, such as @aws-sdk/signature-v4-crt, stay as they are when bundled.)
    assert.deepEqual(importedAtRunTime(source, '@aws-sdk/client-'), [], `${role}: clients imported from the runtime`);
    assert.deepEqual(importedAtRunTime(source, '@aws-sdk/lib-'), [], `${role}: lib-dynamodb imported from the runtime`);
    assert.equal(packages.has('@slack/socket-mode') || packages.has('ws'), false, `${role}: socket mode client bundled`);
  });
});

test('least privilege: only the reach step and the OAuth function may read the MCP secrets (<stack>/mcp/*), and they read no other secret', () => {
  const mcpSecrets = `arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:${stack.stackName}/mcp/*`;
  for (const role of ROLES) {
    const read = policies(stack)
      .filter(({ policy }) => roleOf(policy) === roleOfFunction(stack, role))
      .flatMap(({ statements }) => statements)
      .filter((s) => list(s.Action).includes('secretsmanager:GetSecretValue'))
      .flatMap((s) => list(s.Resource).map(flatten));
    // The OAuth function reads an operator's OAuth client (oauthClient: "${secret:NAME}").
    if (role === 'reachStep' || role === 'mcpOAuth') assert.deepEqual(read, [mcpSecrets], role);
    else
      assert.ok(
        !read.includes(mcpSecrets) && !read.some((arn) => arn.includes('/mcp/') || arn.endsWith(':secret:*')),
        `${role}: ${read.join(', ')}`,
      );
  }
});

test('least privilege: each function holds exactly the DynamoDB, SQS send and secret actions its code calls', () => {
  const chatState = ['dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'];
  const expected: Record<FunctionRole, { dynamodb: string[]; send: string[]; secret: string[] }> = {
    webhook: { dynamodb: chatState, send: ['sqs:SendMessage'], secret: ['secretsmanager:GetSecretValue'] },
    teamsWebhook: { dynamodb: chatState, send: ['sqs:SendMessage'], secret: ['secretsmanager:GetSecretValue'] },
    // A thread's first message is admitted with the pause flag checked inside the admission's transaction.
    dispatch: {
      dynamodb: [...chatState, 'dynamodb:Query', 'dynamodb:BatchGetItem', 'dynamodb:ConditionCheckItem'].sort(),
      send: [],
      secret: ['secretsmanager:GetSecretValue'],
    },
    runEnded: { dynamodb: chatState, send: [], secret: ['secretsmanager:GetSecretValue'] },
    // A model step checks the run's flags and its reply record inside its budget transactions; prepare
    // reads the actor item and the channel's workspace version in one BatchGetItem.
    agentStep: {
      dynamodb: ['dynamodb:BatchGetItem', 'dynamodb:ConditionCheckItem', ...chatState],
      send: [],
      secret: ['secretsmanager:GetSecretValue'],
    },
    sandboxStep: { dynamodb: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], send: [], secret: [] },
    // The MCP secrets (<stack>/mcp/*) only: see the secret resource test.
    // People's OAuth tokens: read, and put again after a refresh.
    reachStep: {
      dynamodb: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
      send: [],
      secret: ['secretsmanager:GetSecretValue'],
    },
    // Connect states: read, started, deleted on condition; tokens put.
    mcpOAuth: { dynamodb: chatState, send: [], secret: ['secretsmanager:GetSecretValue'] },
    sandboxReaper: { dynamodb: ['dynamodb:DeleteItem', 'dynamodb:Query', 'dynamodb:UpdateItem'], send: [], secret: [] },
    scheduler: { dynamodb: chatState, send: ['sqs:SendMessage'], secret: ['secretsmanager:GetSecretValue'] },
  };
  for (const role of ROLES) {
    const actions = policies(stack)
      .filter(({ policy }) => roleOf(policy) === roleOfFunction(stack, role))
      .flatMap(({ statements }) => statements.flatMap((s) => list(s.Action)));
    const of = (service: RegExp) => [...new Set(actions.filter((a) => service.test(a)))].sort();
    assert.deepEqual(of(/^dynamodb:/), expected[role].dynamodb, `${role}: DynamoDB`);
    // Consumers (dispatch, run-ended) also hold what their event source mapping needs to receive.
    assert.deepEqual(of(/^sqs:SendMessage/), expected[role].send, `${role}: SQS send`);
    assert.deepEqual(of(/^secretsmanager:/), expected[role].secret, `${role}: Secrets Manager`);
  }
});

test('the MCP tokens key: rotated, and kms:Encrypt/Decrypt on it held only by the reach step and the OAuth function', () => {
  assert.equal(resource(idOf(stack.mcpTokensKey)).Properties.EnableKeyRotation, true);
  const keyArn = { 'Fn::GetAtt': [idOf(stack.mcpTokensKey), 'Arn'] };
  const holders = new Map<string, string[]>();
  for (const { policy, statements } of policies(stack)) {
    for (const s of statements.filter((st) => list(st.Action).some((a) => a.startsWith('kms:')))) {
      assert.deepEqual(list(s.Resource), [keyArn], roleOf(policy));
      holders.set(roleOf(policy), list(s.Action).sort());
    }
  }
  assert.deepEqual(
    new Map([...holders].sort()),
    new Map(
      [roleOfFunction(stack, 'reachStep'), roleOfFunction(stack, 'mcpOAuth')].sort().map((role) => [role, ['kms:Decrypt', 'kms:Encrypt']]),
    ),
  );
});
