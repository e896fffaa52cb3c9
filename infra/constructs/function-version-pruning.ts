// Old versions of the functions whose versions are retained (agent-step and sandbox-step: a run
// invokes the versions it started with, so a deploy must not delete them) would otherwise pile up
// forever, against Lambda's code storage quota. A custom resource runs on every deploy that publishes
// a version of them and deletes the versions no run can still be using: all but the newest
// KEEP_LATEST_VERSIONS that were replaced more than twice the longest run (runTimeoutMinutes) ago.
// Its role may list these functions' versions and delete them by qualified ARN, nothing else.
import { CustomResource, Duration } from 'aws-cdk-lib';
import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { PruneFunctionVersionsProperties } from '../custom-resources/prune-function-versions.ts';
import { createDeployTimeProvider, type DeployTimeProvider } from './deploy-time-provider.ts';

export const PRUNE_FUNCTION_VERSIONS_HANDLER_ENTRY = 'infra/custom-resources/prune-function-versions.ts';

/** Versions always kept per function, however old: the current one and the two before it. */
export const KEEP_LATEST_VERSIONS = 3;

export interface FunctionVersionPruningProps {
  /** Functions whose versions are retained across deploys. */
  readonly functions: NodejsFunction[];
  /** The longest one run may take: a version replaced less than twice this long ago is kept. */
  readonly runTimeout: Duration;
  readonly logRetention: RetentionDays;
}

export class FunctionVersionPruning extends Construct {
  readonly provider: DeployTimeProvider;
  readonly resource: CustomResource;

  constructor(scope: Construct, id: string, props: FunctionVersionPruningProps) {
    super(scope, id);
    this.provider = createDeployTimeProvider(this, 'Prune', {
      entry: PRUNE_FUNCTION_VERSIONS_HANDLER_ENTRY,
      description: 'On each deploy, deletes the versions of the run functions that no run can still be using',
      timeout: Duration.minutes(5),
      logRetention: props.logRetention,
    });
    this.provider.handler.addToRolePolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['lambda:ListVersionsByFunction'],
        resources: props.functions.map((fn) => fn.functionArn),
      }),
    );
    // The qualified ARNs only: DeleteFunction of the function itself would delete it with every version.
    this.provider.handler.addToRolePolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['lambda:DeleteFunction'],
        resources: props.functions.map((fn) => `${fn.functionArn}:*`),
      }),
    );
    const properties: PruneFunctionVersionsProperties = {
      functionNames: props.functions.map((fn) => fn.functionName),
      currentVersions: props.functions.map((fn) => fn.currentVersion.version),
      keepLatest: String(KEEP_LATEST_VERSIONS),
      keepSupersededMinutes: String(props.runTimeout.toMinutes() * 2),
    };
    this.resource = new CustomResource(this, 'Resource', {
      serviceToken: this.provider.provider.serviceToken,
      resourceType: 'Custom::PruneFunctionVersions',
      properties,
    });
  }
}
