// Which Availability Zones the sandbox VPC spans, decided at deploy time. Both the sandbox-step Lambda
// function and the Fargate tasks run in its subnets, and neither runs in every zone; CloudFormation's
// Fn::GetAZs lists them all. Zone names are per account (us-east-1a is a different zone in different
// accounts) while zone IDs are not, and this stack is environment-agnostic, so a custom resource asks
// EC2 in the deploying account and skips the zone IDs below; or takes the IDs the deployment names.
import { CustomResource, Duration, Token } from 'aws-cdk-lib';
import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { AvailabilityZonesProperties } from '../custom-resources/availability-zones.ts';
import { createDeployTimeProvider, type DeployTimeProvider } from './deploy-time-provider.ts';

/**
 * AZ IDs the default choice skips, because a part of the sandbox cannot run there. Where they come from:
 * - use1-az3 (us-east-1): Lambda rejects VPC subnets in it ("The provided subnets contain availability
 *   zone Lambda doesn't support"); sandbox-step is a VPC function. AWS publishes no list of such zones
 *   for Lambda; this is the known one.
 * - usw1-az2, apne1-az3, cnn1-az4: Fargate runs only in the other zones of us-west-1 (usw1-az1, usw1-az3),
 *   ap-northeast-1 (apne1-az1, -az2, -az4) and cn-north-1 (cnn1-az1, -az2): Amazon ECS Developer Guide,
 *   "Supported Regions for Amazon ECS on AWS Fargate".
 * Support changes over time: a deployment can always name its zones with the sandboxAzIds setting.
 */
export const UNSUPPORTED_SANDBOX_AZ_IDS: readonly string[] = ['use1-az3', 'usw1-az2', 'apne1-az3', 'cnn1-az4'];

export const AVAILABILITY_ZONES_HANDLER_ENTRY = 'infra/custom-resources/availability-zones.ts';

export interface SandboxAvailabilityZonesProps {
  /** How many zones (sandboxAzs). */
  readonly count: number;
  /** Exactly these AZ IDs (sandboxAzIds), instead of the first `count` supported zones. */
  readonly zoneIds?: readonly string[];
  readonly logRetention: RetentionDays;
}

export class SandboxAvailabilityZones extends Construct {
  /** The zone names (deploy-time values), one per zone. */
  readonly names: string[];
  readonly lookup: CustomResource;
  readonly provider: DeployTimeProvider;

  constructor(scope: Construct, id: string, props: SandboxAvailabilityZonesProps) {
    super(scope, id);
    const count = props.zoneIds?.length ?? props.count;
    this.provider = createDeployTimeProvider(this, 'Lookup', {
      entry: AVAILABILITY_ZONES_HANDLER_ENTRY,
      description: 'Chooses the Availability Zones of the sandbox VPC at deploy time (DescribeAvailabilityZones)',
      timeout: Duration.minutes(1),
      logRetention: props.logRetention,
    });
    this.provider.handler.addToRolePolicy(
      new PolicyStatement({ effect: Effect.ALLOW, actions: ['ec2:DescribeAvailabilityZones'], resources: ['*'] }),
    );
    const properties: AvailabilityZonesProperties = {
      count: String(count),
      ...(props.zoneIds ? { zoneIds: [...props.zoneIds] } : { excludedZoneIds: [...UNSUPPORTED_SANDBOX_AZ_IDS] }),
    };
    this.lookup = new CustomResource(this, 'Resource', {
      serviceToken: this.provider.provider.serviceToken,
      resourceType: 'Custom::SandboxAvailabilityZones',
      properties,
    });
    this.names = Array.from({ length: count }, (_, i) => Token.asString(this.lookup.getAtt(`Zone${i}`)));
  }

  /** The lookup function, for tests and nag acknowledgements. */
  get handler(): NodejsFunction {
    return this.provider.handler;
  }
}
