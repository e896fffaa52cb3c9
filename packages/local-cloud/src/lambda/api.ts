// The part of Lambda's API that manages versions, on the local Lambda's functions (restJson1, as
// @aws-sdk/client-lambda sends it): ListVersionsByFunction and DeleteFunction of one version.
// Deleting a whole function is not a local operation: nothing in the stack does it.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError, sendJson } from '../aws-protocol.ts';
import { listenLocally, readRequestBytes, type LocalHttpServer } from '../http-server.ts';
import { localFunctionArn } from '../template.ts';
import type { LocalLambda } from './runtime.ts';

const PATH = /^\/\d{4}-\d{2}-\d{2}\/functions\/([^/]+)(\/versions)?\/?$/;
const MAX_ITEMS = 10_000;

// Lambda's timestamps: ISO 8601 with milliseconds and a +0000 offset.
const lastModified = (epochMs: number) => new Date(epochMs).toISOString().replace('Z', '+0000');

/** A FunctionName (name, ARN or partial ARN, perhaps with a qualifier): the function and its qualifier. */
function functionOf(reference: string): { name: string; qualifier?: string } {
  const match = /^(?:(?:arn:[^:]+:lambda:[^:]*:)?\d{12}:function:)?([A-Za-z0-9_-]+)(?::([^:]+))?$/.exec(reference);
  if (!match?.[1]) throw new ApiError('ValidationException', `Invalid FunctionName: ${reference}`);
  return { name: match[1], ...(match[2] === undefined ? {} : { qualifier: match[2] }) };
}

export function lambdaVersionsApi(lambda: Pick<LocalLambda, 'versions' | 'remove'>) {
  const notFound = (name: string, qualifier?: string) =>
    new ApiError('ResourceNotFoundException', `Function not found: ${localFunctionArn(name)}${qualifier ? `:${qualifier}` : ''}`, 404);

  function listVersions(name: string, query: URLSearchParams): unknown {
    const versions = lambda.versions(name);
    if (versions.length === 0) throw notFound(name);
    const maxItems = Number(query.get('MaxItems') ?? 50);
    if (!Number.isInteger(maxItems) || maxItems < 1 || maxItems > MAX_ITEMS) {
      throw new ApiError('InvalidParameterValueException', `MaxItems must be between 1 and ${MAX_ITEMS}.`);
    }
    // $LATEST first, as Lambda lists it, then the published versions, oldest first.
    const all = [
      { Version: '$LATEST', LastModified: lastModified(versions.at(-1)!.publishedAt) },
      ...versions.map(({ version, publishedAt }) => ({ Version: String(version), LastModified: lastModified(publishedAt) })),
    ].map((entry) => ({ FunctionName: name, FunctionArn: `${localFunctionArn(name)}:${entry.Version}`, ...entry }));
    const start = Number(query.get('Marker') ?? 0);
    if (!Number.isInteger(start) || start < 0) throw new ApiError('InvalidParameterValueException', 'Invalid Marker.');
    const end = start + maxItems;
    return { Versions: all.slice(start, end), ...(end < all.length ? { NextMarker: String(end) } : {}) };
  }

  async function deleteVersion(name: string, qualifier: string | undefined): Promise<void> {
    if (qualifier === undefined) {
      throw new ApiError('InvalidParameterValueException', 'The local Lambda deletes function versions only: give a Qualifier.');
    }
    if (qualifier === '$LATEST') {
      throw new ApiError('InvalidParameterValueException', '$LATEST version cannot be deleted without deleting all versions and aliases.');
    }
    const version = Number(qualifier);
    if (!lambda.versions(name).some((v) => v.version === version)) throw notFound(name, qualifier);
    await lambda.remove(name, version);
  }

  return async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    try {
      await readRequestBytes(request);
      const url = new URL(request.url ?? '/', 'http://localhost');
      const match = PATH.exec(url.pathname);
      if (!match?.[1]) throw new ApiError('UnknownOperationException', `No operation for ${request.method} ${url.pathname}`, 404);
      const { name, qualifier } = functionOf(decodeURIComponent(match[1]));
      if (request.method === 'GET' && match[2]) {
        sendJson(response, 200, listVersions(name, url.searchParams), 'application/json');
      } else if (request.method === 'DELETE' && !match[2]) {
        await deleteVersion(name, url.searchParams.get('Qualifier') ?? qualifier);
        response.writeHead(204).end();
      } else {
        throw new ApiError('UnknownOperationException', `No operation for ${request.method} ${url.pathname}`, 404);
      }
    } catch (error) {
      if (error instanceof ApiError)
        return sendJson(response, error.statusCode, { Message: error.message }, 'application/json', error.type);
      console.error('[lambda] request failed:', error);
      sendJson(response, 500, { Message: String(error) }, 'application/json', 'ServiceException');
    }
  };
}

/** The versions API of the local Lambda on its own port (behind a front door in the local cloud). */
export function startLocalLambdaApi(lambda: Pick<LocalLambda, 'versions' | 'remove'>, port?: number): Promise<LocalHttpServer> {
  const serve = lambdaVersionsApi(lambda);
  return listenLocally((request, response) => void serve(request, response), { port });
}
