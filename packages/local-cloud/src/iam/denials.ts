// The response AWS sends when IAM denies a request, in each service's protocol, so the SDK throws
// the same error it throws on AWS (AccessDeniedException, or AccessDenied for S3 and SQS).
import { randomUUID } from 'node:crypto';
import type { Decision } from './evaluate.ts';

export interface DeniedResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

function json(status: number, contentType: string, body: object, headers: Record<string, string> = {}): DeniedResponse {
  const text = JSON.stringify(body);
  return {
    status,
    headers: {
      'Content-Type': contentType,
      'Content-Length': String(Buffer.byteLength(text)),
      'x-amzn-RequestId': randomUUID(),
      ...headers,
    },
    body: text,
  };
}

function xmlEscape(text: string): string {
  return text.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** For a HEAD request send the status and headers only (Node's http server drops a HEAD body itself). */
export function deniedResponse(service: string, decision: Pick<Decision, 'message'>): DeniedResponse {
  const message = decision.message;
  switch (service) {
    case 'dynamodb':
      return json(400, 'application/x-amz-json-1.0', { __type: 'com.amazon.coral.service#AccessDeniedException', message });
    case 's3': {
      const requestId = randomUUID().replace(/-/g, '').slice(0, 16).toUpperCase();
      const body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code><Message>${xmlEscape(message)}</Message><RequestId>${requestId}</RequestId></Error>`;
      return {
        status: 403,
        headers: { 'Content-Type': 'application/xml', 'Content-Length': String(Buffer.byteLength(body)), 'x-amz-request-id': requestId },
        body,
      };
    }
    case 'sqs':
      // SQS's JSON protocol is query-compatible: the SDK names the error from x-amzn-query-error.
      return json(
        403,
        'application/x-amz-json-1.0',
        { __type: 'com.amazon.coral.service#AccessDeniedException', message },
        { 'x-amzn-query-error': 'AccessDenied;Sender' },
      );
    case 'states':
      return json(400, 'application/x-amz-json-1.0', { __type: 'AccessDeniedException', message });
    case 'ecs':
    case 'events':
    case 'secretsmanager':
    case 'kms':
      return json(400, 'application/x-amz-json-1.1', { __type: 'AccessDeniedException', message });
    case 'scheduler':
    case 'lambda':
      return json(403, 'application/json', { Message: message }, { 'x-amzn-ErrorType': 'AccessDeniedException' });
    case 'bedrock':
      return json(403, 'application/json', { message }, { 'x-amzn-ErrorType': 'AccessDeniedException' });
    default:
      throw new Error(`No access-denied response for service ${service}`);
  }
}
