// The one way this project builds a Lambda function: Node 22 on Graviton, an ESM bundle made by the
// local esbuild (importing the AWS SDK the runtime provides unless the deployment says bundleAwsSdk),
// its own log group with retention, X-Ray tracing, and a role that can write to that
// log group only (instead of the AWSLambdaBasicExecutionRole managed policy, which covers every
// log group in the account). A function placed in a VPC gets the network-interface permissions Lambda
// needs, scoped to its subnets and security groups (instead of AWSLambdaVPCAccessExecutionRole).
import { type Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import type { ISecurityGroup, IVpc, SubnetSelection } from 'aws-cdk-lib/aws-ec2';
import { Effect, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { PROJECT_ROOT, type FunctionRole } from '../function-entries.ts';
import { readBundleAwsSdk } from '../settings.ts';
import type { HandlerEnvironment } from '../../shared/env.ts';
import { webhookOfRole } from '../../shared/platforms/descriptors.ts';

// esbuild's ESM output cannot call `require`, which bundled CommonJS dependencies still do for Node
// built-ins; defining it from import.meta.url makes those calls work. The alias avoids clashing with
// a `createRequire` import inside the bundle.
export const REQUIRE_SHIM =
  "import { createRequire as __threadworkCreateRequire } from 'node:module';" +
  'const require = __threadworkCreateRequire(import.meta.url);';

/**
 * What a bundle leaves to the Lambda runtime by default: the AWS SDK for JavaScript v3 it provides
 * (its clients and the @smithy packages under them), which ES module handlers import like any
 * package. Bundling a pinned copy instead adds 0.2 to 0.6 MB to every function.
 */
export const RUNTIME_AWS_SDK = ['@aws-sdk/*', '@smithy/*'];

/** The packages a bundle imports at run time instead of carrying them. */
export const bundleExternals = (bundleAwsSdk: boolean): string[] => (bundleAwsSdk ? [] : RUNTIME_AWS_SDK);

/**
 * Modules replaced in every bundle, by import path: the Slack adapter's socket mode client (and the
 * WebSocket package under it) becomes a module that throws if ever constructed, since Slack events
 * reach this deployment over HTTP only; and two packages swapped for lighter ones that do the same
 * for this deployment.
 */
export const BUNDLE_ALIASES: Readonly<Record<string, string>> = {
  '@slack/socket-mode': `${PROJECT_ROOT}infra/bundled/socket-mode-unused.ts`,
  // Printing only when DEBUG names it, which no function sets (infra/bundled/debug-off.cjs).
  debug: `${PROJECT_ROOT}infra/bundled/debug-off.cjs`,
  // One Symbol.toStringTag for form-data, without get-intrinsic's polyfills (infra/bundled/set-tostringtag.cjs).
  'es-set-tostringtag': `${PROJECT_ROOT}infra/bundled/set-tostringtag.cjs`,
};

/**
 * Also replaced by default: mime-db, whose only user in these bundles is form-data's guess of a
 * multipart file's media type, a call this deployment never makes (infra/bundled/mime-db-empty.ts).
 * A platform's webhook that carries an SDK needing it may keep it (its descriptor's `bundle`).
 */
export const DEFAULT_BUNDLE_ALIASES: Readonly<Record<string, string>> = {
  ...BUNDLE_ALIASES,
  'mime-db': `${PROJECT_ROOT}infra/bundled/mime-db-empty.ts`,
};

/** This project's budget for a function's index.mjs (what a cold start loads and parses). */
export const BUNDLE_BUDGET = 1024 * 1024;

/**
 * A function's budget. A platform's webhook that had to carry a heavy platform SDK would state its
 * own in its descriptor; none does (Teams is received and answered without the Teams SDK).
 */
export const bundleBudgetOf = (role: FunctionRole): number => webhookOfRole(role)?.bundle?.budgetBytes ?? BUNDLE_BUDGET;

/** The modules replaced in a function's bundle: a webhook whose platform needs mime-db keeps it. */
export const bundleAliasesOf = (role: FunctionRole): Readonly<Record<string, string>> =>
  webhookOfRole(role)?.bundle?.keepsMimeDb ? BUNDLE_ALIASES : DEFAULT_BUNDLE_ALIASES;

export interface AgentFunctionProps {
  /** Path of the handler module relative to the repository root; it must export `handler`. */
  readonly entry: string;
  readonly description: string;
  readonly timeout: Duration;
  readonly memorySize?: number;
  /** Built with handlerEnvironment (shared/env.ts), against the schema the handler reads. */
  readonly environment?: HandlerEnvironment;
  readonly logRetention: RetentionDays;
  /** Modules replaced in the bundle, by import path (default: DEFAULT_BUNDLE_ALIASES). */
  readonly bundleAliases?: Readonly<Record<string, string>>;
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
  const bundleAwsSdk = readBundleAwsSdk(scope.node);
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
    // EMF metrics (shared/observability/metrics.ts) are published under the stack's name.
    environment: { NODE_OPTIONS: '--enable-source-maps', METRICS_NAMESPACE: Stack.of(scope).stackName, ...props.environment },
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
      // The runtime's AWS SDK by default; with bundleAwsSdk, the pinned one, of which each handler
      // carries only the clients it imports (shared/aws/). `npm run bench` prints each bundle's size
      // and make-up; test/infra asserts what each bundle carries and that it fits the 1 MB budget.
      externalModules: bundleExternals(bundleAwsSdk),
      esbuildArgs: { '--alias': Object.entries(props.bundleAliases ?? DEFAULT_BUNDLE_ALIASES).map(([from, to]) => `${from}=${to}`) },
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
