// Every cdk-nag (AwsSolutions) acknowledgement of the stack, grouped by construct, each with the
// reason the finding is accepted. cdk-nag v3 uses CDK's own Validations.acknowledge(); a finding on
// a wildcard is acknowledged by its exact id (e.g. AwsSolutions-IAM5[Resource::*]), so a new
// wildcard fails the synth until someone looks at it.
import { type App, Stack, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { IConstruct } from 'constructs';
import type { AgentRun } from './constructs/agent-run.ts';
import type { DataBucket } from './constructs/data-bucket.ts';
import type { Dispatch } from './constructs/dispatch.ts';
import type { RunEnded } from './constructs/run-ended.ts';
import type { SlackSecret } from './constructs/slack-secret.ts';
import type { WebhookApi } from './constructs/webhook-api.ts';
import { anyRegionFoundationModelArn, parseModelId } from './constructs/bedrock-access.ts';

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
  readonly slack: SlackSecret;
  readonly webhook: WebhookApi;
  readonly dispatch: Dispatch;
  readonly agentRun: AgentRun;
  readonly runEnded: RunEnded;
}

export function acknowledgeNagFindings(parts: NagScope): void {
  const { data, slack, webhook, dispatch, agentRun, runEnded } = parts;

  // Every Lambda function (built by createAgentFunction).
  for (const fn of [webhook.handler, dispatch.handler, agentRun.agentStep, runEnded.handler]) {
    acknowledge(resourceOf(fn), 'AwsSolutions-L1', 'nodejs22.x is the runtime this project targets and tests on; move to nodejs24.x deliberately, after testing on it.');
    acknowledge(
      roleOf(fn),
      'AwsSolutions-IAM5[Resource::*]',
      'Active X-Ray tracing needs xray:PutTraceSegments and xray:PutTelemetryRecords, which do not support resource-level permissions.',
    );
  }

  // WebhookApi: Slack signs its requests but cannot present IAM, JWT or Lambda-authorizer credentials.
  for (const route of webhook.routes) {
    acknowledge(
      resourceOf(route),
      'AwsSolutions-APIG4',
      'Slack cannot send API Gateway credentials; the webhook function verifies the Slack request signature (HMAC-SHA256 of timestamp and body with the signing secret) before any work, and /health returns no data.',
    );
  }

  // SlackSecret
  acknowledge(
    resourceOf(slack.secret),
    'AwsSolutions-SMG4',
    'Slack signing secrets and bot tokens are issued and rotated in the Slack app settings, not by a rotation Lambda; the operator stores the new values with put-secret-value.',
  );

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
      'A cross-Region inference profile runs the one configured foundation model in whichever Region has capacity; the statement names that model only and requires bedrock:InferenceProfileArn to be this deployment\'s profile.',
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
    'Run-ended cleans up after whichever thread\'s run ended, so it needs that thread\'s keys in the data bucket; access is limited to object actions on that one bucket.',
  );
  acknowledge(
    resourceOf(runEnded.deadLetterQueue),
    'AwsSolutions-SQS3',
    'This queue is itself the dead-letter queue of the run-ended EventBridge target; it needs no DLQ of its own.',
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
  }
  throw new Error(`cannot name the nag finding for ${JSON.stringify(value)}`);
}
