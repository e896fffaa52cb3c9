// The one way this project builds a Lambda function: Node 22 on Graviton, an ESM bundle made by the
// local esbuild, its own log group with retention, X-Ray tracing, and a role that can write to that
// log group only (instead of the AWSLambdaBasicExecutionRole managed policy, which covers every
// log group in the account).
import { fileURLToPath } from 'node:url';
import type { Duration } from 'aws-cdk-lib';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';

/** The repository root: entries, package.json and the lock file are resolved from here, not from the cwd. */
export const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));

// esbuild's ESM output cannot call `require`, which bundled CommonJS dependencies still do for Node
// built-ins; defining it from import.meta.url makes those calls work. The alias avoids clashing with
// a `createRequire` import inside the bundle.
const REQUIRE_SHIM =
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
}

export function createAgentFunction(scope: Construct, id: string, props: AgentFunctionProps): NodejsFunction {
  const logGroup = new LogGroup(scope, `${id}Logs`, { retention: props.logRetention });
  const role = new Role(scope, `${id}Role`, {
    assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
    description: `Execution role of the ${id} function`,
  });
  logGroup.grantWrite(role);

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
    environment: { NODE_OPTIONS: '--enable-source-maps', ...props.environment },
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
      bundleAwsSDK: true,
    },
  });
}

