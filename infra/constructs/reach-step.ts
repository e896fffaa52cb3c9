// The reach-step function: web_fetch and MCP calls, and the listing of a run's MCP tools. It is the
// only function that reaches the Internet on the agent's behalf and the only one that may read the
// MCP secrets (`<stack>/mcp/*`, created by the operator); it carries the MCP SDK and the HTML
// converter, which agent-step does not. Outside any VPC by default (public addresses only); the
// reachVpcId/reachSubnetIds/reachSecurityGroupIds context puts it in a VPC, for MCP servers on
// private addresses.
import { ArnFormat, Duration, Stack } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { SecurityGroup, Subnet, Vpc } from 'aws-cdk-lib/aws-ec2';
import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import type { SandboxNetworkMode } from '../settings.ts';
import { FUNCTION_ENTRIES } from '../function-entries.ts';
import { type AgentFunctionVpc, createAgentFunction } from './agent-function.ts';
import { grantObjectReadWrite } from './data-bucket.ts';
import { grantTableActions } from './state-table.ts';
import { handlerEnvironment, reachStepEnv } from '../../shared/env.ts';

export interface ReachVpcPlacement {
  readonly vpcId: string;
  readonly subnetIds: readonly string[];
  readonly securityGroupIds: readonly string[];
}

export interface ReachStepProps {
  readonly table: ITable;
  readonly bucket: IBucket;
  readonly logRetention: RetentionDays;
  /** Absent: outside any VPC. */
  readonly vpc?: ReachVpcPlacement;
  /** Local testing only: loopback targets allowed (cdk context reachAllowLoopback). */
  readonly allowLoopback: boolean;
  /** The sandbox network mode: in isolated, stdio MCP servers are left out of runs, saying why. */
  readonly sandboxNetwork: SandboxNetworkMode;
}

/** The name prefix of the MCP secrets: `${secret:NAME}` is the secret `<stack>/mcp/NAME`. */
export const mcpSecretPrefix = (stackName: string) => `${stackName}/mcp/`;

export class ReachStep extends Construct {
  readonly handler: NodejsFunction;
  /** Every MCP secret: Secrets Manager adds six random characters to a name in the ARN, which the `*` covers. */
  readonly secretsArn: string;

  constructor(scope: Construct, id: string, props: ReachStepProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const prefix = mcpSecretPrefix(stack.stackName);
    this.secretsArn = stack.formatArn({
      service: 'secretsmanager',
      resource: 'secret',
      resourceName: `${prefix}*`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    this.handler = createAgentFunction(this, 'Handler', {
      entry: FUNCTION_ENTRIES.reachStep,
      description: "Runs web_fetch and MCP tool calls, and lists a run's MCP tools",
      timeout: Duration.minutes(15),
      memorySize: 512,
      retainVersions: true,
      logRetention: props.logRetention,
      environment: handlerEnvironment(reachStepEnv, {
        TABLE_NAME: props.table.tableName,
        DATA_BUCKET: props.bucket.bucketName,
        MCP_SECRET_PREFIX: prefix,
        REACH_ALLOW_LOOPBACK: props.allowLoopback ? 'true' : 'false',
        SANDBOX_NETWORK: props.sandboxNetwork,
      }),
      ...(props.vpc ? { vpc: this.placement(props.vpc) } : {}),
    });
    // Reads the run's stop and steer flags; takes steering.
    grantTableActions(props.table, this.handler, ['GetItem', 'UpdateItem']);
    grantObjectReadWrite(props.bucket, this.handler);
    this.handler.addToRolePolicy(
      new PolicyStatement({ effect: Effect.ALLOW, actions: ['secretsmanager:GetSecretValue'], resources: [this.secretsArn] }),
    );
  }

  private placement(vpc: ReachVpcPlacement): AgentFunctionVpc {
    return {
      // The subnets are given by id, so the VPC's zones only need to be a valid list (the stack's).
      vpc: Vpc.fromVpcAttributes(this, 'Vpc', { vpcId: vpc.vpcId, availabilityZones: Stack.of(this).availabilityZones }),
      subnets: { subnets: vpc.subnetIds.map((subnetId, i) => Subnet.fromSubnetId(this, `Subnet${i}`, subnetId)) },
      securityGroups: vpc.securityGroupIds.map((groupId, i) => SecurityGroup.fromSecurityGroupId(this, `SecurityGroup${i}`, groupId)),
    };
  }
}
