// Maps an HTTP request made by an AWS SDK v3 client to the IAM authorizations AWS checks for it.
// An operation nobody mapped is an error, never an allowed request: a missing mapping is found.
import { dynamoDbAuthorizations } from './map-dynamodb.ts';
import { ecsAuthorizations } from './map-ecs.ts';
import { eventBridgeAuthorizations, kmsAuthorizations, secretsManagerAuthorizations, stepFunctionsAuthorizations } from './map-json.ts';
import { bedrockAuthorizations, lambdaAuthorizations, schedulerAuthorizations } from './map-rest.ts';
import { s3Authorizations } from './map-s3.ts';
import { sqsAuthorizations } from './map-sqs.ts';
import { type Authorization, type AwsHttpRequest, type StackFacts, UnknownOperationError, header, parseUrl } from './request-types.ts';

export type { Authorization, AwsHttpRequest, StackFacts } from './request-types.ts';
export { UnknownOperationError } from './request-types.ts';

const MAPPERS: Record<string, (request: AwsHttpRequest, facts: StackFacts) => Authorization[]> = {
  dynamodb: dynamoDbAuthorizations,
  s3: s3Authorizations,
  sqs: sqsAuthorizations,
  states: stepFunctionsAuthorizations,
  ecs: ecsAuthorizations,
  scheduler: schedulerAuthorizations,
  events: eventBridgeAuthorizations,
  bedrock: bedrockAuthorizations,
  secretsmanager: secretsManagerAuthorizations,
  kms: kmsAuthorizations,
  lambda: lambdaAuthorizations,
};

export function authorizationsFor(request: AwsHttpRequest, facts: StackFacts = {}): Authorization[] {
  const mapper = MAPPERS[request.service];
  if (!mapper) throw new UnknownOperationError(request.service, `${request.method} ${request.url}`);
  return mapper(request, facts);
}

/**
 * Who signed the request and for which service: the SigV4 Authorization header's credential scope
 * (Credential=<key>/<date>/<region>/<service>/aws4_request), or a presigned URL's X-Amz-Credential.
 */
export function signingOf(
  request: Pick<AwsHttpRequest, 'url' | 'headers'>,
): { accessKeyId: string; region: string; service: string } | undefined {
  const fromHeader = /Credential=([^,\s]+)/.exec(header(request, 'authorization') ?? '')?.[1];
  const credential = fromHeader ?? parseUrl(request).searchParams.get('X-Amz-Credential') ?? undefined;
  const [accessKeyId, , region, service] = credential?.split('/') ?? [];
  if (!accessKeyId || !region || !service) return undefined;
  return { accessKeyId, region, service };
}
