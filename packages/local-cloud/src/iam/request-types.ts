// What the request mappers share: the request as the front door sees it, the authorization IAM
// checks for it, and reading the request's operation and body.

/** An HTTP request as an AWS SDK v3 client sent it. */
export interface AwsHttpRequest {
  /** The SigV4 credential scope's service name (dynamodb, s3, sqs, states, ecs, ...). */
  service: string;
  method: string;
  /** Path and query (`/bucket/key?x=y`), or an absolute URL. */
  url: string;
  headers: Record<string, string | undefined>;
  body: Buffer;
}

/** One IAM authorization: AWS checks every one a request needs, and refuses it if any is denied. */
export interface Authorization {
  action: string;
  resource: string;
  context?: Record<string, string | string[]>;
}

/** What only the template knows and a request does not say. */
export interface StackFacts {
  /** The roles a task definition passes to ECS (its task role and execution role), by task definition ARN. */
  taskDefinitionRoles?: (taskDefinitionArn: string) => string[];
  /** The ARN of a task definition family's latest ACTIVE revision: the one the stack defines now. */
  latestTaskDefinition?: (family: string) => string | undefined;
}

export class UnknownOperationError extends Error {
  constructor(service: string, operation: string) {
    super(`The local IAM does not know which authorizations ${service} ${operation} needs: map it in packages/local-cloud/src/iam/`);
    this.name = 'UnknownOperationError';
  }
}

export function header(request: Pick<AwsHttpRequest, 'headers'>, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(request.headers)) if (key.toLowerCase() === wanted) return value;
  return undefined;
}

export function parseUrl(request: Pick<AwsHttpRequest, 'url' | 'headers'>): URL {
  return new URL(request.url, `http://${header(request, 'host') ?? 'localhost'}`);
}

export type JsonObject = Record<string, unknown>;

export function jsonBody(request: AwsHttpRequest): JsonObject {
  const text = request.body.toString('utf8');
  if (text.trim() === '') return {};
  const parsed: unknown = JSON.parse(text);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new Error(`${request.service}: the request body is not a JSON object`);
  return parsed as JsonObject;
}

/** The operation of an awsJson request: `X-Amz-Target: <prefix>.<Operation>`. */
export function jsonTarget(request: AwsHttpRequest): string {
  const target = header(request, 'x-amz-target') ?? '';
  return target.slice(target.lastIndexOf('.') + 1);
}

export function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.map(String) : [];
}

export function unique<T>(items: T[]): T[] {
  return [...new Set(items)];
}
