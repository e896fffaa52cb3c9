// Every cdk-nag (AwsSolutions) acknowledgement of the stack, grouped by construct, each with the
// reason the finding is accepted. cdk-nag v3 uses CDK's own Validations.acknowledge(); a finding on
// a wildcard is acknowledged by its exact id (e.g. AwsSolutions-IAM5[Resource::*]), so a new
// wildcard fails the synth until someone looks at it.
import { type App, ArnFormat, Stack, Validations } from 'aws-cdk-lib';
import type { Asset } from 'aws-cdk-lib/aws-s3-assets';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { IConstruct } from 'constructs';
import type { AgentRun } from './constructs/agent-run.ts';
import type { DataBucket } from './constructs/data-bucket.ts';
import type { McpOAuth } from './constructs/mcp-oauth.ts';
import { RUN_CONTEXTS, type Dispatch } from './constructs/dispatch.ts';
import { AGENT_DEFINITIONS } from '../shared/agents/definition.ts';
import type { AgentEventBus } from './constructs/event-bus.ts';
import type { Triggers } from './constructs/triggers.ts';
import type { EventSchedules } from './constructs/event-schedules.ts';
import type { RunEnded } from './constructs/run-ended.ts';
import type { ChatSecrets } from './constructs/chat-secrets.ts';
import type { WebhookApi } from './constructs/webhook-api.ts';
import type { AwsPrefixLists } from './constructs/aws-prefix-lists.ts';
import type { SandboxReaper } from './constructs/sandbox-reaper.ts';
import type { SandboxStep } from './constructs/sandbox-step.ts';
import type { ReachStep } from './constructs/reach-step.ts';
import type { DeployTimeProvider } from './constructs/deploy-time-provider.ts';
import type { SandboxAvailabilityZones } from './constructs/sandbox-availability-zones.ts';
import type { SandboxImageBuild } from './constructs/sandbox-image.ts';
import type { SandboxTask } from './constructs/sandbox-task.ts';
import type { SandboxTeardown } from './constructs/sandbox-teardown.ts';
import type { FunctionVersionPruning } from './constructs/function-version-pruning.ts';
import { anyRegionFoundationModelArn, parseModelId } from './constructs/bedrock-access.ts';
import { ROOT_KEYS } from '../shared/ids.ts';
import { PLATFORM_DESCRIPTORS } from '../shared/platforms/descriptors.ts';
import type { PlatformDescriptor } from '../shared/platforms/platform.ts';

/**
 * Runs cdk-nag's AwsSolutions rules on every synth of the app. cdk-nag v3 is a policy validation
 * plugin: errors fail the synth, warnings are reported, and the acknowledgements below are also
 * written into each resource's template metadata (cdk_nag) as an audit trail.
 */
export function checkWithCdkNag(app: App): void {
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { writeSuppressionsToCloudFormation: true }));
}

export interface NagScope {
  readonly data: DataBucket;
  readonly chatSecrets: ChatSecrets;
  readonly webhook: WebhookApi;
  readonly dispatch: Dispatch;
  readonly agentRun: AgentRun;
  readonly runEnded: RunEnded;
  readonly eventBus: AgentEventBus;
  readonly eventSchedules: EventSchedules;
  readonly triggers: Triggers;
  readonly sandbox: {
    readonly availabilityZones: SandboxAvailabilityZones;
    readonly prefixLists: AwsPrefixLists;
    readonly task: SandboxTask;
    readonly step: SandboxStep;
    readonly reaper: SandboxReaper;
    readonly teardown: SandboxTeardown;
  };
  readonly versionPruning: FunctionVersionPruning;
  readonly reachStep: ReachStep;
  readonly mcpOAuth: McpOAuth;
}

const TASK_TOKEN_REASON =
  'An approval decided in the chat goes on with states:SendTaskSuccess, which the Service Authorization Reference lists without a resource type: IAM authorizes them on "*" only. The task token in the request is the capability; only the webhooks (which take the clicks) are granted it.';
const CHILD_TOKEN_REASON =
  'A subagent that ends resumes the run waiting for it with states:SendTaskSuccess, which the Service Authorization Reference lists without a resource type: IAM authorizes it on "*" only. The task token, stored in the state table with the children, is the capability; only agent-step and run-ended (where a child ends) are granted it.';
const XRAY_REASON =
  'Active X-Ray tracing needs xray:PutTraceSegments and xray:PutTelemetryRecords, which do not support resource-level permissions.';
const LIST_TASKS_REASON =
  'ecs:ListTasks of a whole cluster is authorized against "*" (AWS denies it "on resource: *" to a grant of the cluster\'s container instances); the statement requires ecs:cluster to be the sandbox cluster, so no other cluster\'s tasks can be listed.';

export function acknowledgeNagFindings(parts: NagScope): void {
  const {
    data,
    chatSecrets,
    webhook,
    dispatch,
    agentRun,
    runEnded,
    eventBus,
    eventSchedules,
    triggers,
    sandbox,
    versionPruning,
    reachStep,
    mcpOAuth,
  } = parts;
  const webhooks = [webhook.handler, ...Object.values(webhook.platformHandlers)];

  // Every Lambda function (built by createAgentFunction).
  const functions = [
    ...webhooks,
    dispatch.handler,
    agentRun.agentStep,
    runEnded.handler,
    sandbox.step.handler,
    reachStep.handler,
    sandbox.reaper.handler,
    eventBus.handler,
    mcpOAuth.handler,
  ];
  for (const fn of functions) {
    acknowledge(
      resourceOf(fn),
      'AwsSolutions-L1',
      'nodejs22.x is the runtime this project targets and tests on; move to nodejs24.x deliberately, after testing on it.',
    );
    acknowledge(
      roleOf(fn),
      'AwsSolutions-IAM5[Resource::*]',
      fn === sandbox.step.handler || (fn === reachStep.handler && reachStep.handler.isBoundToVpc)
        ? `${XRAY_REASON} In the VPC, Lambda also needs ec2:DescribeNetworkInterfaces and ec2:DescribeSubnets, which work only on "*" (creating and deleting interfaces is scoped separately).`
        : fn === sandbox.reaper.handler
          ? `${XRAY_REASON} The orphan sweep lists the sandbox cluster's tasks: ${LIST_TASKS_REASON}`
          : webhooks.includes(fn)
            ? `${XRAY_REASON} ${TASK_TOKEN_REASON}`
            : fn === agentRun.agentStep || fn === runEnded.handler
              ? `${XRAY_REASON} ${CHILD_TOKEN_REASON}`
              : XRAY_REASON,
    );
  }

  // WebhookApi: no platform can present IAM or Lambda-authorizer credentials; each webhook verifies its own
  // requests, as its descriptor says. The health check runs on the `webhook` function: its platform's words cover it.
  const platforms: readonly PlatformDescriptor[] = PLATFORM_DESCRIPTORS;
  const healthPlatform = platforms.find((platform) => platform.deployment.webhook.role === 'webhook')!;
  for (const route of webhook.routes) {
    const platform = platforms.find((p) => p.deployment.webhook.path === route.path) ?? healthPlatform;
    acknowledge(resourceOf(route), 'AwsSolutions-APIG4', platform.deployment.webhook.verification);
  }

  // Stop and the lease check act on the one running execution, named by its run id; a parent run stops its subagents'.
  for (const fn of [...webhooks, dispatch.handler, agentRun.agentStep, runEnded.handler]) {
    acknowledge(
      roleOf(fn),
      iam5Resource(agentRun, agentRun.executionArns),
      'Executions are named by run id, so they cannot be listed in advance; the statement covers executions of the one agent-run state machine and only StopExecution (the webhooks, agent-step and run-ended: a stop, or a parent run stopping its subagents) or StopExecution/DescribeExecution (dispatch).',
    );
  }

  acknowledge(
    roleOf(dispatch.handler),
    iam5Resource(dispatch, data.bucket.arnForObjects(`${ROOT_KEYS.prompts}*`)),
    'Dispatch stores long prompt texts under prompts/, one key per run id (not known in advance); PutObject only, no read, list or delete.',
  );
  acknowledge(
    roleOf(dispatch.handler),
    iam5Resource(dispatch, data.bucket.arnForObjects(RUN_CONTEXTS)),
    "Admins' `runs` command shows each running run's model steps and cost from its thread's context.jsonl; threads are not known in advance. GetObject of context.jsonl files only, nothing else in the bucket.",
  );
  for (const [keys, reason] of [
    [
      AGENT_DEFINITIONS.files,
      'The `agents` command reads the agent definitions of the deployment and of the asking channel; agent and channel names are not known in advance. GetObject of AGENT.md files only.',
    ],
    [
      AGENT_DEFINITIONS.errorFiles,
      'The `agents` command writes AGENT.error.json beside an invalid AGENT.md it read; PutObject of those error files only, no read, list or delete.',
    ],
  ] as const) {
    for (const key of keys) acknowledge(roleOf(dispatch.handler), iam5Resource(dispatch, data.bucket.arnForObjects(key)), reason);
  }

  // The chat secrets: each platform issues and rotates its own credentials.
  for (const { platform, secret } of chatSecrets) {
    acknowledge(resourceOf(secret), 'AwsSolutions-SMG4', platform.deployment.secretRotation);
  }

  // AgentRun: the agent-step function and the state machine.
  acknowledge(
    roleOf(agentRun.agentStep),
    iam5Resource(agentRun, data.bucket.arnForObjects('*')),
    'The agent reads and writes any key of its own data bucket (memory, skills, contexts, attachments); access is limited to object actions on that one bucket.',
  );
  const { profileScope, foundationModelId } = parseModelId(agentRun.modelId);
  if (profileScope) {
    acknowledge(
      roleOf(agentRun.agentStep),
      iam5Resource(agentRun, anyRegionFoundationModelArn(foundationModelId)),
      "A cross-Region inference profile runs the one configured foundation model in whichever Region has capacity; the statement names that model only and requires bedrock:InferenceProfileArn to be this deployment's profile.",
    );
  }
  for (const fn of [agentRun.agentStep, sandbox.step.handler, reachStep.handler]) {
    acknowledge(
      agentRun.stateMachine.role,
      iam5Resource(agentRun, `${fn.functionArn}:*`),
      'A run invokes the function versions it started with until it ends, also after a deploy has published newer ones; the wildcard is the version qualifier of this one function.',
    );
  }
  acknowledge(
    agentRun.stateMachine.role,
    'AwsSolutions-IAM5[Resource::*]',
    'Step Functions logging (logs:CreateLogDelivery and related vended-log actions) and X-Ray tracing actions do not support resource-level permissions.',
  );

  // RunEnded
  acknowledge(
    roleOf(runEnded.handler),
    iam5Resource(runEnded, data.bucket.arnForObjects('*')),
    "Run-ended cleans up after whichever thread's run ended, so it needs that thread's keys in the data bucket; access is limited to object actions on that one bucket.",
  );
  acknowledge(
    resourceOf(runEnded.deadLetterQueue),
    'AwsSolutions-SQS3',
    'This queue is itself the dead-letter queue of the run-ended EventBridge target; it needs no DLQ of its own.',
  );

  acknowledgeSandbox(sandbox, data, agentRun);
  acknowledgeVersionPruning(versionPruning, [agentRun.agentStep, sandbox.step.handler, reachStep.handler]);
  acknowledgeReachStep(reachStep, data);
  acknowledgeMcpOAuth(mcpOAuth, reachStep);
  acknowledgeEventBus(eventBus, eventSchedules, triggers);
}

function acknowledgeMcpOAuth(oauth: McpOAuth, reach: ReachStep): void {
  for (const route of oauth.routes) {
    acknowledge(
      resourceOf(route),
      'AwsSolutions-APIG4',
      "A person's browser follows a Connect link here and comes back from the MCP server's authorization server: it has no credential to present. The single-use, ten-minute `state`, bound server-side to one person, thread and server, is what authorizes a request; anything else is refused.",
    );
  }
  acknowledge(
    roleOf(oauth.handler),
    iam5Resource(oauth, reach.secretsArn),
    "An operator's OAuth client (oauthClient) is a secret under <stack>/mcp/, named in settings.json and not known at deploy time; GetSecretValue of that prefix only.",
  );
}

function acknowledgeReachStep(reach: ReachStep, data: DataBucket): void {
  acknowledge(
    roleOf(reach.handler),
    iam5Resource(reach, data.bucket.arnForObjects('*')),
    "The reach step reads the run's snapshot and tool listing and writes the tool result into the thread's context, under keys that name threads and runs not known in advance; object actions on the one data bucket only.",
  );
  acknowledge(
    roleOf(reach.handler),
    iam5Resource(reach, reach.secretsArn),
    'The operator creates one secret per MCP credential under <stack>/mcp/, named in settings.json and not known at deploy time; GetSecretValue of that prefix only.',
  );
  if (reach.handler.isBoundToVpc) {
    acknowledge(
      roleOf(reach.handler),
      iam5Resource(reach, Stack.of(reach).formatArn({ service: 'ec2', resource: 'network-interface', resourceName: '*' })),
      'Lambda creates and deletes the network interfaces of a function in a VPC; their ids are not known in advance (creation is limited to the given subnets and security groups).',
    );
  }
}

function acknowledgeVersionPruning(pruning: FunctionVersionPruning, functions: NodejsFunction[]): void {
  acknowledgeDeployTimeProvider(pruning.provider, XRAY_REASON);
  for (const fn of functions) {
    acknowledge(
      roleOf(pruning.provider.handler),
      iam5Resource(pruning, `${fn.functionArn}:*`),
      "Pruning deletes old versions of this one function (DeleteFunction with a version qualifier); version numbers are Lambda's, so the ARN is the function's with a wildcard qualifier, which never matches the unqualified function (deleting it whole).",
    );
  }
}

function acknowledgeEventBus(eventBus: AgentEventBus, schedules: EventSchedules, triggers: Triggers): void {
  const scheduler = roleOf(eventBus.handler);
  acknowledge(
    scheduler,
    iam5Resource(eventBus, eventBus.uploadArns),
    'Uploads are files operators put under uploads/{adapter}/{channel}/ with names of their choosing; the function only reads them (GetObject), in the one data bucket.',
  );
  acknowledge(
    scheduler,
    iam5Resource(eventBus, eventBus.attachmentArns),
    "The function copies an upload's or a trigger's file into the attachments/ folder of the thread it starts, which exists only once the thread does; PutObject only, on attachments/ folders of the one data bucket.",
  );
  for (const trigger of triggers.declared) {
    if (!trigger.objectArns) continue;
    acknowledge(
      scheduler,
      iam5Resource(triggers, trigger.objectArns),
      `Trigger ${trigger.declaration.name} fires for any new object under its bucket and prefix; the function reads (GetObject) only those objects, to copy the one that fired into the thread.`,
    );
  }
  acknowledge(
    scheduler,
    iam5Resource(eventBus, eventBus.eventFileArns),
    'The scheduler function reads whichever event file changed and writes or deletes the *.error.json beside it; file names are chosen by people and the agent, so the statement covers the events/ prefix of the one data bucket (GetObject, PutObject, DeleteObject only).',
  );
  acknowledge(
    scheduler,
    iam5Resource(eventBus, schedules.scheduleArns),
    "Schedules are created at runtime, one per event file and named after its key; the statement covers only the schedules of this stack's own schedule group and only Create/Update/Delete/GetSchedule.",
  );

  // The three queues exist only to hold what could not be delivered or processed.
  const deadLetterQueues: [IConstruct, string][] = [
    [schedules.deadLetterQueue, 'the dead-letter queue of the event schedules (EventBridge Scheduler)'],
    [eventBus.deadLetterQueue, "the dead-letter queue of the event bus rule's target"],
    [eventBus.failedInvocations, "the on-failure destination of the scheduler function's asynchronous invocations"],
    ...triggers.declared.map((t): [IConstruct, string] => [
      t.deadLetterQueue,
      `the dead-letter queue of trigger ${t.declaration.name}'s rule target`,
    ]),
  ];
  for (const [queue, role] of deadLetterQueues) {
    acknowledge(
      resourceOf(queue),
      'AwsSolutions-SQS3',
      `This queue is itself ${role}: nothing consumes it automatically, an alarm fires when it holds a message, so it needs no DLQ of its own.`,
    );
  }
}

function acknowledgeSandbox(sandbox: NagScope['sandbox'], data: DataBucket, agentRun: AgentRun): void {
  const { availabilityZones, prefixLists, task, step, reaper, teardown } = sandbox;
  acknowledgeDeployTimeProvider(
    availabilityZones.provider,
    `${XRAY_REASON} ec2:DescribeAvailabilityZones (read-only) does not support them either; it is the handler's only other action, used once per deploy to choose the sandbox VPC's zones.`,
  );
  const taskArns = iam5Resource(task, task.taskArns);

  // The sandbox task: environment variables are its two fixed, non-secret settings.
  acknowledge(
    resourceOf(task.taskDefinition),
    'AwsSolutions-ECS2',
    'The container environment holds only SANDBOX_WORKSPACE (/workspace) and SANDBOX_PORT (8080), both public and fixed; the only secret, the per-task token, is passed as a RunTask container override and never stored in the task definition.',
  );
  // An image from a public registry other than ECR needs no ECR permission at all.
  if (task.image.build || task.image.prebuiltRepositoryArn) {
    acknowledge(
      task.executionRole,
      'AwsSolutions-IAM5[Resource::*]',
      'Pulling the sandbox image needs ecr:GetAuthorizationToken, which does not support resource-level permissions; the layer and image actions name the one repository of the sandbox image.',
    );
  }
  if (task.image.build) acknowledgeImageBuild(task.image.build);

  // Starting and stopping sandbox tasks: task ids are random, so the ARN names the cluster and a wildcard id.
  acknowledge(
    roleOf(reaper.handler),
    taskArns,
    'The reaper describes and stops idle sandbox tasks, whose ids are assigned by ECS at RunTask; the ARN is limited to tasks of the sandbox cluster, and the statement also requires ecs:cluster to be that cluster.',
  );
  acknowledge(
    roleOf(agentRun.agentStep),
    taskArns,
    "Agent-step describes and stops its thread's sandbox task and tags it at RunTask (ecs:CreateAction = RunTask only); task ids are assigned by ECS, so the ARN names the sandbox cluster with a wildcard task id.",
  );
  acknowledge(
    roleOf(agentRun.agentStep),
    iam5Resource(task, task.taskDefinitionRevisionArns),
    "Agent-step runs the sandbox task definition's family, whose latest ACTIVE revision ECS picks: a deploy that replaces the task definition deregisters the old revision while runs started before it go on. The wildcard is the revision number of this one family; the statement also requires ecs:cluster to be the sandbox cluster.",
  );

  // The teardown: on stack deletion, lists, stops and describes the cluster's tasks.
  const stopTasks = teardown.provider;
  acknowledgeDeployTimeProvider(stopTasks, `${XRAY_REASON} The teardown lists the sandbox cluster's tasks: ${LIST_TASKS_REASON}`);
  acknowledge(
    roleOf(stopTasks.handler),
    taskArns,
    'On stack deletion the teardown stops every sandbox task and waits for them; task ids are assigned by ECS, so the ARN names the sandbox cluster with a wildcard task id, and the statement also requires ecs:cluster to be that cluster.',
  );

  // The sandbox-step function, inside the VPC.
  acknowledge(
    roleOf(step.handler),
    iam5Resource(step, data.bucket.arnForObjects('*')),
    "Sandbox-step copies a thread's workspace files between the data bucket and its sandbox task; access is limited to object actions on that one bucket.",
  );
  acknowledge(
    roleOf(step.handler),
    iam5Resource(step, Stack.of(step).formatArn({ service: 'ec2', resource: 'network-interface', resourceName: '*' })),
    "Lambda creates, re-addresses and deletes the function's VPC network interfaces with its execution role; their ids are unknown before Lambda creates them (creation is further limited to the sandbox subnets and security group).",
  );

  // The deploy-time prefix list lookup (AwsCustomResource).
  acknowledge(
    prefixLists.role,
    'AwsSolutions-IAM5[Resource::*]',
    'ec2:DescribePrefixLists (read-only) does not support resource-level permissions; it is the only action of this role, used once per deploy to find the S3 and DynamoDB prefix list ids.',
  );
}

/**
 * The deploy-time image build (@cdklabs/deploy-time-build): a CodeBuild project and a custom resource
 * function the library creates. Their log groups and managed policies are replaced in sandbox-image.ts;
 * what remains below is what the library's constructs grant and cannot be narrowed from outside.
 */
function acknowledgeImageBuild(build: SandboxImageBuild): void {
  const { project, handler } = build;
  const stack = Stack.of(project);
  acknowledge(
    resourceOf(handler),
    'AwsSolutions-L1',
    '@cdklabs/deploy-time-build 0.0.6 sets nodejs22.x (the runtime it is tested on) for its custom resource function, which runs only during deploys to start the image build.',
  );
  acknowledge(
    resourceOf(project),
    'AwsSolutions-CB4',
    'The image build produces no build artifacts (NO_ARTIFACTS): its one output is the image it pushes to the sandbox ECR repository, which ECR encrypts at rest; a customer managed key would have nothing to encrypt.',
  );
  const role = project.role;
  if (!role) throw new Error(`${project.node.path} has no role`);
  acknowledge(
    role,
    'AwsSolutions-IAM5[Resource::*]',
    'The build logs in to ECR and ECR Public (ecr:GetAuthorizationToken, ecr-public:GetAuthorizationToken, and sts:GetServiceBearerToken limited to ecr-public by sts:AWSServiceName); none supports resource-level permissions. Pushing and pulling layers names the sandbox repository only.',
  );
  acknowledge(
    role,
    iam5Resource(
      project,
      stack.formatArn({
        service: 'logs',
        resource: 'log-group',
        resourceName: `/aws/codebuild/${project.projectName}:*`,
        arnFormat: ArnFormat.COLON_RESOURCE_NAME,
      }),
    ),
    "CDK's default for a CodeBuild project: CodeBuild writes each build's log stream, named per build, into the project's own log group /aws/codebuild/<project>, which this stack creates with the deployment's retention.",
  );
  acknowledge(
    role,
    iam5Resource(project, stack.formatArn({ service: 'codebuild', resource: 'report-group', resourceName: `${project.projectName}-*` })),
    "CDK's default for a CodeBuild project: test-report actions on report groups named after the project. The image build creates no reports; the statement reaches only report groups with that project's name prefix.",
  );
  const asset = build.build.node.findChild('Source') as Asset;
  const assetRead =
    "deploy-time-build grants its build read access to its source (the sandbox build context, uploaded as a CDK file asset) with CDK's Asset.grantRead: Get*/List* on the CDK bootstrap assets bucket only, which the library gives no way to narrow to the one object.";
  for (const action of ['s3:GetObject*', 's3:GetBucket*', 's3:List*']) acknowledge(role, `AwsSolutions-IAM5[Action::${action}]`, assetRead);
  acknowledge(role, iam5Resource(project, asset.bucket.arnForObjects('*')), assetRead);
  // The function that fails the build's custom resource when the build fails (createAgentFunction).
  const failures = build.failures.handler;
  acknowledge(
    resourceOf(failures),
    'AwsSolutions-L1',
    'nodejs22.x is the runtime this project targets and tests on; move to nodejs24.x deliberately, after testing on it.',
  );
  acknowledge(roleOf(failures), 'AwsSolutions-IAM5[Resource::*]', XRAY_REASON);
}

/** A custom resource provider of this project (createDeployTimeProvider): its handler and its framework function. */
function acknowledgeDeployTimeProvider({ handler, frameworkRole }: DeployTimeProvider, wildcardReason: string): void {
  acknowledge(
    resourceOf(handler),
    'AwsSolutions-L1',
    'nodejs22.x is the runtime this project targets and tests on; move to nodejs24.x deliberately, after testing on it.',
  );
  acknowledge(roleOf(handler), 'AwsSolutions-IAM5[Resource::*]', wildcardReason);
  acknowledge(
    frameworkRole,
    iam5Resource(handler, `${handler.functionArn}:*`),
    "CDK's Provider framework invokes its handler through grantInvoke, which covers the function and its versions (<arn>:*); the role may invoke and describe that one handler and write its own log group, nothing else.",
  );
}

function acknowledge(scope: IConstruct, id: string, reason: string): void {
  Validations.of(scope).acknowledge({ id, reason });
}

/** The CloudFormation resource of an L2 construct: acknowledgements go on the resource the finding is about. */
function resourceOf(construct: IConstruct): IConstruct {
  const resource = construct.node.defaultChild;
  if (!resource) throw new Error(`${construct.node.path} has no CloudFormation resource`);
  return resource;
}

/** The execution role: its default policy holds the statements the IAM5 findings are about. */
function roleOf(fn: NodejsFunction): IConstruct {
  if (!fn.role) throw new Error(`${fn.node.path} has no execution role`);
  return fn.role;
}

/**
 * The finding id cdk-nag reports for a wildcard resource: the resolved ARN with Fn::Join flattened
 * and intrinsics written as <LogicalId.Attr> or <Ref>, e.g. `<DataBucketE6B0FAA8.Arn>/*`.
 */
function iam5Resource(scope: IConstruct, arn: string): string {
  return `AwsSolutions-IAM5[Resource::${flattenIntrinsics(Stack.of(scope).resolve(arn))}]`;
}

function flattenIntrinsics(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') {
    const fn = value as Record<string, unknown>;
    if (Array.isArray(fn['Fn::Join'])) {
      const [separator, parts] = fn['Fn::Join'] as [string, unknown[]];
      return parts.map(flattenIntrinsics).join(separator);
    }
    if (Array.isArray(fn['Fn::GetAtt'])) return `<${(fn['Fn::GetAtt'] as string[]).join('.')}>`;
    if (typeof fn.Ref === 'string') return `<${fn.Ref}>`;
    // CDK's bootstrap bucket names: Fn::Sub of pseudo parameters, which cdk-nag writes as <AWS::AccountId>.
    if (typeof fn['Fn::Sub'] === 'string') return fn['Fn::Sub'].replace(/\$\{([^}]+)\}/g, '<$1>');
  }
  throw new Error(`cannot name the nag finding for ${JSON.stringify(value)}`);
}
