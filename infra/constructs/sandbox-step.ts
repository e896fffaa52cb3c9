// The sandbox-step function: runs the sandbox tools (bash, read, write, edit, and the tools of stdio
// MCP servers, which run in the sandbox) of a model step against the thread's task, over the VPC to the task's private IP, and syncs workspace files with S3 through
// the gateway endpoint. It lives in the sandbox subnets with SandboxStepSg, which reaches the task's
// command server and the S3 / DynamoDB gateway endpoints and nothing else; it calls no other AWS API.
import { SANDBOX_STEP_TIMEOUT_SECONDS } from '../../shared/tools/timeouts.ts';
import { Duration } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { FUNCTION_ENTRIES } from '../function-entries.ts';
import { createAgentFunction } from './agent-function.ts';
import { grantObjectReadWrite } from './data-bucket.ts';
import type { SandboxNetwork } from './sandbox-network.ts';
import type { SandboxSecurityGroups } from './sandbox-security-groups.ts';
import { SANDBOX_PORT } from './sandbox-task.ts';
import { grantTableActions } from './state-table.ts';
import { handlerEnvironment, sandboxStepEnv } from '../../shared/env.ts';

export interface SandboxStepProps {
  readonly table: ITable;
  readonly bucket: IBucket;
  readonly network: SandboxNetwork;
  readonly securityGroups: SandboxSecurityGroups;
  readonly logRetention: RetentionDays;
}

export class SandboxStep extends Construct {
  readonly handler: NodejsFunction;

  constructor(scope: Construct, id: string, props: SandboxStepProps) {
    super(scope, id);
    this.handler = createAgentFunction(this, 'Handler', {
      entry: FUNCTION_ENTRIES.sandboxStep,
      description: "Runs sandbox tool calls (bash, read, write, edit) in the thread's Fargate task; syncs files with S3",
      timeout: Duration.seconds(SANDBOX_STEP_TIMEOUT_SECONDS),
      memorySize: 1024,
      retainVersions: true,
      logRetention: props.logRetention,
      environment: handlerEnvironment(sandboxStepEnv, {
        TABLE_NAME: props.table.tableName,
        DATA_BUCKET: props.bucket.bucketName,
        SANDBOX_PORT: String(SANDBOX_PORT),
      }),
      vpc: {
        vpc: props.network.vpc,
        subnets: props.network.subnets,
        securityGroups: [props.securityGroups.step],
      },
    });
    // Reads the sandbox record and the run's flags; records sync state, health and a lost task; takes steering.
    grantTableActions(props.table, this.handler, ['GetItem', 'UpdateItem']);
    grantObjectReadWrite(props.bucket, this.handler);
  }
}
