// What the sandbox VPC's endpoints carry, in isolated mode: only this deployment's traffic. Without
// policies, the S3 gateway endpoint (which sandbox tasks reach: image layers live in S3) would carry a
// command's upload to any bucket in the Region with a presigned URL from anyone's credentials, and the
// ECR, Logs and DynamoDB endpoints would serve any account. With them:
//   S3        this deployment's data bucket (sandbox-step's sync) and the Region's ECR layer bucket
//             (read only: image pulls)
//   DynamoDB  this deployment's table (sandbox-step)
//   ECR       pulls from this account's repositories (and a prebuilt image's), and the login token
//   Logs      writing to this account's log groups
// In egress and public modes commands reach the internet anyway (through the NAT gateway, or from
// their own address), and legitimate work may use other buckets of the Region: the endpoints stay
// open there.
import { ArnFormat, Aws, Stack } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { AnyPrincipal, Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import type { SandboxNetwork } from './sandbox-network.ts';

export interface SandboxEndpointPoliciesProps {
  readonly network: SandboxNetwork;
  readonly bucket: IBucket;
  readonly table: ITable;
  /** A prebuilt sandbox image's repository (sandboxImageUri), which may be another account's. */
  readonly prebuiltRepositoryArn?: string;
}

/** The bucket ECR keeps image layers in, per Region (what ECR's documentation has endpoint policies allow). */
export const ecrLayerBucketArn = (region: string) => `arn:${Aws.PARTITION}:s3:::prod-${region}-starport-layer-bucket/*`;

export const ECR_PULL_ACTIONS = ['ecr:BatchCheckLayerAvailability', 'ecr:BatchGetImage', 'ecr:GetDownloadUrlForLayer'];
export const LOG_WRITE_ACTIONS = ['logs:CreateLogStream', 'logs:PutLogEvents'];

export class SandboxEndpointPolicies extends Construct {
  constructor(scope: Construct, id: string, props: SandboxEndpointPoliciesProps) {
    super(scope, id);
    const { network } = props;
    if (network.mode !== 'isolated') return;
    const stack = Stack.of(this);
    const allow = (actions: string[], resources: string[]) =>
      new PolicyStatement({ effect: Effect.ALLOW, principals: [new AnyPrincipal()], actions, resources });

    network.s3Endpoint.addToPolicy(
      allow(
        ['s3:GetObject', 's3:PutObject', 's3:DeleteObject', 's3:AbortMultipartUpload', 's3:ListBucket'],
        [props.bucket.bucketArn, props.bucket.arnForObjects('*')],
      ),
    );
    network.s3Endpoint.addToPolicy(allow(['s3:GetObject'], [ecrLayerBucketArn(stack.region)]));
    network.dynamoDbEndpoint.addToPolicy(allow(['dynamodb:*'], [props.table.tableArn, `${props.table.tableArn}/index/*`]));

    const repositories = stack.formatArn({ service: 'ecr', resource: 'repository', resourceName: '*' });
    const logGroups = stack.formatArn({
      service: 'logs',
      resource: 'log-group',
      resourceName: '*',
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    for (const endpoint of network.interfaceEndpoints) {
      const service = endpoint.node.id;
      if (service.startsWith('Ecr')) {
        endpoint.addToPolicy(
          allow(ECR_PULL_ACTIONS, [repositories, ...(props.prebuiltRepositoryArn ? [props.prebuiltRepositoryArn] : [])]),
        );
        // The login token is not a resource of any repository.
        endpoint.addToPolicy(allow(['ecr:GetAuthorizationToken'], ['*']));
      } else {
        endpoint.addToPolicy(allow(LOG_WRITE_ACTIONS, [logGroups]));
      }
    }
  }
}
