// An HTTP API (payload format 2.0) stand-in: builds the event API Gateway would send and calls the
// real handler of the route, as declared in the synthesized template.
import type { IncomingMessage } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { listenLocally, type LocalHttpServer } from './http-server.ts';

export type HttpHandler = (event: APIGatewayProxyEventV2) => Promise<APIGatewayProxyStructuredResultV2>;

export type ApiGatewayStandIn = LocalHttpServer;

/** API Gateway's own limit on a request payload. */
const PAYLOAD_LIMIT_BYTES = 10 * 1024 * 1024;

async function readBody(req: IncomingMessage): Promise<Buffer | 'too-large'> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > PAYLOAD_LIMIT_BYTES) return 'too-large';
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function isText(contentType: string | undefined): boolean {
  return !contentType || /json|text|x-www-form-urlencoded|xml/.test(contentType);
}

export function toApiEvent(req: IncomingMessage, body: Buffer, routeKey: string): APIGatewayProxyEventV2 {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(',') : value;
  }
  // API Gateway says how the caller reached it; here, plain HTTP on the loopback.
  headers['x-forwarded-proto'] ??= 'http';
  const text = isText(headers['content-type']);
  const now = new Date();
  return {
    version: '2.0',
    routeKey,
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    headers,
    queryStringParameters: url.search ? Object.fromEntries(url.searchParams) : undefined,
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: 'local',
      http: {
        method: req.method ?? 'GET',
        path: url.pathname,
        protocol: 'HTTP/1.1',
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey,
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    body: body.length ? (text ? body.toString('utf8') : body.toString('base64')) : undefined,
    isBase64Encoded: body.length > 0 && !text,
  };
}

export async function startApiGateway(options: {
  port: number;
  host?: string;
  routes: Record<string, HttpHandler>;
  onError?: (error: unknown) => void;
}): Promise<ApiGatewayStandIn> {
  return listenLocally(async (req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const routeKey = `${req.method} ${path}`;
    const handler = options.routes[routeKey];
    if (!handler) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ message: 'Not Found' }));
      return;
    }
    const body = await readBody(req);
    if (body === 'too-large') {
      res.writeHead(413, { 'content-type': 'application/json' }).end(JSON.stringify({ message: 'Request Entity Too Large' }));
      return;
    }
    try {
      const result = await handler(toApiEvent(req, body, routeKey));
      res.writeHead(result.statusCode ?? 200, result.headers as Record<string, string>);
      res.end(result.isBase64Encoded && result.body ? Buffer.from(result.body, 'base64') : result.body);
    } catch (error) {
      options.onError?.(error);
      // What API Gateway answers when the integration fails.
      res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ message: 'Internal Server Error' }));
    }
  }, options);
}
