// The one way this project builds a Lambda function: Node 22 on Graviton, an ESM bundle made by the
// local esbuild, its own log group with retention, X-Ray tracing, and a role that can write to that
// log group only (instead of the AWSLambdaBasicExecutionRole managed policy, which covers every
// log group in the account). A function placed in a VPC gets the network-interface permissions Lambda
// needs, scoped to its subnets and security groups (instead of AWSLambdaVPCAccessExecutionRole).
import { fileURLToPath } from 'node:url';
import { type Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import type { ISecurityGroup, IVpc, SubnetSelection } from 'aws-cdk-lib/aws-ec2';
import { Effect, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';

/** The repository root: entries, package.json and the lock file are resolved from here, not from the cwd. */
export const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));

// esbuild's ESM output cannot call `require`, which bundled CommonJS dependencies still do for Node
// built-ins; defining it from import.meta.url makes those calls work. The alias avoids clashing with
// a `createRequire` import inside the bundle.
export const REQUIRE_SHIM =
  "import { createRequire as __threadworkCreateRequire } from 'node:module';" +
  'const require = __threadworkCreateRequire(import.meta.url);';

export interface AgentFunctionProps {
  /** Path of the handler module relative to the repository root; it must export `handler`. */
  readonly entry: string;
  readonly description: string;
  readonly timeout: Duration;
  readonly memorySize?: number;
  readonly environment?: Record<string, string>;
  readonly logRetention: RetentionDays;
  /** Run the function inside a VPC (it then reaches only what the subnets' routes and its security groups allow). */
  readonly vpc?: AgentFunctionVpc;
  /**
   * Keep every published version when a deploy replaces it: a state machine execution invokes the
   * version it started with until it ends, so a version must outlive the deploy that retires it.
   */
  readonly retainVersions?: boolean;
}

export interface AgentFunctionVpc {
  readonly vpc: IVpc;
  readonly subnets: SubnetSelection;
  readonly securityGroups: ISecurityGroup[];
}

export function createAgentFunction(scope: Construct, id: string, props: AgentFunctionProps): NodejsFunction {
  const logGroup = new LogGroup(scope, `${id}Logs`, { retention: props.logRetention });
  const role = new Role(scope, `${id}Role`, {
    assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
    description: `Execution role of the ${id} function`,
  });
  logGroup.grantWrite(role);
  if (props.vpc) grantNetworkInterfaces(role, props.vpc);

  return new NodejsFunction(scope, id, {
    entry: `${PROJECT_ROOT}${props.entry}`,
    handler: 'handler',
    projectRoot: PROJECT_ROOT,
    depsLockFilePath: `${PROJECT_ROOT}package-lock.json`,
    description: props.description,
    runtime: Runtime.NODEJS_22_X,
    architecture: Architecture.ARM_64,
    timeout: props.timeout,
    memorySize: props.memorySize ?? 256,
    role,
    logGroup,
    tracing: Tracing.ACTIVE,
    ...(props.retainVersions && { currentVersionOptions: { removalPolicy: RemovalPolicy.RETAIN } }),
    environment: { NODE_OPTIONS: '--enable-source-maps', ...props.environment },
    ...(props.vpc && {
      vpc: props.vpc.vpc,
      vpcSubnets: props.vpc.subnets,
      securityGroups: props.vpc.securityGroups,
    }),
    bundling: {
      format: OutputFormat.ESM,
      target: 'node22',
      mainFields: ['module', 'main'],
      minify: true,
      sourceMap: true,
      // Stack traces map to file:line without shipping the sources themselves.
      sourcesContent: false,
      banner: REQUIRE_SHIM,
      // Bundle the AWS SDK too: the runtime's copy lags behind the version this code is tested with
      // (ConverseStream cache points need a recent client), and a pinned bundle is reproducible.
      // Each handler imports only the clients it calls (shared/aws/), so a bundle carries only
      // those: `npm run bench` prints each bundle's size and make-up, test/infra asserts its clients.
      bundleAwsSDK: true,
    },
  });
}

/**
 * What Lambda does with the execution role to attach a function to a VPC: create its network
 * interfaces in the function's subnets with the function's security groups, and describe, (un)assign
 * addresses to and delete network interfaces. The Describe actions have no resource-level permissions.
 */
function grantNetworkInterfaces(role: Role, placement: AgentFunctionVpc): void {
  const stack = Stack.of(role);
  const ec2Arn = (resource: string, name: string) => stack.formatArn({ service: 'ec2', resource, resourceName: name });
  const networkInterfaces = ec2Arn('network-interface', '*');
  role.addToPolicy(
    new PolicyStatement({
      effect: Effect.ALLOW,
      actions: ['ec2:CreateNetworkInterface'],
      resources: [
        networkInterfaces,
        ...placement.vpc.selectSubnets(placement.subnets).subnetIds.map((subnet) => ec2Arn('subnet', subnet)),
        ...placement.securityGroups.map((group) => ec2Arn('security-group', group.securityGroupId)),
      ],
    }),
  );
  role.addToPolicy(
    new PolicyStatement({
      effect: Effect.ALLOW,
      actions: ['ec2:DeleteNetworkInterface', 'ec2:AssignPrivateIpAddresses', 'ec2:UnassignPrivateIpAddresses'],
      resources: [networkInterfaces],
    }),
  );
  role.addToPolicy(
    new PolicyStatement({
      effect: Effect.ALLOW,
      actions: ['ec2:DescribeNetworkInterfaces', 'ec2:DescribeSubnets'],
      resources: ['*'],
    }),
  );
}
