// Lambda functions outside the stack, as an operator deploys them next to it (a lambda hook's
// target): Invoke (RequestResponse) of a function registered here by its ARN, answered by a plain
// JavaScript function with the event. The functions reach it through a front door like any AWS
// service, so the local IAM holds each call to the caller's role first: an ARN the stack does not
// grant is refused there, as AWS would refuse it, before this ever sees the call.
import { ApiError, sendJson } from '../aws-protocol.ts';
import { listenLocally, readRequestBytes, type LocalHttpServer } from '../http-server.ts';

/** An operator function: its event in, its response payload out; a throw is a function error (Unhandled). */
export type OperatorFunction = (event: unknown) => unknown;

export interface LocalOperatorFunctions {
  endpoint: string;
  /** Serves `arn` with `handler` from now on (the same ARN again replaces it). */
  register(arn: string, handler: OperatorFunction): void;
  /** Invocations so far, by ARN. */
  readonly invocations: { arn: string; event: unknown }[];
  close(): Promise<void>;
}

const INVOKE = /^\/\d{4}-\d{2}-\d{2}\/functions\/([^/]+)\/invocations\/?$/;

export async function startOperatorFunctions(initial: Record<string, OperatorFunction> = {}): Promise<LocalOperatorFunctions> {
  const handlers = new Map(Object.entries(initial));
  const invocations: LocalOperatorFunctions['invocations'] = [];
  const server: LocalHttpServer = await listenLocally(async (request, response) => {
    try {
      const body = (await readRequestBytes(request)).toString('utf8');
      const url = new URL(request.url ?? '/', 'http://localhost');
      const match = INVOKE.exec(url.pathname);
      if (request.method !== 'POST' || !match?.[1]) {
        throw new ApiError('UnknownOperationException', `No operation for ${request.method} ${url.pathname}`, 404);
      }
      const arn = decodeURIComponent(match[1]);
      const type = request.headers['x-amz-invocation-type'] ?? 'RequestResponse';
      if (type !== 'RequestResponse')
        throw new ApiError('InvalidParameterValueException', `Only RequestResponse invocations are served here; got ${type}`);
      const handler = handlers.get(arn) ?? handlers.get(arn.split(':').slice(0, 7).join(':'));
      if (!handler) throw new ApiError('ResourceNotFoundException', `Function not found: ${arn}`, 404);
      const event = body ? JSON.parse(body) : {};
      invocations.push({ arn, event });
      try {
        const result = await handler(event);
        response
          .writeHead(200, { 'content-type': 'application/json', 'x-amz-executed-version': '$LATEST' })
          .end(JSON.stringify(result ?? null));
      } catch (error) {
        // Lambda answers a function's own error with 200 and X-Amz-Function-Error.
        response
          .writeHead(200, { 'content-type': 'application/json', 'x-amz-function-error': 'Unhandled' })
          .end(JSON.stringify({ errorType: (error as Error).name, errorMessage: (error as Error).message }));
      }
    } catch (error) {
      const apiError = error instanceof ApiError ? error : new ApiError('ServiceException', String(error), 500);
      sendJson(response, apiError.statusCode, { Type: 'User', Message: apiError.message }, 'application/json', apiError.type);
    }
  });
  return {
    endpoint: server.url,
    register: (arn, handler) => void handlers.set(arn, handler),
    invocations,
    close: () => server.close(),
  };
}
