// Lambda functions that CDK and libraries create for their custom resources (the bucket notifications
// handler, the VPC's default-security-group restriction, deploy-time-build's handler) log to a group
// Lambda creates on first use, which never expires. These helpers give such a function a log group with
// the deployment's retention and, where its role is an ordinary iam.Role, narrow the role to that group.
import type { CfnResource } from 'aws-cdk-lib';
import { CfnRole, type Role } from 'aws-cdk-lib/aws-iam';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';

/** A log group for a custom resource function (its CloudFormation resource), which the function logs to. */
export function giveLogGroup(scope: Construct, id: string, fn: CfnResource, retention: RetentionDays): LogGroup {
  if (fn.cfnResourceType !== 'AWS::Lambda::Function') throw new Error(`${fn.node.path} is not a Lambda function`);
  const logGroup = new LogGroup(scope, id, { retention });
  fn.addPropertyOverride('LoggingConfig', { LogGroup: logGroup.logGroupName });
  return logGroup;
}

/**
 * The role may write to this log group only: the managed policies the creator attached (there only for
 * logging: AWSLambdaBasicExecutionRole) are removed, and the role's own statements are kept.
 */
export function writeLogsOnlyTo(role: Role, logGroup: LogGroup): void {
  const cfnRole = role.node.defaultChild;
  if (!(cfnRole instanceof CfnRole)) throw new Error(`${role.node.path} has no CfnRole`);
  cfnRole.managedPolicyArns = undefined;
  logGroup.grantWrite(role);
}
