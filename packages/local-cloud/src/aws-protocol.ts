// What every local AWS stand-in needs to speak the AWS JSON protocols (awsJson1.0/1.1 with
// X-Amz-Target, and restJson1): read a request, parse its JSON body, answer in AWS's shape with
// an error type the SDK recognises by name, and page listings.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { readRequestBytes } from './http-server.ts';

/** An API error as AWS returns it: a type the SDK maps to an exception class, and a status. */
export class ApiError extends Error {
  constructor(
    readonly type: string,
    message: string,
    readonly statusCode = 400,
  ) {
    super(message);
  }
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

async function readBody(request: IncomingMessage): Promise<string> {
  return (await readRequestBytes(request)).toString('utf8');
}

/** A request body that must be a JSON object (empty counts as {}). */
function parseRequestBody(body: string): Record<string, unknown> {
  if (body.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(body);
    if (isPlainObject(parsed)) return parsed;
  } catch {
    // fall through
  }
  throw new ApiError('SerializationException', 'The request body is not a JSON object');
}

/** `application/x-amz-json-1.0` (Step Functions), `-1.1` (ECS, EventBridge), or `application/json` (REST). */
export function sendJson(response: ServerResponse, statusCode: number, body: unknown, contentType: string, errorType?: string): void {
  const text = JSON.stringify(body);
  response.writeHead(statusCode, {
    'Content-Type': contentType,
    'Content-Length': Buffer.byteLength(text),
    'x-amzn-RequestId': randomUUID(),
    ...(errorType ? { 'x-amzn-ErrorType': errorType } : {}),
  });
  response.end(text);
}

export type AwsJsonOperation = (input: Record<string, unknown>) => unknown;

/**
 * Serves one AWS JSON-protocol request (`POST /` with `X-Amz-Target: <prefix>.<Operation>`): the
 * operation's result as 200, an ApiError as its status and type, anything else as a 500.
 */
export async function serveAwsJson(
  options: { service: string; targetPrefix: string; contentType: string; internalErrorType: string },
  operations: Record<string, AwsJsonOperation>,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  try {
    const body = await readBody(request);
    const target = String(request.headers['x-amz-target'] ?? '');
    const operationName = target.startsWith(options.targetPrefix) ? target.slice(options.targetPrefix.length) : '';
    const operation = Object.hasOwn(operations, operationName) ? operations[operationName] : undefined;
    if (request.method !== 'POST' || !operation) {
      throw new ApiError('UnknownOperationException', `Unknown operation: '${target}'`);
    }
    sendJson(response, 200, await operation(parseRequestBody(body)), options.contentType);
  } catch (error) {
    if (error instanceof ApiError) {
      sendJson(response, error.statusCode, { __type: error.type, message: error.message }, options.contentType);
      return;
    }
    console.error(`[${options.service}] request failed:`, error);
    sendJson(response, 500, { __type: options.internalErrorType, message: String(error) }, options.contentType);
  }
}

/** A response without its undefined members: AWS leaves absent fields out. */
export function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, item]) => item !== undefined)) as T;
}

/** AWS JSON protocols send timestamps as epoch seconds. */
export function epochSeconds(date: Date): number {
  return date.getTime() / 1000;
}

/**
 * One page of a listing and the opaque token for the next one (its offset), as List operations
 * page. A token this did not make is `invalidToken()`.
 */
export function offsetPage<T>(
  items: readonly T[],
  maxResults: number,
  nextToken: unknown,
  invalidToken: () => Error,
): { page: T[]; nextToken: string | undefined } {
  let offset = 0;
  if (nextToken !== undefined && nextToken !== null) {
    offset = Number(Buffer.from(String(nextToken), 'base64').toString('utf8'));
    if (!Number.isInteger(offset) || offset < 0) throw invalidToken();
  }
  const end = offset + maxResults;
  return {
    page: items.slice(offset, end),
    nextToken: end < items.length ? Buffer.from(String(end), 'utf8').toString('base64') : undefined,
  };
}

export type RestJsonRoute = (input: { name?: string; query: URLSearchParams; body: Record<string, unknown> }) => unknown;

/**
 * Serves one restJson1 request: the operation is the HTTP method and path, routed by keys such as
 * `POST /schedules/{Name}` (one path parameter at most); errors carry an x-amzn-ErrorType header
 * and a {"Message"} body.
 */
export async function serveRestJson(
  service: string,
  routes: Record<string, RestJsonRoute>,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  try {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const [collection = '', name, ...rest] = url.pathname.split('/').filter((segment) => segment !== '');
    const routeKey = name === undefined ? `${request.method} /${collection}` : `${request.method} /${collection}/{Name}`;
    const route = rest.length === 0 && Object.hasOwn(routes, routeKey) ? routes[routeKey] : undefined;
    const body = await readBody(request);
    if (!route) throw new ApiError('UnknownOperationException', `No operation for ${request.method} ${url.pathname}`, 404);
    const input = {
      name: name === undefined ? undefined : decodeURIComponent(name),
      query: url.searchParams,
      body: parseRequestBody(body),
    };
    sendJson(response, 200, await route(input), 'application/json');
  } catch (error) {
    if (error instanceof ApiError) {
      sendJson(response, error.statusCode, { Message: error.message }, 'application/json', error.type);
      return;
    }
    console.error(`[${service}] request failed:`, error);
    sendJson(response, 500, { Message: String(error) }, 'application/json', 'InternalServerException');
  }
}
