// The local cloud: the stack as synthesized for AWS, run on one machine. Each function runs in a
// worker of the local Lambda (packages/local-cloud/src/lambda) with its own environment, credentials and network;
// the state lives in DynamoDB Local and fauxqs (SQS FIFO + S3), reached through AWS_ENDPOINT_URL_*;
// the synthesized state machine runs in a local Step Functions stand-in; API Gateway, the event
// source mapping, EventBridge, Scheduler, ECS and Secrets Manager are stand-ins wired from the
// template itself.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { CreateScheduleGroupCommand, SchedulerClient } from '@aws-sdk/client-scheduler';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SandboxNetworkMode } from '../../../infra/settings.ts';
import type { SlackCredentials } from '../../../shared/platforms/slack/descriptor.ts';
import type { TeamsCredentials } from '../../../shared/platforms/teams/descriptor.ts';
import { descriptorNamed, PLATFORM_DESCRIPTORS, type PlatformName } from '../../../shared/platforms/descriptors.ts';
import { PROJECT_ROOT, type FunctionRole } from '../../../infra/function-entries.ts';
import { freePort, startDynamoDbLocal, startSqsAndS3 } from './emulators.ts';
import { startApiGateway, type ApiGatewayStandIn } from './api-gateway.ts';
import type { SqsPoller } from './sqs-poller.ts';
import { startLocalEcs, type LocalEcs } from './ecs/index.ts';
import { chooseIsolation, type LocalSandboxSetting } from './ecs/isolation.ts';
import { bundleSandboxServer } from './ecs/server-bundle.ts';
import { startLocalScheduler, type LocalScheduler, type SchedulerClock } from './scheduler/index.ts';
import { startLocalEventBridge, type LocalEventBridge } from './eventbridge.ts';
import { startS3Notifications, type S3Notifications } from './s3-notifications.ts';
import { matchesEventPattern } from './event-pattern.ts';
import { functionLogicalIdFromArn } from './template.ts';
import { LOCAL_VERSION_PROPERTY, localGetAtt, localPhysicalName, resolveCloudFormation } from './resources.ts';
import { createLocalIam, signingOf } from './iam/index.ts';
import type { ModelAuthorizer } from './bedrock.ts';
import type { AwsCall } from './front-door/index.ts';
import { startAwsEndpoints } from './cloud/endpoints.ts';
import { startLocalSecretsManager, type LocalSecretsManager } from './secrets-manager.ts';
import { startLocalKms, type LocalKms } from './kms.ts';
import { startDeploymentEndpoints, type DeploymentEndpoints } from './cloud/deployment.ts';
import { startLocalStepFunctions, type LocalStepFunctions } from './step-functions/index.ts';
import { createLocalLambda, type LocalLambda } from './lambda/runtime.ts';
import { startOperatorFunctions, type LocalOperatorFunctions, type OperatorFunction } from './lambda/operator-functions.ts';
import { functionVersions } from './cloud/functions.ts';
import { deployTaskDefinitions, taskDefinitionFamilies } from './cloud/task-definitions.ts';
import { createLocalResources, resourcesOfType, type Template } from './cloud/resources.ts';
import { synthesizeLocalStack, type LocalStackSettings } from './cloud/synth.ts';
import {
  apiRoutes,
  busRules,
  eventBridgeNotifiedBuckets,
  inboxPoller,
  notificationConfigurations,
  scheduledRules,
  statusChangeRules,
} from './cloud/triggers.ts';
import { startObjectCreatedEvents } from './cloud/object-created-events.ts';
import { stopParts } from './cloud/stop-parts.ts';
import { createLocalMetrics, startLocalMetricsEndpoint, type LocalMetrics } from './metrics.ts';
import type { LocalHttpServer } from './http-server.ts';

/* eslint-disable @typescript-eslint/no-explicit-any -- handler events and results are JSON */
type Handler = (event: any) => Promise<any>;

export interface LocalCloudOptions {
  /** Keep the table in a file in this directory (`npm start -- --persist`); default: in memory. */
  dynamoDbPath?: string;
  /** Port of the API Gateway stand-in (0: any free port). */
  port?: number;
  /** The Slack app's credentials: the stack's Slack secret starts with them. */
  slack: SlackCredentials & { apiUrl?: string };
  /**
   * The Teams app, where its tokens come from, and the Bot Connector origins a first message may go
   * to (TEAMS_CONNECTOR_ORIGINS): a stand-in's URLs, or Microsoft's when unset.
   */
  teams?: TeamsCredentials & {
    openIdMetadataUrl?: string;
    tokenUrl?: string;
    connectorOrigins?: string;
  };
  /** The chatPlatforms deployment setting; default Slack, and Teams too when `teams` is given. */
  chatPlatforms?: PlatformName[];
  /** The alarmEmail deployment setting: the alarm topic's email subscription. */
  alarmEmail?: string;
  modelId?: string;
  /** Declared triggers, as `triggers` in cdk.json (validated as `cdk synth` does). */
  triggers?: unknown;
  /** The local EventBridge's port (PutEvents, and events of AWS services). Default: any free port. */
  eventBridgePort?: number;
  /** The port of the metrics summary (GET /metrics, for `npm run ops -- metrics`). Default: any free port. */
  metricsPort?: number;
  /** Overrides every Step Functions Retry wait, so failure tests are fast. */
  retryIntervalMs?: number;
  /** Overrides the inbox's visibility timeout (a failed batch item reappears after it). */
  visibilityTimeoutSeconds?: number;
  /**
   * Keep the caller's AWS credentials for the handlers (so Bedrock can be real); the emulators accept
   * any. When false (the default), handlers get local credentials of their own.
   */
  useAmbientCredentials?: boolean;
  /** The event bus's clock: schedules fire by it. Default: real time (a manual clock in tests). */
  clock?: SchedulerClock;
  /** Sandbox processes' port (each task has its own loopback address); default: a free port. */
  sandboxPort?: number;
  /**
   * The sandboxNetwork deployment setting the stack is synthesized with (default `isolated`). The
   * security groups, which the local cloud enforces, are the same in every mode; where tasks run and
   * whether they get a public address differ.
   */
  sandboxNetwork?: SandboxNetworkMode;
  /** The reachAllowLoopback deployment setting (local testing only): web_fetch may read a test server on 127.0.0.1. */
  reachAllowLoopback?: boolean;
  /** The hookFunctions deployment setting: the operator functions lambda hooks may invoke (by ARN). */
  hookFunctions?: string[];
  /** Lambda functions outside the stack, by ARN, as an operator deployed them (a lambda hook's target); more with operatorFunctions.register. */
  operatorFunctions?: Record<string, OperatorFunction>;
  /** LOCAL_SANDBOX: how sandbox tasks are isolated (default `isolated`; see ecs/isolation.ts). */
  localSandbox?: LocalSandboxSetting;
  /** The bubblewrap binary; default `bwrap` on the PATH. */
  bubblewrap?: string;
  /** Extra environment for the handlers (LOG_LEVEL, AWS_ENDPOINT_URL_BEDROCK_RUNTIME, ...). */
  env?: Record<string, string>;
  /** Changes the synthesized template before the local cloud reads it (tests of what AWS would refuse). */
  transformTemplate?: (template: Template) => Template;
  onError?: (where: string, error: unknown) => void;
  /** Each log line a function writes (not its EMF metrics); default: printed to stdout. */
  onLog?: (functionId: string, line: string) => void;
  /** Each step of the start as it finishes, with how long it took (steps may overlap): `npm start` prints them. */
  onStep?: (step: string, ms: number) => void;
}

/**
 * A crash injected into a function, for failure tests: `before` it runs (nothing happened), or
 * `after` it ran (its effects happened, then the invocation failed, as when a Lambda dies before
 * returning). The error name decides who retries: Lambda.ServiceException is retried by the state
 * machine's task retry; any other name goes to its Catch.
 */
export interface Fault {
  role: FunctionRole;
  /** For agent-step and sandbox-step: only this action. */
  action?: string;
  when: 'before' | 'after';
  errorName?: string;
  times?: number;
}

export interface LocalCloud {
  apiUrl: string;
  slackEventsUrl: string;
  /** The Teams messaging endpoint (POST /api/messages). */
  teamsMessagesUrl: string;
  template: Template;
  stateMachineArn: string;
  stepFunctions: LocalStepFunctions;
  /** The local ECS: each sandbox task is a command server process (in bubblewrap unless LOCAL_SANDBOX=unsafe). */
  ecs: LocalEcs;
  /** EventBridge Scheduler (schedules of event files) and the custom event bus. */
  scheduler: LocalScheduler;
  eventBridge: LocalEventBridge;
  /** S3 notifications for event files: poll() delivers what changed now. */
  s3Notifications: S3Notifications;
  /** "Object Created" events of the buckets declared S3 triggers name: poll() sends what is new now. */
  objectCreatedEvents: S3Notifications;
  /** The stack's secrets (the Slack secret holds the credentials given); PutSecretValue changes one. */
  secretsManager: LocalSecretsManager;
  /** The stack's KMS keys (AWS::KMS::Key), for Encrypt and Decrypt. */
  kms: LocalKms;
  /** The local Lambda: its invocations say which function version ran what. */
  lambda: LocalLambda;
  /** Functions outside the stack (lambda hooks' targets), reached through a front door like AWS Lambda. */
  operatorFunctions: LocalOperatorFunctions;
  /** The functions' EMF metrics, read from their output; `endpoint` serves their summary (GET /metrics). */
  metrics: LocalMetrics & { endpoint: string };
  /** Every AWS call the functions made, with the role that made it (through the front doors). */
  awsCalls: AwsCall[];
  /** The IAM role (logical id) each function runs as: what an AWS call's `caller` names. */
  functionRoles: Record<FunctionRole, string>;
  /** Bedrock's side of the local IAM, for a local model endpoint (the Bedrock fake's setAuthorizer). */
  authorizeModelRequest: ModelAuthorizer;
  /** Invokes each function by role, as its trigger would (synchronously). */
  handlers: Record<FunctionRole, Handler>;
  /** `<platform>SecretArn` (slackSecretArn, teamsSecretArn): where the stack serves that platform. */
  names: {
    table: string;
    bucket: string;
    inboxUrl: string;
    dlqUrl: string;
    scheduleGroup: string;
  } & Partial<Record<`${PlatformName}SecretArn`, string>>;
  /** The operator's clients: full access, as a person with the account's admin role. */
  clients: { dynamodb: DynamoDBClient; s3: S3Client; sqs: SQSClient };
  /** What every function's environment shares (endpoints, region). */
  env: Record<string, string>;
  /**
   * What the operator's tools (`npm run doctor`) reach the stack through: STS, CloudFormation (the
   * stack, named `stackName`, with its outputs), ECR, Secrets Manager, as AWS_ENDPOINT_URL_* variables.
   */
  deployment: DeploymentEndpoints;
  poller: SqsPoller;
  /**
   * `cdk deploy` of a changed stack: new function versions, roles and state machine definition (for
   * executions started after it; running ones go on with theirs). The wiring of triggers stays.
   */
  redeploy(change: { modelId?: string; transformTemplate?: LocalCloudOptions['transformTemplate'] }): Promise<void>;
  injectFault(fault: Fault): void;
  stop(): Promise<void>;
}

const OPERATOR_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' };
/** The command server's port in the template (SANDBOX_PORT); locally a free port stands in for it. */
const TEMPLATE_SANDBOX_PORT = 8080;

/** The state machine's ASL, resolved as CloudFormation would (version ARNs with their qualifier). */
function stateMachineDefinition(template: Template, stateMachineId: string): object {
  return JSON.parse(String(resolveCloudFormation(template, template.Resources[stateMachineId]!.Properties.DefinitionString))) as object;
}

const platformsOf = (options: Pick<LocalCloudOptions, 'teams' | 'chatPlatforms'>): PlatformName[] =>
  options.chatPlatforms ?? (options.teams ? ['slack', 'teams'] : ['slack']);

/** The logical id of the stack's secret for a platform (its construct is named after the platform's title). */
const secretIdOf = (template: Template, name: PlatformName) =>
  resourcesOfType(template, 'AWS::SecretsManager::Secret').find(([id]) => id.startsWith(descriptorNamed(name)!.title))?.[0];

/** The template's secrets, as CloudFormation creates them; each platform's holds the given credentials. */
function startStackSecrets(template: Template, options: Pick<LocalCloudOptions, 'slack' | 'teams'>): Promise<LocalSecretsManager> {
  const { slack, teams } = options;
  const values = {
    [secretIdOf(template, 'slack') ?? '']: JSON.stringify({
      signingSecret: slack.signingSecret,
      botToken: slack.botToken,
    } satisfies SlackCredentials),
    ...(teams
      ? {
          [secretIdOf(template, 'teams') ?? '']: JSON.stringify({
            appId: teams.appId,
            appPassword: teams.appPassword,
            tenantId: teams.tenantId,
          } satisfies TeamsCredentials),
        }
      : {}),
  };
  return startLocalSecretsManager(
    resourcesOfType(template, 'AWS::SecretsManager::Secret').map(([id]) => {
      const arn = String(resolveCloudFormation(template, { Ref: id }));
      return { arn, name: localPhysicalName(template, id), value: values[id] };
    }),
  );
}

/** The deployment settings the stack is synthesized with (Teams only where a test or `npm start` sets it up). */
const stackSettings = (options: LocalCloudOptions, modelId = options.modelId): LocalStackSettings => ({
  modelId,
  triggers: options.triggers,
  chatPlatforms: platformsOf(options),
  sandboxNetwork: options.sandboxNetwork,
  ...(options.reachAllowLoopback ? { reachAllowLoopback: true } : {}),
  ...(options.hookFunctions?.length ? { hookFunctions: options.hookFunctions } : {}),
  alarmEmail: options.alarmEmail,
});

/**
 * Both emulators and the synthesized stack, or none: when one fails to start (DynamoDB Local on a
 * loaded machine), the other is stopped, so a failed start leaves no process or port behind.
 */
async function startAllOrNone<A extends { stop(): Promise<void> }, B extends { stop(): Promise<void> }, S>(
  emulators: [Promise<A>, Promise<B>],
  synthesize: () => Promise<S>,
): Promise<[A, B, S]> {
  const synthesized = Promise.resolve().then(synthesize);
  const [a, b, synth] = await Promise.allSettled([...emulators, synthesized]);
  if (a.status === 'fulfilled' && b.status === 'fulfilled' && synth.status === 'fulfilled') return [a.value, b.value, synth.value];
  await Promise.allSettled([a, b].flatMap((r) => (r.status === 'fulfilled' ? [r.value.stop()] : [])));
  throw [a, b, synth].find((r): r is PromiseRejectedResult => r.status === 'rejected')!.reason;
}

export async function startLocalCloud(options: LocalCloudOptions): Promise<LocalCloud> {
  const report = options.onError ?? ((where: string, error: unknown) => console.error(`[local:${where}]`, error));
  /** `work`, reported as a step when it has finished. */
  const timed = async <T>(step: string, work: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    const result = await work();
    options.onStep?.(step, performance.now() - started);
    sinceStep = performance.now();
    return result;
  };
  /** The steps run one after the other below: each took the time since the one before. */
  let sinceStep = performance.now();
  const stepDone = (step: string) => {
    options.onStep?.(step, performance.now() - sinceStep);
    sinceStep = performance.now();
  };
  const [dynamo, sqsS3, synth] = await startAllOrNone(
    [
      timed('DynamoDB Local (its JVM)', () => startDynamoDbLocal(undefined, { dbPath: options.dynamoDbPath })),
      timed('SQS and S3 (fauxqs)', startSqsAndS3),
    ],
    () => timed('the stack synthesized (cdk synth)', () => synthesizeLocalStack(stackSettings(options))),
  );
  const { logicalIds } = synth;
  let template = options.transformTemplate ? options.transformTemplate(structuredClone(synth.template)) : synth.template;
  const region = process.env.AWS_REGION ?? 'us-east-1';
  const credentials = OPERATOR_CREDENTIALS;
  const clients = {
    dynamodb: new DynamoDBClient({ endpoint: dynamo.endpoint, region, credentials }),
    s3: new S3Client({ endpoint: sqsS3.endpoint, region, credentials, forcePathStyle: true }),
    // fauxqs names queues sqs.<region>.localhost, which not every resolver knows: keep to the endpoint.
    sqs: new SQSClient({ endpoint: sqsS3.endpoint, region, credentials, useQueueUrlAsEndpoint: false }),
  };
  const resources = await timed("the stack's tables, queues and bucket created", () =>
    createLocalResources(template, synth, clients, options),
  );

  // Sandbox tasks: the same command server, a process per task in a sandbox of its own, on its own
  // loopback address.
  const sandboxPort = options.sandboxPort ?? (await freePort());
  const sandboxRoot = mkdtempSync(join(tmpdir(), 'threadwork-sandboxes-'));
  const [clusterId] = resourcesOfType(template, 'AWS::ECS::Cluster')[0]!;
  // Tasks pull their image from the local ECR, which starts with the deployment endpoints below.
  let pullFailure: ((taskDefinitionArn: string) => string | undefined) | undefined;
  const ecs = await timed('the sandbox command server bundled, the local ECS up', async () =>
    startLocalEcs({
      pullImage: (taskDefinitionArn) => pullFailure?.(taskDefinitionArn),
      clusterArn: localGetAtt(template, clusterId, 'Arn'),
      serverCommand: [process.execPath, await bundleSandboxServer(sandboxRoot)],
      isolation: chooseIsolation(options.localSandbox ?? 'isolated', options.bubblewrap),
      workspaceRoot: join(sandboxRoot, 'tasks'),
      sandboxPort,
      containerName: 'sandbox',
      taskDefinitions: taskDefinitionFamilies(template),
      onLog: (taskArn, line, stream) => {
        if (stream === 'stderr') report(`sandbox ${taskArn.split('/').pop()}`, line);
      },
    }),
  );

  const [secretsManager, operatorFunctions] = await Promise.all([
    startStackSecrets(template, options),
    startOperatorFunctions(options.operatorFunctions),
  ]);
  const kms = await startLocalKms(resourcesOfType(template, 'AWS::KMS::Key').map(([id]) => localGetAtt(template, id, 'Arn')));
  const [stepFunctionsPort, schedulerPort, eventBridgePort] = await Promise.all([
    freePort(),
    freePort(),
    options.eventBridgePort ?? freePort(),
  ]);
  const endpoints = await startAwsEndpoints(
    {
      DYNAMODB: dynamo.endpoint,
      S3: sqsS3.endpoint,
      SQS: sqsS3.endpoint,
      SFN: `http://127.0.0.1:${stepFunctionsPort}`,
      ECS: ecs.endpoint,
      SCHEDULER: `http://127.0.0.1:${schedulerPort}`,
      EVENTBRIDGE: `http://127.0.0.1:${eventBridgePort}`,
      SECRETS_MANAGER: secretsManager.endpoint,
      KMS: kms.endpoint,
      LAMBDA: operatorFunctions.endpoint,
    },
    () => iam,
  );
  stepDone('Secrets Manager and the AWS front doors (the local IAM checks every call)');
  const common: Record<string, string> = {
    AWS_REGION: region,
    ...endpoints.variables,
    AWS_S3_FORCE_PATH_STYLE: 'true',
    ...(options.slack.apiUrl ? { SLACK_API_URL: options.slack.apiUrl } : {}),
    ...(options.teams?.openIdMetadataUrl ? { TEAMS_OPENID_METADATA_URL: options.teams.openIdMetadataUrl } : {}),
    ...(options.teams?.tokenUrl ? { TEAMS_TOKEN_URL: options.teams.tokenUrl } : {}),
    ...(options.teams?.connectorOrigins ? { TEAMS_CONNECTOR_ORIGINS: options.teams.connectorOrigins } : {}),
    ...options.env,
  };
  // The functions' output: EMF documents become metrics (as CloudWatch Logs makes them), the rest is their log.
  const metrics = createLocalMetrics();
  const lambda = createLocalLambda({
    root: PROJECT_ROOT,
    onOutput: (functionId, line) => {
      if (metrics.record(functionId, line)) return;
      if (options.onLog) options.onLog(functionId, line);
      else process.stdout.write(`${line}\n`);
    },
  });
  let iam = createLocalIam(template);
  /**
   * What `cdk deploy` does to the task definitions, the functions, their roles and the state
   * machine: a changed task definition is replaced (a new revision; the old one deregistered once
   * the update is done), every function gets a new version (unqualified calls go to it), each new
   * AWS::Lambda::Version is numbered, a version the new template no longer has is deleted unless it
   * was retained, and the roles' policies are the new template's. Returns the state machine
   * definition for executions started from now on.
   */
  const deploy = async (next: Template, previous?: Template): Promise<object> => {
    const retireTaskDefinitions = deployTaskDefinitions(ecs, next, previous);
    const keys = createLocalIam(next);
    const versions = functionVersions({
      template: next,
      logicalIds,
      common,
      // What only exists locally: the emulator's queue URL, the command server's free port.
      localValues: { INBOX_QUEUE_URL: resources.inboxUrl, SANDBOX_PORT: String(sandboxPort) },
      // Each function signs as its own role, so the front doors can hold it to that role's policies.
      credentials: (role) => (options.useAmbientCredentials ? undefined : keys.accessKeyFor(keys.roleOf(logicalIds[role]!)!)),
      localPorts: { [TEMPLATE_SANDBOX_PORT]: sandboxPort },
    });
    const published = lambda.publish(Object.values(versions));
    for (const [id, version] of resourcesOfType(next, 'AWS::Lambda::Version')) {
      const functionName = String(resolveCloudFormation(next, version.Properties.FunctionName));
      const kept = previous?.Resources[id]?.Properties?.[LOCAL_VERSION_PROPERTY];
      version.Properties[LOCAL_VERSION_PROPERTY] = kept ?? published[functionName];
    }
    for (const [id, version] of previous ? resourcesOfType(previous, 'AWS::Lambda::Version') : []) {
      if (next.Resources[id] || previous!.Resources[id]?.DeletionPolicy === 'Retain') continue;
      await lambda.remove(
        String(resolveCloudFormation(previous!, version.Properties.FunctionName)),
        version.Properties[LOCAL_VERSION_PROPERTY],
      );
    }
    iam = createLocalIam(next);
    retireTaskDefinitions();
    return stateMachineDefinition(next, resources.stateMachineId);
  };
  const definition = await timed('the functions deployed (a version of each, their roles)', () => deploy(template));

  const roleOf = new Map(Object.entries(logicalIds).map(([role, id]) => [localPhysicalName(template, id), role as FunctionRole]));
  const faults: Required<Fault>[] = [];
  const takeFault = (role: FunctionRole, payload: unknown, when: Fault['when']) => {
    const action = (payload as { action?: string } | undefined)?.action;
    const fault = faults.find((f) => f.times > 0 && f.role === role && f.when === when && (!f.action || f.action === action));
    if (!fault) return;
    fault.times--;
    throw Object.assign(new Error(`injected crash ${when} ${role}${action ? ` ${action}` : ''}`), { name: fault.errorName });
  };
  const invoke = async (functionId: string, event: unknown, kind: 'sync' | 'async' = 'sync', version?: number) => {
    const role = roleOf.get(functionId);
    if (!role) throw new Error(`No local function ${functionId}`);
    takeFault(role, event, 'before');
    const result = await lambda.invoke(functionId, event, { kind, version });
    takeFault(role, event, 'after');
    return result;
  };
  const invokeArn = (arn: string, event: unknown) => {
    const target = functionLogicalIdFromArn(arn);
    if (!target) throw new Error(`No local function for ${arn}`);
    return invoke(target, event, 'async');
  };

  const timers = scheduledRules(template, invoke, report);
  const scheduler = await startLocalScheduler({
    port: schedulerPort,
    clock: options.clock,
    invokeTarget: async (arn, input) => void (await invokeArn(arn, JSON.parse(input))),
    onError: (error) => report('scheduler', error),
  });
  // The stack's schedule groups, as CloudFormation would create them.
  const schedulerClient = new SchedulerClient({ endpoint: scheduler.endpoint, region, credentials });
  for (const [id] of resourcesOfType(template, 'AWS::Scheduler::ScheduleGroup')) {
    await schedulerClient.send(new CreateScheduleGroupCommand({ Name: String(resolveCloudFormation(template, { Ref: id })) }));
  }
  schedulerClient.destroy();
  const eventBridge = await startLocalEventBridge({
    port: eventBridgePort,
    rules: busRules(template),
    invokeTarget: async (arn, payload) => void (await invokeArn(arn, payload)),
    matches: matchesEventPattern,
    onError: (error) => report('eventbridge', error),
  });
  const s3Notifications = await startS3Notifications({
    s3: clients.s3,
    bucket: resources.bucket,
    configurations: notificationConfigurations(template, invokeArn),
    onError: (error) => report('s3-notifications', error),
  });
  // Buckets outside the stack that declared S3 triggers listen to: created here, their new objects
  // sent to the default bus as S3's EventBridge notifications would.
  const objectCreatedEvents = await startObjectCreatedEvents({
    s3: clients.s3,
    buckets: eventBridgeNotifiedBuckets(template),
    eventBridge,
    onError: (error) => report('s3-eventbridge', error),
  });
  // The state machine's role invokes the functions and reads the actor item: both checked as on AWS.
  const stateMachineRole = iam.roleOf(resources.stateMachineId)!;
  const stateMachineDb = new DynamoDBClient({
    endpoint: endpoints.variables.AWS_ENDPOINT_URL_DYNAMODB,
    region,
    credentials: iam.accessKeyFor(stateMachineRole),
  });
  const stepFunctions = await startLocalStepFunctions({
    definition,
    stateMachineArn: resources.stateMachineArn,
    invokeFunction: async (functionArn, payload) => {
      const decision = await iam.authorize({ role: stateMachineRole }, { action: 'lambda:InvokeFunction', resource: functionArn });
      if (!decision.allowed) throw Object.assign(new Error(decision.message), { name: 'Lambda.AWSLambdaException' });
      const version = /:function:[^:]+:(\d+)$/.exec(functionArn)?.[1];
      return invoke(functionLogicalIdFromArn(functionArn) ?? functionArn, payload, 'sync', version ? Number(version) : undefined);
    },
    dynamoDb: stateMachineDb,
    onStatusChange: statusChangeRules(template, invoke, report),
    retryIntervalMs: options.retryIntervalMs,
    port: stepFunctionsPort,
  });
  stepDone('Scheduler, EventBridge, S3 notifications and Step Functions');
  let api: ApiGatewayStandIn;
  let metricsEndpoint: LocalHttpServer;
  try {
    api = await startApiGateway({ port: options.port ?? 0, routes: apiRoutes(template, invoke), onError: (error) => report('api', error) });
    metricsEndpoint = await startLocalMetricsEndpoint(metrics, options.metricsPort).catch(async (error: unknown) => {
      await api.close();
      throw error;
    });
  } catch (error) {
    await Promise.allSettled([stepFunctions.close(), dynamo.stop(), sqsS3.stop(), lambda.close()]);
    throw error;
  }
  let deployment: DeploymentEndpoints;
  try {
    deployment = await startDeploymentEndpoints({
      stackName: synth.stackName,
      template: () => template,
      apiUrl: api.url,
      region,
      frontDoors: {
        secretsManager: common.AWS_ENDPOINT_URL_SECRETS_MANAGER!,
        s3: common.AWS_ENDPOINT_URL_S3!,
        ecs: common.AWS_ENDPOINT_URL_ECS!,
      },
      iam: () => iam,
      lambda,
    });
    pullFailure = deployment.pullFailure;
    stepDone("API Gateway, the metrics summary and the operator's APIs (CloudFormation, STS, ECR, Lambda)");
  } catch (error) {
    await Promise.allSettled([api.close(), metricsEndpoint.close(), stepFunctions.close(), dynamo.stop(), sqsS3.stop(), lambda.close()]);
    throw error;
  }
  const poller = inboxPoller(template, { sqs: clients.sqs, queueUrl: resources.inboxUrl, queueArn: resources.inboxArn }, invoke, report);

  const handlers = Object.fromEntries(
    Object.entries(logicalIds).map(([role, id]) => [role, (event: unknown) => invoke(localPhysicalName(template, id), event)]),
  ) as Record<FunctionRole, Handler>;
  const cloud: LocalCloud = {
    apiUrl: api.url,
    slackEventsUrl: `${api.url}${descriptorNamed('slack')!.deployment.webhook.path}`,
    teamsMessagesUrl: `${api.url}${descriptorNamed('teams')!.deployment.webhook.path}`,
    template,
    stateMachineArn: resources.stateMachineArn,
    stepFunctions,
    ecs,
    scheduler,
    eventBridge,
    s3Notifications,
    objectCreatedEvents,
    secretsManager,
    kms,
    operatorFunctions,
    lambda,
    metrics: Object.assign(metrics, { endpoint: metricsEndpoint.url }),
    awsCalls: endpoints.calls,
    functionRoles: Object.fromEntries(
      Object.entries(logicalIds).map(([role, id]) => [role, iam.roleOf(id) ?? `(no role for ${id})`]),
    ) as Record<FunctionRole, string>,
    authorizeModelRequest: async (request) => {
      const signing = signingOf(request);
      return iam.authorizeRequest(iam.principalOf(signing?.accessKeyId), { ...request, service: 'bedrock' });
    },
    handlers,
    names: {
      table: resources.table,
      bucket: resources.bucket,
      inboxUrl: resources.inboxUrl,
      dlqUrl: resources.dlqUrl,
      scheduleGroup: localPhysicalName(template, resourcesOfType(template, 'AWS::Scheduler::ScheduleGroup')[0]![0]),
      ...Object.fromEntries(
        PLATFORM_DESCRIPTORS.flatMap(({ name }) => {
          const id = secretIdOf(template, name);
          return id ? [[`${name}SecretArn`, String(resolveCloudFormation(template, { Ref: id }))]] : [];
        }),
      ),
    },
    clients,
    env: common,
    deployment,
    poller,
    async redeploy(change) {
      const { template: synthesized } = await synthesizeLocalStack(stackSettings(options, change.modelId ?? options.modelId));
      const next = change.transformTemplate ? change.transformTemplate(structuredClone(synthesized)) : synthesized;
      stepFunctions.updateDefinition(await deploy(next, template));
      template = next;
      deployment.updated();
      cloud.template = next;
    },
    injectFault: (fault) => faults.push({ action: '', errorName: 'Error', times: 1, ...fault }),
    async stop() {
      for (const timer of timers) clearInterval(timer);
      await stopParts({
        poller: () => poller.stop(),
        s3Notifications: () => s3Notifications.stop(),
        objectCreatedEvents: () => objectCreatedEvents.stop(),
        scheduler: () => scheduler.close(),
        eventBridge: () => eventBridge.close(),
      });
      await stopParts({
        api: () => api.close(),
        metrics: () => metricsEndpoint.close(),
        stepFunctions: () => stepFunctions.close(),
        ecs: () => ecs.close(),
        lambda: () => lambda.close(),
        endpoints: () => endpoints.close(),
        secretsManager: () => secretsManager.close(),
        kms: () => kms.close(),
        operatorFunctions: () => operatorFunctions.close(),
        deployment: () => deployment.close(),
      });
      stateMachineDb.destroy();
      rmSync(sandboxRoot, { recursive: true, force: true });
      for (const client of Object.values(clients)) client.destroy();
      await stopParts({ dynamoDbLocal: () => dynamo.stop(), fauxqs: () => sqsS3.stop() });
    },
  };
  return cloud;
}
