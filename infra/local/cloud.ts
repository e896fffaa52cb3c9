// The local cloud: the stack as synthesized for AWS, run on one machine. The same handler modules,
// unchanged, are wired to DynamoDB Local and fauxqs (SQS FIFO + S3) through AWS_ENDPOINT_URL_*, the
// synthesized state machine runs in a local Step Functions stand-in, and API Gateway, the SQS event
// source mapping and the EventBridge rule are small stand-ins driven by the template itself.
import { App, type CfnElement } from 'aws-cdk-lib';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { AgentRuntimeStack } from '../stack.ts';
import { DEFAULT_SETTINGS } from '../settings.ts';
import { FUNCTION_ENTRIES, type FunctionRole } from '../function-entries.ts';
import { startDynamoDbLocal, startSqsAndS3 } from './emulators.ts';
import { createLocalTable } from './tables.ts';
import { startApiGateway, type ApiGatewayStandIn, type HttpHandler } from './api-gateway.ts';
import { startSqsPoller, type SqsPoller } from './sqs-poller.ts';
import { startLocalEcs, type LocalEcs } from './ecs/index.ts';
import { startLocalScheduler, type LocalScheduler, type SchedulerClock } from './scheduler/index.ts';
import { CreateScheduleGroupCommand, SchedulerClient } from '@aws-sdk/client-scheduler';
import { startLocalEventBridge, type LocalEventBridge } from './eventbridge.ts';
import { startS3Notifications, type S3Notifications } from './s3-notifications.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { build as esbuild } from 'esbuild';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { definitionFromTemplate, functionLogicalIdFromArn, localFunctionArn, resolveIntrinsics } from './template.ts';
import { matchesEventPattern } from './event-pattern.ts';
import { startLocalStepFunctions, type ExecutionStatusChangeEvent, type LocalStepFunctions } from './step-functions/index.ts';

/* eslint-disable @typescript-eslint/no-explicit-any -- CloudFormation template JSON */
type Template = { Resources: Record<string, { Type: string; Properties?: any }> };

type Handler = (event: any) => Promise<any>;

export interface LocalCloudOptions {
  /** Port of the API Gateway stand-in (0: any free port). */
  port?: number;
  slack: { signingSecret: string; botToken: string; apiUrl?: string };
  modelId?: string;
  /** Overrides every Step Functions Retry wait, so failure tests are fast. */
  retryIntervalMs?: number;
  /** Overrides the inbox's visibility timeout (a failed batch item reappears after it). */
  visibilityTimeoutSeconds?: number;
  /**
   * Keep the caller's AWS credentials for the handlers (so Bedrock can be real); the emulators accept
   * any. When false (the default), handlers get dummy credentials.
   */
  useAmbientCredentials?: boolean;
  /** The event bus's clock: schedules fire by it. Default: real time (a manual clock in tests). */
  clock?: SchedulerClock;
  /** Sandbox processes' port (each task has its own loopback address); default: a free port. */
  sandboxPort?: number;
  /** Extra environment for the handlers (LOG_LEVEL, AWS_ENDPOINT_URL_BEDROCK_RUNTIME, ...). */
  env?: Record<string, string>;
  onError?: (where: string, error: unknown) => void;
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
  template: Template;
  stateMachineArn: string;
  stepFunctions: LocalStepFunctions;
  /** The local ECS: each sandbox task is a command server process. */
  ecs: LocalEcs;
  /** EventBridge Scheduler (schedules of event files) and the custom event bus. */
  scheduler: LocalScheduler;
  eventBridge: LocalEventBridge;
  /** S3 notifications for event files: poll() delivers what changed now. */
  s3Notifications: S3Notifications;
  /** The handlers, by role, as loaded with the local environment. */
  handlers: Record<FunctionRole, Handler>;
  names: { table: string; bucket: string; inboxUrl: string; dlqUrl: string };
  clients: { dynamodb: DynamoDBClient; s3: S3Client; sqs: SQSClient };
  env: Record<string, string>;
  poller: SqsPoller;
  injectFault(fault: Fault): void;
  stop(): Promise<void>;
}

const LOCAL_CREDENTIALS = { AWS_ACCESS_KEY_ID: 'local', AWS_SECRET_ACCESS_KEY: 'local' };

export function synthesizeLocalStack(modelId?: string) {
  // Bundling is for deployment; locally the handlers run from source.
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new AgentRuntimeStack(app, 'Threadwork', {
    settings: { ...DEFAULT_SETTINGS, modelId: modelId ?? DEFAULT_SETTINGS.modelId },
  });
  const template = app.synth().getStackByName(stack.stackName).template as Template;
  const logicalIds = Object.fromEntries(
    Object.entries(stack.functions).map(([role, fn]) => [role, stack.getLogicalId(fn.node.defaultChild as CfnElement)]),
  ) as Record<FunctionRole, string>;
  return { stack, template, logicalIds };
}

function resourcesOfType(template: Template, type: string) {
  return Object.entries(template.Resources).filter(([, r]) => r.Type === type);
}

function onlyResource(template: Template, type: string): [string, { Properties?: any }] {
  const found = resourcesOfType(template, type);
  if (found.length !== 1) throw new Error(`Expected one ${type} in the template, found ${found.length}`);
  return found[0]!;
}

export async function startLocalCloud(options: LocalCloudOptions): Promise<LocalCloud> {
  const report = options.onError ?? ((where: string, error: unknown) => console.error(`[local:${where}]`, error));
  const [dynamo, sqsS3, synth] = await Promise.all([
    startDynamoDbLocal(),
    startSqsAndS3(),
    Promise.resolve(synthesizeLocalStack(options.modelId)),
  ]);
  const { template, logicalIds } = synth;
  const resolve = (value: unknown) => resolveIntrinsics(template, value);
  const region = process.env.AWS_REGION ?? 'us-east-1';
  const credentials = { accessKeyId: LOCAL_CREDENTIALS.AWS_ACCESS_KEY_ID, secretAccessKey: LOCAL_CREDENTIALS.AWS_SECRET_ACCESS_KEY };
  const clients = {
    dynamodb: new DynamoDBClient({ endpoint: dynamo.endpoint, region, credentials }),
    s3: new S3Client({ endpoint: sqsS3.endpoint, region, credentials, forcePathStyle: true }),
    // fauxqs names queues sqs.<region>.localhost, which not every resolver knows: keep to the endpoint.
    sqs: new SQSClient({ endpoint: sqsS3.endpoint, region, credentials, useQueueUrlAsEndpoint: false }),
  };

  // Resources, named as the template resolves them locally.
  const [tableId] = onlyResource(template, 'AWS::DynamoDB::Table');
  const table = String(resolve({ Ref: tableId }));
  await createLocalTable(clients.dynamodb, table);
  const dataBucketId = synth.stack.getLogicalId(synth.stack.bucket.node.defaultChild as CfnElement);
  const bucket = String(resolve({ Ref: dataBucketId })).toLowerCase();
  await clients.s3.send(new CreateBucketCommand({ Bucket: bucket }));
  const inboxId = synth.stack.getLogicalId(synth.stack.inbox.node.defaultChild as CfnElement);
  const inboxProps = template.Resources[inboxId]!.Properties;
  const dlqId = String(inboxProps.RedrivePolicy.deadLetterTargetArn['Fn::GetAtt'][0]);
  const dlq = await clients.sqs.send(new CreateQueueCommand({ QueueName: `${dlqId}.fifo`, Attributes: { FifoQueue: 'true' } }));
  const dlqArn = (await clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ['QueueArn'] })))
    .Attributes?.QueueArn;
  const inbox = await clients.sqs.send(
    new CreateQueueCommand({
      QueueName: `${inboxId}.fifo`,
      Attributes: {
        FifoQueue: 'true',
        ContentBasedDeduplication: String(inboxProps.ContentBasedDeduplication ?? false),
        VisibilityTimeout: String(options.visibilityTimeoutSeconds ?? inboxProps.VisibilityTimeout ?? 30),
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: inboxProps.RedrivePolicy.maxReceiveCount }),
      },
    }),
  );
  const inboxUrl = inbox.QueueUrl!;
  const inboxArn =
    (await clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl: inboxUrl, AttributeNames: ['QueueArn'] }))).Attributes?.QueueArn ??
    '';

  const [stateMachineId] = onlyResource(template, 'AWS::StepFunctions::StateMachine');
  const stateMachineArn = String(resolve({ Ref: stateMachineId }));

  // Sandbox tasks: the same command server, as a plain process per task on its own loopback address.
  const { freePort } = await import('./emulators.ts');
  const sandboxPort = options.sandboxPort ?? (await freePort());
  const sandboxRoot = mkdtempSync(join(tmpdir(), 'threadwork-sandboxes-'));
  const workspaces = join(sandboxRoot, 'tasks');
  // A bundle of the server, as the image runs it (plain node: half the memory of the source through
  // tsx), written to this cloud's own directory so parallel clouds never share a half-written file.
  const serverBundle = join(sandboxRoot, 'server.mjs');
  await esbuild({
    entryPoints: [fileURLToPath(new URL('../../containers/sandbox/server.ts', import.meta.url))],
    outfile: serverBundle,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    logLevel: 'warning',
  });
  const ecs = await startLocalEcs({
    serverCommand: [process.execPath, serverBundle],
    workspaceRoot: workspaces,
    sandboxPort,
    containerName: 'sandbox',
    onLog: (taskArn, line, stream) => {
      if (stream === 'stderr') report(`sandbox ${taskArn.split('/').pop()}`, line);
    },
  });

  // The handlers' environment: each function's variables from the template, with local values for
  // what only exists in AWS (the secret becomes plain variables; endpoints point at the emulators).
  const [stepFunctionsPort, schedulerPort, eventBridgePort] = await Promise.all([freePort(), freePort(), freePort()]);
  const env: Record<string, string> = {
    ...(options.useAmbientCredentials ? {} : LOCAL_CREDENTIALS),
    AWS_REGION: region,
    AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
    AWS_ENDPOINT_URL_SQS: sqsS3.endpoint,
    AWS_ENDPOINT_URL_S3: sqsS3.endpoint,
    AWS_ENDPOINT_URL_SFN: `http://127.0.0.1:${stepFunctionsPort}`,
    AWS_ENDPOINT_URL_ECS: ecs.endpoint,
    AWS_ENDPOINT_URL_SCHEDULER: `http://127.0.0.1:${schedulerPort}`,
    AWS_ENDPOINT_URL_EVENTBRIDGE: `http://127.0.0.1:${eventBridgePort}`,
    AWS_S3_FORCE_PATH_STYLE: 'true',
    SLACK_SIGNING_SECRET: options.slack.signingSecret,
    SLACK_BOT_TOKEN: options.slack.botToken,
    ...(options.slack.apiUrl ? { SLACK_API_URL: options.slack.apiUrl } : {}),
    ...options.env,
  };
  const localValues: Record<string, string> = {
    TABLE_NAME: table,
    DATA_BUCKET: bucket,
    INBOX_QUEUE_URL: inboxUrl,
    STATE_MACHINE_ARN: stateMachineArn,
    SANDBOX_CLUSTER_ARN: ecs.clusterArn,
    SANDBOX_TASK_DEFINITION_ARN: 'arn:aws:ecs:local:000000000000:task-definition/sandbox:1',
    SANDBOX_PORT: String(sandboxPort),
    SCHEDULER_TARGET_ARN: localFunctionArn(logicalIds.scheduler),
  };
  for (const logicalId of Object.values(logicalIds)) {
    const variables = (resolve(template.Resources[logicalId]!.Properties.Environment?.Variables ?? {}) ?? {}) as Record<string, string>;
    for (const [name, value] of Object.entries(variables)) {
      if (name === 'SLACK_SECRET_ARN') continue;
      env[name] = localValues[name] ?? env[name] ?? String(value);
    }
  }
  // Handlers read their configuration at load, as in a Lambda container: set it, then import them.
  Object.assign(process.env, env);
  delete process.env.SLACK_SECRET_ARN;
  const handlers = Object.fromEntries(
    await Promise.all(
      Object.entries(FUNCTION_ENTRIES).map(async ([role, path]) => [
        role,
        ((await import(`../../${path}`)) as { handler: Handler }).handler,
      ]),
    ),
  ) as LocalCloud['handlers'];
  const byLogicalId = new Map(
    Object.entries(logicalIds).map(([id, logicalId]) => [logicalId, { role: id as FunctionRole, handler: handlers[id as FunctionRole] }]),
  );
  const faults: Required<Fault>[] = [];
  const takeFault = (role: FunctionRole, payload: unknown, when: Fault['when']) => {
    const action = (payload as { action?: string } | undefined)?.action;
    const fault = faults.find((f) => f.times > 0 && f.role === role && f.when === when && (!f.action || f.action === action));
    if (!fault) return;
    fault.times--;
    throw Object.assign(new Error(`injected crash ${when} ${role}${action ? ` ${action}` : ''}`), { name: fault.errorName });
  };
  const invoke = async (logicalId: string, payload: unknown) => {
    const target = byLogicalId.get(logicalId);
    if (!target) throw new Error(`No local handler for function ${logicalId}`);
    takeFault(target.role, payload, 'before');
    const result = await target.handler(payload);
    takeFault(target.role, payload, 'after');
    return result;
  };

  // EventBridge: the rule's pattern, from the template, decides which execution endings reach its target.
  const onDefaultBus = (rule: { Properties?: any }) => rule.Properties.EventPattern && !rule.Properties.EventBusName;
  const rules = resourcesOfType(template, 'AWS::Events::Rule')
    .filter(([, rule]) => onDefaultBus(rule))
    .map(([, rule]) => ({
      pattern: resolve(rule.Properties.EventPattern) as object,
      targets: (rule.Properties.Targets as { Arn: unknown }[]).map((t) => functionLogicalIdFromArn(String(resolve(t.Arn)))),
    }));
  const onStatusChange = async (event: ExecutionStatusChangeEvent) => {
    for (const rule of rules) {
      if (!matchesEventPattern(rule.pattern, event)) continue;
      for (const target of rule.targets) {
        if (target) await invoke(target, event).catch((error: unknown) => report('rule-target', error));
      }
    }
  };
  // Scheduled rules (the sandbox reaper): fired by timers at their rate.
  const timers = resourcesOfType(template, 'AWS::Events::Rule')
    .filter(([, rule]) => rule.Properties.ScheduleExpression)
    .map(([id, rule]) => {
      const everyMs = rateMs(String(rule.Properties.ScheduleExpression));
      const targets = (rule.Properties.Targets as { Arn: unknown }[]).map((t) => functionLogicalIdFromArn(String(resolve(t.Arn))));
      return setInterval(() => {
        for (const target of targets) {
          if (target)
            void Promise.resolve(
              invoke(target, { source: 'aws.events', 'detail-type': 'Scheduled Event', resources: [id], detail: {} }),
            ).catch((error: unknown) => report('schedule', error));
        }
      }, everyMs).unref();
    });
  // The event bus: EventBridge Scheduler, the custom bus's rules, and S3 notifications for event files.
  const invokeByArn = (arn: string, payload: unknown) => {
    const target = functionLogicalIdFromArn(arn);
    if (!target) throw new Error(`No local function for ${arn}`);
    return invoke(target, payload);
  };
  const scheduler = await startLocalScheduler({
    port: schedulerPort,
    clock: options.clock,
    invokeTarget: async (arn, input) => void (await invokeByArn(arn, JSON.parse(input))),
    onError: (error) => report('scheduler', error),
  });
  // The stack's schedule groups, as CloudFormation would create them.
  const schedulerClient = new SchedulerClient({ endpoint: scheduler.endpoint, region, credentials });
  for (const [id] of resourcesOfType(template, 'AWS::Scheduler::ScheduleGroup')) {
    await schedulerClient.send(new CreateScheduleGroupCommand({ Name: String(resolve({ Ref: id })) }));
  }
  schedulerClient.destroy();
  const eventBridge = await startLocalEventBridge({
    port: eventBridgePort,
    rules: resourcesOfType(template, 'AWS::Events::Rule')
      .filter(([, rule]) => rule.Properties.EventPattern && rule.Properties.EventBusName)
      .map(([id, rule]) => ({
        name: id,
        eventBusName: String(resolve(rule.Properties.EventBusName)),
        pattern: resolve(rule.Properties.EventPattern) as object,
        targets: (rule.Properties.Targets as { Arn: unknown; InputPath?: string }[]).map((t) => ({
          arn: String(resolve(t.Arn)),
          inputPath: t.InputPath,
        })),
      })),
    invokeTarget: async (arn, payload) => void (await invokeByArn(arn, payload)),
    matches: matchesEventPattern,
    onError: (error) => report('eventbridge', error),
  });
  type FilterRule = { Name: string; Value: string };
  const notificationConfigs = resourcesOfType(template, 'Custom::S3BucketNotifications').flatMap(([, r]) =>
    (
      (r.Properties.NotificationConfiguration?.LambdaFunctionConfigurations ?? []) as {
        Events: string[];
        Filter?: { Key?: { FilterRules?: FilterRule[] } };
        LambdaFunctionArn: unknown;
      }[]
    ).map((c) => {
      const rule = (name: string) => c.Filter?.Key?.FilterRules?.find((f) => f.Name.toLowerCase() === name)?.Value;
      const arn = String(resolve(c.LambdaFunctionArn));
      return {
        prefix: rule('prefix'),
        suffix: rule('suffix'),
        events: c.Events,
        deliver: async (event: unknown) => void (await invokeByArn(arn, event)),
      };
    }),
  );
  const s3Notifications = await startS3Notifications({
    s3: clients.s3,
    bucket,
    configurations: notificationConfigs,
    onError: (error) => report('s3-notifications', error),
  });

  const { definition } = definitionFromTemplate(template, stateMachineId);
  const stepFunctions = await startLocalStepFunctions({
    definition,
    stateMachineArn,
    invokeFunction: invoke,
    dynamoDb: clients.dynamodb,
    onStatusChange,
    retryIntervalMs: options.retryIntervalMs,
    port: stepFunctionsPort,
  });

  // API Gateway: each route of the HTTP API to its integration's function.
  const integrations = new Map(
    resourcesOfType(template, 'AWS::ApiGatewayV2::Integration').map(([id, integration]) => [
      id,
      functionLogicalIdFromArn(String(resolve(integration.Properties.IntegrationUri))),
    ]),
  );
  const routes: Record<string, HttpHandler> = {};
  for (const [, route] of resourcesOfType(template, 'AWS::ApiGatewayV2::Route')) {
    const target = resolve(route.Properties.Target) as string;
    const integrationId = target.replace(/^integrations\/local-/, '');
    const functionId = integrations.get(integrationId);
    if (!functionId) throw new Error(`Route ${route.Properties.RouteKey} has no local integration (${target})`);
    routes[route.Properties.RouteKey] = (event: APIGatewayProxyEventV2) =>
      invoke(functionId, event) as Promise<APIGatewayProxyStructuredResultV2>;
  }
  let api: ApiGatewayStandIn;
  try {
    api = await startApiGateway({ port: options.port ?? 0, routes, onError: (error) => report('api', error) });
  } catch (error) {
    await Promise.allSettled([stepFunctions.close(), dynamo.stop(), sqsS3.stop()]);
    throw error;
  }

  // The inbox's event source mapping.
  const [, mapping] = onlyResource(template, 'AWS::Lambda::EventSourceMapping');
  const consumerId = functionLogicalIdFromArn(String(resolve({ 'Fn::GetAtt': [mapping.Properties.FunctionName.Ref, 'Arn'] })))!;
  const poller = startSqsPoller({
    sqs: clients.sqs,
    queueUrl: inboxUrl,
    queueArn: inboxArn,
    batchSize: mapping.Properties.BatchSize,
    reportBatchItemFailures: (mapping.Properties.FunctionResponseTypes ?? []).includes('ReportBatchItemFailures'),
    handler: (event: SQSEvent) => invoke(consumerId, event) as Promise<SQSBatchResponse>,
    onError: (error) => report('sqs-poller', error),
  });

  return {
    apiUrl: api.url,
    slackEventsUrl: `${api.url}/slack/events`,
    template,
    stateMachineArn,
    stepFunctions,
    ecs,
    scheduler,
    eventBridge,
    s3Notifications,
    handlers,
    names: { table, bucket, inboxUrl, dlqUrl: dlq.QueueUrl! },
    clients,
    env,
    poller,
    injectFault: (fault) => faults.push({ action: '', errorName: 'Error', times: 1, ...fault }),
    async stop() {
      for (const timer of timers) clearInterval(timer);
      await Promise.allSettled([poller.stop(), s3Notifications.stop(), scheduler.close(), eventBridge.close()]);
      await Promise.allSettled([api.close(), stepFunctions.close(), ecs.close()]);
      rmSync(sandboxRoot, { recursive: true, force: true });
      for (const client of Object.values(clients)) client.destroy();
      await Promise.allSettled([dynamo.stop(), sqsS3.stop()]);
    },
  };
}

/** EventBridge `rate(N unit)` in milliseconds (the only schedule form the stack uses). */
export function rateMs(expression: string): number {
  const match = /^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$/.exec(expression);
  if (!match) throw new Error(`Unsupported schedule expression for the local cloud: ${expression}`);
  const unit = match[2]!.startsWith('minute') ? 60_000 : match[2]!.startsWith('hour') ? 3_600_000 : 86_400_000;
  return Number(match[1]) * unit;
}
