// The restJson1 services: EventBridge Scheduler (/schedules/{Name}, /schedule-groups/{Name}),
// Bedrock Runtime (/model/{modelId}/converse…) and Lambda (/…/functions/{FunctionName}/…: Invoke,
// ListVersionsByFunction, DeleteFunction).
import { modelInvocationAuthorizations } from '../../../../shared/model/ids.ts';
import { localArn } from '../resources.ts';
import { LOCAL_ACCOUNT, LOCAL_PARTITION, LOCAL_REGION, localFunctionArn } from '../template.ts';
import { type Authorization, type AwsHttpRequest, UnknownOperationError, jsonBody, parseUrl } from './request-types.ts';
import { onAnyResource } from './service-reference.ts';

const SCHEDULE_ACTIONS: Record<string, string> = {
  POST: 'CreateSchedule',
  PUT: 'UpdateSchedule',
  GET: 'GetSchedule',
  DELETE: 'DeleteSchedule',
};
const GROUP_ACTIONS: Record<string, string> = { POST: 'CreateScheduleGroup', GET: 'GetScheduleGroup', DELETE: 'DeleteScheduleGroup' };
const TAG_ACTIONS: Record<string, string> = { POST: 'TagResource', DELETE: 'UntagResource', GET: 'ListTagsForResource' };
// GET of a collection: authorized against "*" only, as the reference says.
const LIST_OPERATIONS: Record<string, string> = { schedules: 'ListSchedules', 'schedule-groups': 'ListScheduleGroups' };

export function schedulerAuthorizations(request: AwsHttpRequest): Authorization[] {
  const url = parseUrl(request);
  const [collection, encodedName, ...rest] = url.pathname.split('/').filter(Boolean);
  const name = encodedName === undefined ? undefined : decodeURIComponent(encodedName);
  const method = request.method.toUpperCase();
  const operation = `${method} ${url.pathname}`;
  if (rest.length > 0) throw new UnknownOperationError('scheduler', operation);
  if (name === undefined) {
    const list = method === 'GET' ? LIST_OPERATIONS[String(collection)] : undefined;
    const any = list === undefined ? undefined : onAnyResource('scheduler', list);
    if (any) return [any];
    throw new UnknownOperationError('scheduler', operation);
  }
  if (collection === 'schedules' && SCHEDULE_ACTIONS[method]) {
    const writes = method === 'POST' || method === 'PUT';
    // Create and Update carry the group in the body, Get and Delete in the query; 'default' otherwise.
    const body = writes ? jsonBody(request) : {};
    const group = String((writes ? body.GroupName : url.searchParams.get('groupName')) ?? 'default');
    const authorizations: Authorization[] = [
      { action: `scheduler:${SCHEDULE_ACTIONS[method]}`, resource: localArn('scheduler', `schedule/${group}/${name}`) },
    ];
    // The schedule's target role is passed to EventBridge Scheduler, which assumes it to invoke the target.
    const role = (body.Target as { RoleArn?: unknown } | undefined)?.RoleArn;
    if (typeof role === 'string') {
      authorizations.push({ action: 'iam:PassRole', resource: role, context: { 'iam:PassedToService': 'scheduler.amazonaws.com' } });
    }
    return authorizations;
  }
  if (collection === 'schedule-groups' && GROUP_ACTIONS[method]) {
    return [{ action: `scheduler:${GROUP_ACTIONS[method]}`, resource: localArn('scheduler', `schedule-group/${name}`) }];
  }
  if (collection === 'tags' && TAG_ACTIONS[method]) return [{ action: `scheduler:${TAG_ACTIONS[method]}`, resource: name }];
  throw new UnknownOperationError('scheduler', operation);
}

const BEDROCK_ACTIONS: Record<string, string> = {
  converse: 'InvokeModel',
  invoke: 'InvokeModel',
  'converse-stream': 'InvokeModelWithResponseStream',
  'invoke-with-response-stream': 'InvokeModelWithResponseStream',
};

/** A model invocation's authorizations in the local Region and account (shared/model/ids.ts). */
export function modelAuthorizations(action: string, modelId: string): Authorization[] {
  return modelInvocationAuthorizations(action, modelId, { partition: LOCAL_PARTITION, region: LOCAL_REGION, account: LOCAL_ACCOUNT });
}

export function bedrockAuthorizations(request: AwsHttpRequest): Authorization[] {
  const url = parseUrl(request);
  const match = /^\/model\/([^/]+)\/([a-z-]+)$/.exec(url.pathname);
  const operation = match?.[2] === undefined ? undefined : BEDROCK_ACTIONS[match[2]];
  if (!match?.[1] || !operation || request.method.toUpperCase() !== 'POST') {
    throw new UnknownOperationError('bedrock', `${request.method} ${url.pathname}`);
  }
  return modelAuthorizations(`bedrock:${operation}`, decodeURIComponent(match[1]));
}

// FunctionName: a name, name:qualifier, an ARN (qualified or not) or a partial ARN
// (<account>:function:<name>); a Qualifier parameter qualifies it too.
function functionArn(functionName: string, qualifier: string | null): string {
  const full = /^(arn:[^:]+:lambda:[^:]*:[^:]*:function:[^:]+)(?::([^:]+))?$/.exec(functionName);
  const partial = /^(\d{12}):function:([^:]+)(?::([^:]+))?$/.exec(functionName);
  const plain = /^([^:]+)(?::([^:]+))?$/.exec(functionName);
  const [base, ownQualifier] = full
    ? [full[1], full[2]]
    : partial
      ? [localArn('lambda', `function:${partial[2]}`, LOCAL_REGION, partial[1]), partial[3]]
      : plain
        ? [localFunctionArn(String(plain[1])), plain[2]]
        : [];
  if (!base) throw new Error(`Not a Lambda function name: ${functionName}`);
  const version = qualifier ?? ownQualifier;
  return version ? `${base}:${version}` : base;
}

// Lambda's REST paths under /<api version>/functions/{FunctionName}: method and what follows → action.
const LAMBDA_ACTIONS: Record<string, string> = {
  'POST /invocations': 'InvokeFunction',
  'POST /response-streaming-invocations': 'InvokeFunction',
  'GET /versions': 'ListVersionsByFunction',
  // Without a Qualifier it deletes the function with all its versions: authorized on the function itself.
  'DELETE ': 'DeleteFunction',
};

export function lambdaAuthorizations(request: AwsHttpRequest): Authorization[] {
  const url = parseUrl(request);
  const match = /^\/\d{4}-\d{2}-\d{2}\/functions\/([^/]+)(\/[a-z-]+)?\/?$/.exec(url.pathname);
  const action = match?.[1] ? LAMBDA_ACTIONS[`${request.method.toUpperCase()} ${match[2] ?? ''}`] : undefined;
  if (!match?.[1] || !action) throw new UnknownOperationError('lambda', `${request.method} ${url.pathname}`);
  // A version list is the function's: any qualifier in the name is not part of what is authorized.
  const qualifier = action === 'ListVersionsByFunction' ? null : url.searchParams.get('Qualifier');
  const resource = functionArn(decodeURIComponent(match[1]), qualifier);
  return [
    {
      action: `lambda:${action}`,
      resource: action === 'ListVersionsByFunction' ? resource.replace(/(:function:[^:]+):[^:]+$/, '$1') : resource,
    },
  ];
}
