// A custom resource provider whose handler is one of this project's TypeScript modules (infra/custom-resources/),
// built like every other function (createAgentFunction), on CDK's Provider framework. The framework's own
// function gets a role that may only invoke the handler and write its log group (instead of
// AWSLambdaBasicExecutionRole), and a log group with the deployment's retention.
import type { Duration } from 'aws-cdk-lib';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Provider } from 'aws-cdk-lib/custom-resources';
import type { Construct } from 'constructs';
import type { HandlerEnvironment } from '../../shared/env.ts';
import { createAgentFunction } from './agent-function.ts';

export interface DeployTimeProviderProps {
  /** The handler module, relative to the repository root; it exports `handler` (an onEvent handler). */
  readonly entry: string;
  readonly description: string;
  /** How long one event may take (the framework waits for the handler at most 15 minutes). */
  readonly timeout: Duration;
  readonly environment?: HandlerEnvironment;
  readonly logRetention: RetentionDays;
}

export interface DeployTimeProvider {
  readonly provider: Provider;
  /** The project's handler: grant it what the custom resource does. */
  readonly handler: NodejsFunction;
  /** The Provider framework's onEvent function's role: lambda:InvokeFunction and GetFunction on the handler, and its logs. */
  readonly frameworkRole: Role;
}

export function createDeployTimeProvider(scope: Construct, id: string, props: DeployTimeProviderProps): DeployTimeProvider {
  const handler = createAgentFunction(scope, `${id}Handler`, {
    entry: props.entry,
    description: props.description,
    timeout: props.timeout,
    environment: props.environment,
    logRetention: props.logRetention,
  });
  const frameworkRole = new Role(scope, `${id}FrameworkRole`, {
    assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
    description: `Provider framework of the ${id} custom resource: invokes its handler, writes its own logs`,
  });
  const frameworkLogs = new LogGroup(scope, `${id}FrameworkLogs`, { retention: props.logRetention });
  frameworkLogs.grantWrite(frameworkRole);
  const provider = new Provider(scope, `${id}Provider`, {
    onEventHandler: handler,
    frameworkOnEventRole: frameworkRole,
    logGroup: frameworkLogs,
  });
  return { provider, handler, frameworkRole };
}
