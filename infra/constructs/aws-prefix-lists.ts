// The ids of the AWS-managed prefix lists of S3 and DynamoDB in the deployment's Region, so security
// groups can allow HTTPS to exactly the gateway endpoints' destinations. CloudFormation exposes no
// prefix list id on a gateway endpoint, and a synth-time lookup needs a fixed account and Region, which
// this environment-agnostic stack does not have; so a custom resource asks EC2 at deploy time.
import { Aws, Duration } from 'aws-cdk-lib';
import { Effect, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { AwsCustomResource, PhysicalResourceId } from 'aws-cdk-lib/custom-resources';
import { Construct } from 'constructs';

export interface AwsPrefixListsProps {
  readonly logRetention: RetentionDays;
}

const PREFIX_LIST_ID = 'PrefixLists.0.PrefixListId';

export class AwsPrefixLists extends Construct {
  /** pl-… of com.amazonaws.<region>.s3 */
  readonly s3: string;
  /** pl-… of com.amazonaws.<region>.dynamodb */
  readonly dynamoDb: string;
  /** Execution role of the (stack-wide singleton) AwsCustomResource function: DescribePrefixLists only. */
  readonly role: Role;

  constructor(scope: Construct, id: string, props: AwsPrefixListsProps) {
    super(scope, id);
    // An explicit role and log group instead of the defaults (a managed policy and a log group kept forever).
    this.role = new Role(this, 'LookupRole', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: 'Looks up the S3 and DynamoDB prefix list ids at deploy time',
    });
    this.role.addToPolicy(new PolicyStatement({ effect: Effect.ALLOW, actions: ['ec2:DescribePrefixLists'], resources: ['*'] }));
    const logGroup = new LogGroup(this, 'LookupLogs', { retention: props.logRetention });
    logGroup.grantWrite(this.role);

    const lookup = (name: string, service: string): string => {
      const call = {
        service: 'EC2',
        action: 'DescribePrefixLists',
        parameters: { Filters: [{ Name: 'prefix-list-name', Values: [`com.amazonaws.${Aws.REGION}.${service}`] }] },
        physicalResourceId: PhysicalResourceId.fromResponse(PREFIX_LIST_ID),
        outputPaths: [PREFIX_LIST_ID],
      };
      const resource = new AwsCustomResource(this, name, {
        onCreate: call,
        onUpdate: call,
        role: this.role,
        logGroup,
        timeout: Duration.minutes(1),
        installLatestAwsSdk: false,
      });
      // The role's policy must exist before the lookup runs.
      resource.node.addDependency(this.role);
      return resource.getResponseField(PREFIX_LIST_ID);
    };
    this.s3 = lookup('S3', 's3');
    this.dynamoDb = lookup('DynamoDb', 'dynamodb');
  }
}
