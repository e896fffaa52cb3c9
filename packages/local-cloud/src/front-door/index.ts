// The front door of an emulator that knows nothing of IAM (DynamoDB Local, fauxqs): every request
// is authorized against the calling function's role, as AWS would (the role is found from the
// access key its clients sign with), held to the service's limits, then passed on. Every call is
// recorded with who made it, so tests and the bench can count what each function does.
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenLocally, readRequestBytes, type LocalHttpServer } from '../http-server.ts';
import { authorizationsFor, type Decision, deniedResponse, type LocalIam } from '../iam/index.ts';
import { dynamoDbViolation, sqsViolation, type LimitViolation } from './limits.ts';
import { checkPutConditions, keyedSerializer, putConditions } from './s3-conditions.ts';
import { signedBy } from './signer.ts';

export interface AwsCall {
  service: string;
  operation: string;
  /** The role's logical id, or 'operator' (the local cloud itself, a person with admin access). */
  caller: string;
  /** The request line: method and path with query, e.g. GET /bucket/key or GET /bucket?list-type=2&prefix=p/ (S3). */
  method: string;
  path: string;
  status: number;
  requestBytes: number;
  responseBytes: number;
  at: number;
  /**
   * Request arrival → response sent, in ms (high resolution): what the call costs here, IAM and
   * limits included. The functions run in worker threads, so the front door is where the bench can
   * time each call (their SDK's own signing and parsing are not in it).
   */
  durationMs: number;
  /** Of durationMs, the wait on the emulator behind the door (0 when the door answered itself). */
  upstreamMs: number;
  /** Why IAM refused the call, when it did. */
  denied?: string;
}

export interface FrontDoor {
  endpoint: string;
  close(): Promise<void>;
}

export interface FrontDoorOptions {
  /** The emulator's endpoint, e.g. http://127.0.0.1:8000. */
  upstream: string;
  iam: () => LocalIam;
  onCall?: (call: AwsCall) => void;
}

function jsonTarget(headers: IncomingMessage['headers']): string | undefined {
  const target = headers['x-amz-target'];
  return typeof target === 'string' ? target.split('.').pop() : undefined;
}

function limitViolation(service: string, operation: string, body: Buffer): LimitViolation | undefined {
  if (service !== 'sqs' && service !== 'dynamodb') return undefined;
  let input: Record<string, unknown> = {};
  try {
    input = JSON.parse(body.toString('utf8') || '{}') as Record<string, unknown>;
  } catch {
    return undefined;
  }
  return service === 'sqs' ? sqsViolation(operation, input) : dynamoDbViolation(operation, input, body.length);
}

function sendError(response: ServerResponse, service: string, violation: LimitViolation): number {
  const body = JSON.stringify({ __type: violation.type, message: violation.message });
  response.writeHead(violation.status, {
    'content-type': 'application/x-amz-json-1.0',
    'content-length': Buffer.byteLength(body),
    // The SQS JSON protocol names its errors in this header, as the query protocol did.
    ...(service === 'sqs' ? { 'x-amzn-query-error': `${violation.type.split('#').pop()};Sender` } : {}),
  });
  response.end(body);
  return violation.status;
}

interface Forwarded {
  status: number;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

function forward(upstream: URL, incoming: IncomingMessage, body: Buffer): Promise<Forwarded> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      { host: upstream.hostname, port: upstream.port, method: incoming.method, path: incoming.url, headers: incoming.headers },
      (reply) => {
        readRequestBytes(reply).then((bytes) => resolve({ status: reply.statusCode ?? 502, headers: reply.headers, body: bytes }), reject);
      },
    );
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

export async function startFrontDoor(options: FrontDoorOptions): Promise<FrontDoor> {
  const upstream = new URL(options.upstream);
  const oneWriterPerKey = keyedSerializer();
  const serve = async (incoming: IncomingMessage, response: ServerResponse) => {
    const arrived = performance.now();
    let upstreamMs = 0;
    const body = await readRequestBytes(incoming);
    const url = new URL(incoming.url ?? '/', `http://${incoming.headers.host ?? 'localhost'}`);
    const { accessKeyId, service = 'unknown' } = signedBy(incoming.headers, url);
    const iam = options.iam();
    const principal = iam.principalOf(accessKeyId);
    const caller = principal === 'operator' ? 'operator' : principal.role;
    const request = {
      service,
      method: incoming.method ?? 'GET',
      url: url.toString(),
      headers: incoming.headers as Record<string, string | undefined>,
      body,
    };
    const authorizations = authorizationsFor(request, iam.stackFacts);
    const operation = jsonTarget(incoming.headers) ?? authorizations[0]?.action.split(':')[1] ?? incoming.method ?? '';
    const record = (status: number, responseBytes: number, denied?: string) =>
      options.onCall?.({
        service,
        operation,
        caller,
        method: request.method,
        path: `${url.pathname}${url.search}`,
        status,
        requestBytes: body.length,
        responseBytes,
        at: Date.now(),
        durationMs: performance.now() - arrived,
        upstreamMs,
        denied,
      });
    const deny = (status: number, decision: Pick<Decision, 'message'>) => {
      const denied = deniedResponse(service, decision);
      response.writeHead(status, denied.headers);
      response.end(incoming.method === 'HEAD' ? undefined : denied.body);
      record(status, Buffer.byteLength(denied.body), decision.message);
    };

    const decision = await iam.authorizeRequest(principal, request);
    if (!decision.allowed) return deny(deniedResponse(service, decision).status, decision);
    const violation = limitViolation(service, operation, body);
    if (violation) return record(sendError(response, service, violation), 0);

    const conditions = service === 's3' ? putConditions(authorizations, incoming) : undefined;
    const upstreamFrom = performance.now();
    const reply = conditions
      ? await oneWriterPerKey(url.pathname, async () => {
          const failed = await checkPutConditions(upstream, url.pathname, conditions);
          return failed
            ? { status: failed.status, headers: failed.headers, body: Buffer.from(failed.body) }
            : forward(upstream, incoming, body);
        })
      : await forward(upstream, incoming, body);
    upstreamMs = performance.now() - upstreamFrom;
    const read = authorizations.find((a) => a.action === 's3:GetObject');
    if (reply.status === 404 && read && (await iam.missingKeyStatus(principal, read.resource.split('/')[0]!)) === 403) {
      // S3 tells a caller that may not list the bucket nothing about which keys exist: 403, not 404.
      return deny(403, { message: 'Access Denied' });
    }
    response.writeHead(reply.status, reply.headers);
    response.end(reply.body);
    record(reply.status, reply.body.length);
  };
  const server: LocalHttpServer = await listenLocally((incoming, response) => {
    serve(incoming, response).catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain' });
      response.end(`local front door: ${error instanceof Error ? error.message : String(error)}`);
    });
  });
  return { endpoint: server.url, close: () => server.close() };
}
