// The AWS query protocol (STS, CloudFormation): a form-encoded POST naming its Action, answered
// with XML, `<Action>Response` around `<Action>Result`; lists are `member` elements. An ApiError
// becomes the protocol's ErrorResponse, which the SDK throws as the error of that code.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { ApiError } from './aws-protocol.ts';
import { readRequestBytes } from './http-server.ts';

export type AwsQueryOperation = (params: URLSearchParams) => Record<string, unknown> | Promise<Record<string, unknown>>;

const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

function toXml(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map((item) => `<member>${toXml(item)}</member>`).join('');
  if (typeof value === 'object') {
    return Object.entries(value)
      .filter(([, item]) => item !== undefined)
      .map(([key, item]) => `<${key}>${toXml(item)}</${key}>`)
      .join('');
  }
  return escape(String(value));
}

/** A list parameter of the query protocol: `<name>.member.1`, `<name>.member.2`, ... in order. */
export function queryList(params: URLSearchParams, name: string): string[] {
  const prefix = `${name}.member.`;
  return [...params.entries()]
    .filter(([key]) => key.startsWith(prefix) && /^\d+$/.test(key.slice(prefix.length)))
    .sort(([a], [b]) => Number(a.slice(prefix.length)) - Number(b.slice(prefix.length)))
    .map(([, value]) => value);
}

export async function serveAwsQuery(
  options: { namespace: string },
  operations: Record<string, AwsQueryOperation>,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const requestId = randomUUID();
  const send = (status: number, xml: string) => {
    response.writeHead(status, { 'content-type': 'text/xml', 'content-length': Buffer.byteLength(xml), 'x-amzn-requestid': requestId });
    response.end(xml);
  };
  try {
    const params = new URLSearchParams((await readRequestBytes(request)).toString('utf8'));
    const action = params.get('Action') ?? '';
    const operation = Object.hasOwn(operations, action) ? operations[action] : undefined;
    if (request.method !== 'POST' || !operation) throw new ApiError('InvalidAction', `Could not find operation ${action}`);
    const result = toXml(await operation(params));
    send(
      200,
      `<${action}Response xmlns="${options.namespace}"><${action}Result>${result}</${action}Result>` +
        `<ResponseMetadata><RequestId>${requestId}</RequestId></ResponseMetadata></${action}Response>`,
    );
  } catch (error) {
    const apiError = error instanceof ApiError ? error : new ApiError('InternalFailure', String(error), 500);
    const type = apiError.statusCode >= 500 ? 'Receiver' : 'Sender';
    send(
      apiError.statusCode,
      `<ErrorResponse xmlns="${options.namespace}"><Error><Type>${type}</Type><Code>${escape(apiError.type)}</Code>` +
        `<Message>${escape(apiError.message)}</Message></Error><RequestId>${requestId}</RequestId></ErrorResponse>`,
    );
  }
}
