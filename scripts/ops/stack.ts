// The stack the ops commands act on: its state table, state machine and data bucket, found from the
// stack's outputs (CloudFormation DescribeStacks) with the standard AWS credential chain, locally
// as against AWS.
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SFNClient } from '@aws-sdk/client-sfn';
import { documentClient } from '../../shared/aws/dynamodb.ts';
import type { ControlDeps } from '../../shared/run/control.ts';
import { isPaused } from '../../shared/policy/pause.ts';
import type { JsonLogger } from '../../shared/observability/log.ts';
import { executionStarter } from '../../shared/run/runs.ts';
import type { StoreDeps } from '../../shared/context/store.ts';

export interface OpsStack {
  stackName: string;
  control: ControlDeps;
  store: StoreDeps;
  destroy(): void;
}

const NEEDED = ['StateTableName', 'StateMachineArn', 'DataBucketName'] as const;

export async function openStack(stackName: string, config: { region?: string }, logger: JsonLogger): Promise<OpsStack> {
  const cloudFormation = new CloudFormationClient(config);
  let outputs: Record<string, string | undefined>;
  try {
    const stack = (await cloudFormation.send(new DescribeStacksCommand({ StackName: stackName }))).Stacks?.[0];
    outputs = Object.fromEntries((stack?.Outputs ?? []).map((o) => [o.OutputKey, o.OutputValue]));
  } catch (error) {
    throw new Error(`Cannot read stack ${stackName}: ${(error as Error).message} (check --stack, --region and your AWS credentials)`);
  } finally {
    cloudFormation.destroy();
  }
  const missing = NEEDED.filter((key) => !outputs[key]);
  if (missing.length > 0) throw new Error(`Stack ${stackName} has no ${missing.join(', ')} output: deploy this version (npx cdk deploy)`);
  const raw = new DynamoDBClient(config);
  const sfn = new SFNClient(config);
  const s3 = new S3Client({ ...config, forcePathStyle: process.env.AWS_S3_FORCE_PATH_STYLE === 'true' });
  const table = { db: documentClient(raw), tableName: outputs.StateTableName! };
  const stateMachineArn = outputs.StateMachineArn!;
  return {
    stackName,
    control: {
      actor: { ...table, startRun: executionStarter(sfn, stateMachineArn, logger), paused: () => isPaused(table) },
      sfn,
      stateMachineArn,
      logger,
    },
    store: { s3, bucket: outputs.DataBucketName! },
    destroy() {
      raw.destroy();
      sfn.destroy();
      s3.destroy();
    },
  };
}
