// A Lambda stand-in for the control plane calls `npm run doctor` makes: GetFunctionConfiguration of
// a function of the template (its role and environment variables, the local values where the local
// Lambda runs it with them) and GetAccountSettings (the account's concurrency, from the Service
// Quotas stand-in's "Concurrent executions"). Invocations stay the local Lambda's (lambda/runtime.ts).
// Like the other stand-ins the operator's tools call (sts.ts, cloudformation.ts), it answers the operator.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError, sendJson } from './aws-protocol.ts';
import { listenLocally, type LocalHttpServer } from './http-server.ts';
import type { LocalLambda } from './lambda/runtime.ts';
import { localPhysicalName, resolveCloudFormation } from './resources.ts';
import { localFunctionArn } from './template.ts';
import { resourcesOfType, type Template } from './cloud/resources.ts';

export interface LambdaApiInputs {
  template: () => Template;
  lambda: Pick<LocalLambda, 'configuration'>;
  /** The account's concurrent executions quota. */
  concurrency: () => number;
}

const notFound = (name: string) => new ApiError('ResourceNotFoundException', `Function not found: ${localFunctionArn(name)}`, 404);

function functionConfiguration(inputs: LambdaApiInputs, reference: string): Record<string, unknown> {
  const template = inputs.template();
  // A function is named by its name or its ARN (qualified or not).
  const name = /^arn:[^:]+:lambda:[^:]*:[^:]*:function:([^:]+)/.exec(reference)?.[1] ?? reference;
  const found = resourcesOfType(template, 'AWS::Lambda::Function').find(([id]) => localPhysicalName(template, id) === name);
  if (!found) throw notFound(name);
  const [, resource] = found;
  const properties = resource.Properties ?? {};
  const resolve = (value: unknown) => resolveCloudFormation(template, value);
  const configured = (resolve(properties.Environment?.Variables ?? {}) ?? {}) as Record<string, unknown>;
  const variables =
    inputs.lambda.configuration(name)?.variables ?? Object.fromEntries(Object.entries(configured).map(([k, v]) => [k, String(v)]));
  return {
    FunctionName: name,
    FunctionArn: localFunctionArn(name),
    Runtime: properties.Runtime,
    Role: String(resolve(properties.Role)),
    Handler: properties.Handler,
    Timeout: properties.Timeout ?? 3,
    MemorySize: properties.MemorySize ?? 128,
    Architectures: properties.Architectures ?? ['x86_64'],
    Environment: { Variables: variables },
    Version: '$LATEST',
    State: 'Active',
    LastUpdateStatus: 'Successful',
    PackageType: 'Zip',
  };
}

function accountSettings(inputs: LambdaApiInputs): Record<string, unknown> {
  const template = inputs.template();
  const functions = resourcesOfType(template, 'AWS::Lambda::Function');
  const reserved = functions.reduce((sum, [, r]) => sum + Number(r.Properties?.ReservedConcurrentExecutions ?? 0), 0);
  const concurrency = inputs.concurrency();
  return {
    AccountLimit: {
      TotalCodeSize: 80_530_636_800,
      CodeSizeUnzipped: 262_144_000,
      CodeSizeZipped: 52_428_800,
      ConcurrentExecutions: concurrency,
      UnreservedConcurrentExecutions: concurrency - reserved,
    },
    AccountUsage: { TotalCodeSize: 0, FunctionCount: functions.length },
  };
}

function route(inputs: LambdaApiInputs, request: IncomingMessage): Record<string, unknown> {
  const path = new URL(request.url ?? '/', 'http://localhost').pathname;
  if (request.method === 'GET' && path === '/2016-08-19/account-settings') return accountSettings(inputs);
  const configuration = /^\/2015-03-31\/functions\/([^/]+)\/configuration$/.exec(path);
  if (request.method === 'GET' && configuration) return functionConfiguration(inputs, decodeURIComponent(configuration[1]!));
  throw new ApiError('UnknownOperationException', `No operation for ${request.method} ${path}`, 404);
}

export function startLocalLambdaApi(inputs: LambdaApiInputs): Promise<LocalHttpServer> {
  return listenLocally((request: IncomingMessage, response: ServerResponse) => {
    request.resume();
    try {
      sendJson(response, 200, route(inputs, request), 'application/json');
    } catch (error) {
      const apiError = error instanceof ApiError ? error : new ApiError('ServiceException', String(error), 500);
      sendJson(response, apiError.statusCode, { Type: 'User', Message: apiError.message }, 'application/json', apiError.type);
    }
  });
}
