// S3's conditional writes, which fauxqs ignores: a PutObject with If-None-Match: * fails with 412
// when the key exists, one with If-Match fails unless the key's current ETag matches. The check
// and the write are one step per key (later writers to the same key wait), as S3 makes them atomic.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { Authorization } from '../iam/requests.ts';

export interface PreconditionFailure {
  status: 404 | 412;
  headers: Record<string, string>;
  body: string;
}

/** The condition headers of a plain PutObject (not a part of a multipart upload, not a copy). */
export function putConditions(
  authorizations: Pick<Authorization, 'action'>[],
  incoming: Pick<IncomingMessage, 'headers' | 'url'>,
): { ifNoneMatch?: string; ifMatch?: string } | undefined {
  if (!authorizations.some((a) => a.action === 's3:PutObject')) return undefined;
  const query = new URL(incoming.url ?? '/', 'http://s3').searchParams;
  if (query.has('uploadId') || query.has('partNumber') || incoming.headers['x-amz-copy-source']) return undefined;
  const ifNoneMatch = incoming.headers['if-none-match'];
  const ifMatch = incoming.headers['if-match'];
  if (typeof ifNoneMatch !== 'string' && typeof ifMatch !== 'string') return undefined;
  return {
    ...(typeof ifNoneMatch === 'string' ? { ifNoneMatch } : {}),
    ...(typeof ifMatch === 'string' ? { ifMatch } : {}),
  };
}

/** The object's current ETag upstream, undefined when it does not exist. */
function currentEtag(upstream: URL, path: string): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const head = httpRequest({ host: upstream.hostname, port: upstream.port, method: 'HEAD', path }, (reply) => {
      reply.resume();
      if (reply.statusCode === 404) return resolve(undefined);
      if (reply.statusCode !== 200) return reject(new Error(`HEAD ${path} answered ${reply.statusCode}`));
      resolve(typeof reply.headers.etag === 'string' ? reply.headers.etag : undefined);
    });
    head.on('error', reject);
    head.end();
  });
}

const s3Error = (status: 404 | 412, code: string, message: string, extra = ''): PreconditionFailure => {
  const body = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message>${extra}</Error>`;
  return { status, headers: { 'content-type': 'application/xml', 'content-length': String(Buffer.byteLength(body)) }, body };
};
const failure = (condition: string) =>
  s3Error(
    412,
    'PreconditionFailed',
    'At least one of the pre-conditions you specified did not hold',
    `<Condition>${condition}</Condition>`,
  );

/** Why the conditional PUT must fail now, if it must. */
export async function checkPutConditions(
  upstream: URL,
  path: string,
  conditions: { ifNoneMatch?: string; ifMatch?: string },
): Promise<PreconditionFailure | undefined> {
  const etag = await currentEtag(upstream, path);
  if (conditions.ifNoneMatch === '*' && etag !== undefined) return failure('If-None-Match');
  if (conditions.ifMatch !== undefined) {
    // If-Match on a key that does not exist: S3 answers 404 NoSuchKey, not 412.
    if (etag === undefined) return s3Error(404, 'NoSuchKey', 'The specified key does not exist.');
    if (conditions.ifMatch !== etag) return failure('If-Match');
  }
  return undefined;
}

/** Runs `work` for one key after every earlier call for that key has finished. */
export function keyedSerializer() {
  const tails = new Map<string, Promise<unknown>>();
  return async <T>(key: string, work: () => Promise<T>): Promise<T> => {
    const before = tails.get(key) ?? Promise.resolve();
    const done = before.then(work, work);
    const tail = done.catch(() => undefined);
    tails.set(key, tail);
    try {
      return await done;
    } finally {
      if (tails.get(key) === tail) tails.delete(key);
    }
  };
}
