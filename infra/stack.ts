// The whole runtime in one stack, composed in the order a message travels:
//
//   Slack, Teams --> WebhookApi (HTTP API + a webhook fn each) --> Inbox (SQS FIFO) --> Dispatch (lease, start)
//         --> AgentRun (Step Functions + agent-step fn, Bedrock) --> RunEnded (cleanup rule)
//   with the state they share: StateTable (DynamoDB), DataBucket (S3), a ChatSecret per served platform;
//   and the sandbox the agent's tools run in: SandboxNetwork (VPC) + SandboxSecurityGroups,
//   SandboxTask (ECS Fargate), SandboxStep (tool calls, in the VPC), SandboxReaper (idle stop);
//   and ReachStep (web_fetch and MCP calls: the one function that reaches the Internet and the MCP secrets);
//   and the event bus: event files in DataBucket, EventSchedules (EventBridge Scheduler) and a custom
//   EventBridge bus --> AgentEventBus (scheduler fn) --> Inbox, like a person's message;
//   and the declared Triggers (cdk.json): rules on the default bus --> the same scheduler fn;
//   and watching it all: Alarms (and each queue's dead-letter alarm) --> AlarmTopic (SNS, email), and
//   a RuntimeDashboard (CloudWatch).
import { Aws, CfnOutput, Duration, Stack, type StackProps } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import type { Rule } from 'aws-cdk-lib/aws-events';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { Bucket } from 'aws-cdk-lib/aws-s3';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import type { StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import type { Construct } from 'constructs';
import { AgentRun } from './constructs/agent-run.ts';
import { AlarmTopic } from './constructs/alarm-topic.ts';
import { Alarms } from './constructs/alarms.ts';
import { RuntimeDashboard } from './constructs/dashboard.ts';
import { DataBucket } from './constructs/data-bucket.ts';
import { DISPATCH_TIMEOUT, Dispatch } from './constructs/dispatch.ts';
import { FunctionVersionPruning } from './constructs/function-version-pruning.ts';
import { AgentEventBus } from './constructs/event-bus.ts';
import { EventSchedules } from './constructs/event-schedules.ts';
import { Triggers } from './constructs/triggers.ts';
import { Inbox } from './constructs/inbox.ts';
import { RunEnded } from './constructs/run-ended.ts';
import { ChatSecret, type ServedPlatform } from './constructs/chat-secrets.ts';
import { StateTable } from './constructs/state-table.ts';
import { AwsPrefixLists } from './constructs/aws-prefix-lists.ts';
import { SandboxAvailabilityZones } from './constructs/sandbox-availability-zones.ts';
import { SandboxDnsFirewall } from './constructs/sandbox-dns-firewall.ts';
import { SandboxEndpointPolicies } from './constructs/sandbox-endpoint-policies.ts';
import { SandboxNetwork } from './constructs/sandbox-network.ts';
import { SandboxReaper } from './constructs/sandbox-reaper.ts';
import { SandboxSecurityGroups } from './constructs/sandbox-security-groups.ts';
import { SandboxStep } from './constructs/sandbox-step.ts';
import { mcpSecretPrefix, ReachStep } from './constructs/reach-step.ts';
import { McpTokensKey } from './constructs/mcp-tokens-key.ts';
import type { Key } from 'aws-cdk-lib/aws-kms';
import { McpOAuth } from './constructs/mcp-oauth.ts';
import { SandboxTeardown } from './constructs/sandbox-teardown.ts';
import { SANDBOX_PORT, SandboxTask } from './constructs/sandbox-task.ts';
import { WebhookApi } from './constructs/webhook-api.ts';
import type { FunctionRole, PlatformWebhookRole } from './function-entries.ts';
import { acknowledgeNagFindings } from './nag.ts';
import { checkStackName, derivedName } from './stack-names.ts';
import type { DeploymentSettings } from './settings.ts';
import { PLATFORM_DESCRIPTORS, type PlatformName } from '../shared/platforms/descriptors.ts';
import type { PlatformDescriptor } from '../shared/platforms/platform.ts';

export interface AgentRuntimeStackProps extends StackProps {
  readonly settings: DeploymentSettings;
}

/** The functions by role; FUNCTION_ENTRIES (same keys) names each one's handler module. */
export type AgentRuntimeFunctions = { readonly [role in Exclude<FunctionRole, PlatformWebhookRole>]: NodejsFunction } & {
  /** A platform's own webhook function (the Teams one), only where the deployment serves that platform. */
  readonly [role in PlatformWebhookRole]?: NodejsFunction;
};

/** What watches the runtime, for tests. */
export interface AgentRuntimeMonitoring {
  readonly topic: AlarmTopic;
  readonly alarms: Alarms;
  /** Every alarm of the stack (all notify the topic). */
  readonly allAlarms: readonly Alarm[];
  readonly dashboard: RuntimeDashboard;
}

/** The sandbox's parts, for tests and tools that need them. */
export interface AgentRuntimeSandbox {
  readonly availabilityZones: SandboxAvailabilityZones;
  readonly network: SandboxNetwork;
  readonly securityGroups: SandboxSecurityGroups;
  readonly prefixLists: AwsPrefixLists;
  readonly task: SandboxTask;
  readonly reaperRule: Rule;
  readonly teardown: SandboxTeardown;
}

export class AgentRuntimeStack extends Stack {
  readonly functions: AgentRuntimeFunctions;
  readonly stateMachine: StateMachine;
  readonly table: Table;
  readonly bucket: Bucket;
  readonly inbox: Queue;
  /** Each served platform's secret, by platform name. */
  readonly chatSecrets: Readonly<Partial<Record<PlatformName, ISecret>>>;
  readonly api: HttpApi;
  readonly runEndedRule: Rule;
  readonly sandbox: AgentRuntimeSandbox;
  /** Deletes, on each deploy, the run functions' versions no run can still be using. */
  readonly versionPruning: FunctionVersionPruning;
  readonly eventBus: AgentEventBus;
  readonly eventSchedules: EventSchedules;
  readonly triggers: Triggers;
  readonly monitoring: AgentRuntimeMonitoring;
  /** Seals people's OAuth tokens to MCP servers. */
  readonly mcpTokensKey: Key;

  constructor(scope: Construct, id: string, props: AgentRuntimeStackProps) {
    super(scope, id, props);
    // Before anything is named after it.
    checkStackName(this.stackName);
    const { modelId, logRetentionDays: logRetention, runTimeoutMinutes } = props.settings;
    const { sandboxNetwork, sandboxAzs, sandboxAzIds, sandboxImageUri, sandboxCpu, sandboxMemoryMiB, sandboxIdleMinutes } = props.settings;

    // Shared state.
    const state = new StateTable(this, 'State');
    const data = new DataBucket(this, 'Data');
    const platforms: readonly PlatformDescriptor[] = PLATFORM_DESCRIPTORS;
    const chatSecrets = platforms
      .filter((platform) => (props.settings.chatPlatforms as readonly string[]).includes(platform.name))
      .map((platform): ServedPlatform => ({
        platform,
        secret: new ChatSecret(this, platform).secret,
        environment: platform.deployment.environment?.(props.settings) ?? {},
      }));
    const shared = { table: state.table, chatSecrets, logRetention };

    // The sandbox: where the agent's tools run, one Fargate task per thread.
    const availabilityZones = new SandboxAvailabilityZones(this, 'SandboxAzs', { count: sandboxAzs, zoneIds: sandboxAzIds, logRetention });
    const network = new SandboxNetwork(this, 'SandboxNetwork', {
      mode: sandboxNetwork,
      availabilityZones: availabilityZones.names,
      logRetention,
    });
    const prefixLists = new AwsPrefixLists(this, 'PrefixLists', { logRetention });
    const securityGroups = new SandboxSecurityGroups(this, 'SandboxSecurityGroups', { network, prefixLists, port: SANDBOX_PORT });
    const sandboxTask = new SandboxTask(this, 'SandboxTask', {
      network,
      securityGroups,
      cpu: sandboxCpu,
      memoryMiB: sandboxMemoryMiB,
      idleMinutes: sandboxIdleMinutes,
      logRetention,
      prebuiltImageUri: sandboxImageUri,
    });
    // Neither sandbox function gets a chat secret: they never talk to chat.
    const sandboxStep = new SandboxStep(this, 'SandboxStep', {
      table: state.table,
      bucket: data.bucket,
      network,
      securityGroups,
      logRetention,
    });
    // Isolated mode: the endpoints carry only this deployment's traffic, and DNS answers only AWS names.
    new SandboxEndpointPolicies(this, 'SandboxEndpointPolicies', {
      network,
      bucket: data.bucket,
      table: state.table,
      prebuiltRepositoryArn: sandboxTask.image.prebuiltRepositoryArn,
    });
    new SandboxDnsFirewall(this, 'SandboxDnsFirewall', { network });
    const sandboxReaper = new SandboxReaper(this, 'SandboxReaper', {
      table: state.table,
      task: sandboxTask,
      idleMinutes: sandboxIdleMinutes,
      logRetention,
    });

    // web_fetch and MCP calls: the one function that reaches the Internet and reads the MCP secrets.
    const { reachVpcId, reachSubnetIds, reachSecurityGroupIds, reachAllowLoopback } = props.settings;
    const tokensKey = new McpTokensKey(this, 'McpTokensKey');
    this.mcpTokensKey = tokensKey.key;
    const reachStep = new ReachStep(this, 'ReachStep', {
      tokensKey,
      table: state.table,
      bucket: data.bucket,
      logRetention,
      allowLoopback: reachAllowLoopback,
      sandboxNetwork,
      ...(reachVpcId && reachSubnetIds && reachSecurityGroupIds
        ? { vpc: { vpcId: reachVpcId, subnetIds: reachSubnetIds, securityGroupIds: reachSecurityGroupIds } }
        : {}),
    });

    // The path of one message.
    const inbox = new Inbox(this, 'Inbox', { consumerTimeout: DISPATCH_TIMEOUT });
    const agentRun = new AgentRun(this, 'AgentRun', {
      ...shared,
      bucket: data.bucket,
      modelId,
      runTimeout: Duration.minutes(runTimeoutMinutes),
      sandboxStep: sandboxStep.handler,
      reachStep: reachStep.handler,
      sandbox: sandboxTask,
      hookFunctions: props.settings.hookFunctions,
    });
    // Versions a run may still use are kept across deploys; older ones are deleted on the next deploy.
    const versionPruning = new FunctionVersionPruning(this, 'FunctionVersionPruning', {
      functions: [agentRun.agentStep, sandboxStep.handler, reachStep.handler],
      runTimeout: Duration.minutes(runTimeoutMinutes),
      logRetention,
    });
    // cdk destroy: stops the running sandbox tasks before the cluster and the VPC go.
    const teardown = new SandboxTeardown(this, 'SandboxTeardown', {
      task: sandboxTask,
      network,
      securityGroups,
      launchers: [agentRun.agentStep],
      logRetention,
    });
    const webhook = new WebhookApi(this, 'Webhook', {
      ...shared,
      inbox: inbox.queue,
      bucket: data.bucket,
      stateMachineArn: agentRun.stateMachineArn,
      executionArns: agentRun.executionArns,
    });
    // People connecting their own accounts to MCP servers that need OAuth; their Connect links come from agent-step.
    const mcpOAuth = new McpOAuth(this, 'McpOAuth', {
      api: webhook.api,
      table: state.table,
      tokensKey,
      secretPrefix: mcpSecretPrefix(this.stackName),
      secretsArn: reachStep.secretsArn,
      logRetention,
    });
    agentRun.agentStep.addEnvironment('OAUTH_START_URL', mcpOAuth.startUrl);
    const dispatch = new Dispatch(this, 'Dispatch', {
      ...shared,
      inbox: inbox.queue,
      bucket: data.bucket,
      stateMachine: agentRun.stateMachine,
      executionArns: agentRun.executionArns,
    });
    const runEnded = new RunEnded(this, 'RunEnded', {
      ...shared,
      bucket: data.bucket,
      stateMachine: agentRun.stateMachine,
      executionArns: agentRun.executionArns,
    });

    // The event bus: event files, their schedules and bus events become prompts in the inbox.
    const eventSchedules = new EventSchedules(this, 'EventSchedules', {
      targetFunctionName: derivedName('schedulerFunction', this.stackName),
    });
    const eventBus = new AgentEventBus(this, 'EventBus', {
      ...shared,
      schedules: eventSchedules,
      bucket: data.bucket,
      inbox: inbox.queue,
    });
    const triggers = new Triggers(this, 'Triggers', { triggers: props.settings.triggers, handler: eventBus.handler });

    this.functions = {
      webhook: webhook.handler,
      ...webhook.platformHandlers,
      dispatch: dispatch.handler,
      runEnded: runEnded.handler,
      agentStep: agentRun.agentStep,
      sandboxStep: sandboxStep.handler,
      reachStep: reachStep.handler,
      sandboxReaper: sandboxReaper.handler,
      scheduler: eventBus.handler,
      mcpOAuth: mcpOAuth.handler,
    };
    this.stateMachine = agentRun.stateMachine;
    this.table = state.table;
    this.bucket = data.bucket;
    this.inbox = inbox.queue;
    this.chatSecrets = Object.fromEntries(chatSecrets.map(({ platform, secret }) => [platform.name, secret]));
    this.api = webhook.api;
    this.runEndedRule = runEnded.rule;
    this.sandbox = { availabilityZones, network, securityGroups, prefixLists, task: sandboxTask, reaperRule: sandboxReaper.rule, teardown };
    this.versionPruning = versionPruning;
    this.eventBus = eventBus;
    this.eventSchedules = eventSchedules;
    this.triggers = triggers;

    // Watching it: every alarm of the stack (the event constructs' dead-letter alarms included) goes
    // to one topic; the dashboard shows them beside the metrics.
    const alarmTopic = new AlarmTopic(this, 'AlarmTopic', { email: props.settings.alarmEmail });
    const runtimeAlarms = new Alarms(this, 'Alarms', {
      inbox: inbox.queue,
      inboxVisibilityTimeout: inbox.visibilityTimeout,
      inboxDeadLetters: inbox.deadLetterQueue,
      runEndedDeadLetters: runEnded.deadLetterQueue,
      stateMachine: agentRun.stateMachine,
      functions: this.functions,
      runTimeoutMinutes,
      sandboxIdleMinutes,
      dailyCostAlarmUsd: props.settings.dailyCostAlarmUsd,
    });
    const allAlarms = alarmTopic.notifyOnEveryAlarmIn(this);
    const dashboard = new RuntimeDashboard(this, 'Dashboard', {
      stateMachine: agentRun.stateMachine,
      functions: this.functions,
      agentStepLogGroup: agentRun.agentStep.logGroup,
      inbox: inbox.queue,
      deadLetterQueues: {
        'Inbox dead letters': inbox.deadLetterQueue,
        'Run-ended dead letters': runEnded.deadLetterQueue,
        'Bus dead letters': eventBus.deadLetterQueue,
        'Scheduler failed invocations': eventBus.failedInvocations,
        'Schedule dead letters': eventSchedules.deadLetterQueue,
        ...Object.fromEntries(triggers.declared.map((t) => [`Trigger ${t.declaration.name} dead letters`, t.deadLetterQueue])),
      },
      alarms: allAlarms,
    });
    this.monitoring = { topic: alarmTopic, alarms: runtimeAlarms, allAlarms, dashboard };

    new CfnOutput(this, 'ApiUrl', { value: webhook.stage.url, description: 'Base URL of the webhook API' });
    for (const { platform, secret } of chatSecrets) {
      const { path, urlOutput } = platform.deployment.webhook;
      new CfnOutput(this, urlOutput.id, { value: `${webhook.api.apiEndpoint}${path}`, description: urlOutput.description });
      new CfnOutput(this, `${platform.title}SecretName`, {
        value: secret.secretName,
        description: `Secrets Manager secret to fill with ${platform.secret.shape}`,
      });
    }
    new CfnOutput(this, 'ModelId', { value: modelId, description: 'The Bedrock model (or inference profile) the agent may call' });
    new CfnOutput(this, 'SandboxImageUri', { value: sandboxTask.image.imageUri, description: 'The sandbox container image the tasks run' });
    new CfnOutput(this, 'DataBucketName', { value: data.bucket.bucketName, description: 'S3 bucket holding the data/ tree' });
    new CfnOutput(this, 'StateTableName', {
      value: state.table.tableName,
      description: 'DynamoDB table of the thread actors and the pause flag (npm run ops -- runs, stop, pause, resume)',
    });
    new CfnOutput(this, 'StateMachineArn', {
      value: agentRun.stateMachine.stateMachineArn,
      description: 'The agent-run state machine: one execution per prompt (npm run ops -- stop stops them)',
    });
    new CfnOutput(this, 'SandboxClusterName', {
      value: sandboxTask.cluster.clusterName,
      description: `ECS cluster of the sandbox tasks (network mode: ${sandboxNetwork}); aws ecs list-tasks --cluster <name> shows running sandboxes`,
    });
    new CfnOutput(this, 'EventBusName', {
      value: eventBus.bus.eventBusName,
      description: 'Custom EventBridge bus: put events with detail {"text": "...", "threadId": "..."} (or adapterId + channelId)',
    });
    new CfnOutput(this, 'EventBusArn', { value: eventBus.bus.eventBusArn, description: 'ARN of the custom EventBridge bus' });
    new CfnOutput(this, 'AgentStepFunctionName', {
      value: agentRun.agentStep.functionName,
      description:
        'The agent-step function: its role calls the model and its environment says how sandboxes start (npm run doctor reads both)',
    });
    new CfnOutput(this, 'DashboardUrl', {
      value: `https://console.aws.amazon.com/cloudwatch/home?region=${Aws.REGION}#dashboards:name=${dashboard.dashboard.dashboardName}`,
      description: 'CloudWatch dashboard of the runtime: runs, failures, latency, tokens, cost, queues, sandboxes, alarms',
    });
    new CfnOutput(this, 'AlarmTopicArn', {
      value: alarmTopic.topic.topicArn,
      description: 'SNS topic every alarm notifies (subscribed by email with -c alarmEmail=...)',
    });
    new CfnOutput(this, 'ScheduleGroupName', {
      value: eventSchedules.groupName,
      description: 'EventBridge Scheduler group holding the schedules of the event files under events/ in the data bucket',
    });

    acknowledgeNagFindings({
      reachStep,
      mcpOAuth,
      data,
      webhook,
      agentRun,
      dispatch,
      runEnded,
      chatSecrets,
      eventBus,
      eventSchedules,
      triggers,
      sandbox: { availabilityZones, prefixLists, task: sandboxTask, step: sandboxStep, reaper: sandboxReaper, teardown },
      versionPruning,
    });
  }
}
