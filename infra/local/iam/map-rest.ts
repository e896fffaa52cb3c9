// The restJson1 services: EventBridge Scheduler (/schedules/{Name}, /schedule-groups/{Name}),
// Bedrock Runtime (/model/{modelId}/converse…) and Lambda (/…/functions/{FunctionName}/…: Invoke,
// ListVersionsByFunction, DeleteFunction).
import { parseModelId } from '../../constructs/bedrock-access.ts';
import { localArn } from '../resources.ts';
import { LOCAL_PARTITION, LOCAL_REGION, localFunctionArn } from '../template.ts';
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

// Where a geographic cross-Region profile may route a request (a representative set per
// geography): the foundation model must be allowed in each, as any may serve the request.
const GEOGRAPHY_REGIONS: Record<string, string[]> = {
  us: ['us-east-1', 'us-east-2', 'us-west-2'],
  'us-gov': ['us-gov-east-1', 'us-gov-west-1'],
  eu: ['eu-central-1', 'eu-west-1', 'eu-west-3', 'eu-north-1'],
  apac: ['ap-northeast-1', 'ap-south-1', 'ap-southeast-1', 'ap-southeast-2'],
  jp: ['ap-northeast-1', 'ap-northeast-3'],
  au: ['ap-southeast-2', 'ap-southeast-4'],
  ca: ['ca-central-1', 'ca-west-1'],
};

function foundationModelArn(modelId: string, region: string): string {
  return `arn:${LOCAL_PARTITION}:bedrock:${region}::foundation-model/${modelId}`;
}

/**
 * A model invocation through an inference profile is authorized on the profile (in the caller's
 * Region), then on the foundation model where it runs, with bedrock:InferenceProfileArn naming the
 * profile: for a geographic profile in the source Region and each Region of its geography; for a
 * global one in the source Region and Region-less (aws:RequestedRegion "unspecified").
 */
export function modelAuthorizations(action: string, modelId: string): Authorization[] {
  const profileArnMatch = /^arn:[^:]+:bedrock:[^:]*:[^:]*:inference-profile\/(.+)$/.exec(modelId);
  const profileId = profileArnMatch?.[1] ?? (modelId.startsWith('arn:') ? undefined : modelId);
  const parsed = profileId === undefined ? undefined : parseModelId(profileId);
  if (!parsed?.profileScope) {
    return [{ action, resource: modelId.startsWith('arn:') ? modelId : foundationModelArn(modelId, LOCAL_REGION) }];
  }
  const profileArn = profileArnMatch ? modelId : localArn('bedrock', `inference-profile/${modelId}`);
  const throughProfile = (resource: string, region: string): Authorization => ({
    action,
    resource,
    context: { 'bedrock:InferenceProfileArn': profileArn, 'aws:RequestedRegion': region },
  });
  const model = parsed.foundationModelId;
  const destinations =
    parsed.profileScope === 'global'
      ? [throughProfile(foundationModelArn(model, ''), 'unspecified')]
      : (GEOGRAPHY_REGIONS[parsed.profileScope] ?? []).map((region) => throughProfile(foundationModelArn(model, region), region));
  return [{ action, resource: profileArn }, throughProfile(foundationModelArn(model, LOCAL_REGION), LOCAL_REGION), ...destinations];
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
