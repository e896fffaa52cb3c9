// S3 with conditional writes, in memory. fauxqs alone ignores If-Match / If-None-Match (the local
// cloud's front door enforces them), so unit tests of that logic without a cloud use this S3 behind
// the real S3Client, as its request handler: the code under test runs unchanged, over S3's real
// request and response shapes.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { S3Client } from '@aws-sdk/client-s3';

export /** A tiny S3 over HTTP semantics: GET/PUT/DELETE objects, ListObjectsV2, conditional PUT. */
function conditionalS3() {
  const objects = new Map<string, { body: Buffer; etag: string }>();
  const xml = (body: string) => `<?xml version="1.0" encoding="UTF-8"?>${body}`;
  const respond = (statusCode: number, body: string | Buffer = '', headers: Record<string, string> = {}) => ({
    response: {
      statusCode,
      headers: { 'content-type': 'application/xml', ...headers },
      body: Readable.from([typeof body === 'string' ? Buffer.from(body) : body]),
    },
  });
  const handler = {
    async handle(request: {
      method: string;
      path: string;
      query?: Record<string, unknown>;
      headers: Record<string, string>;
      body?: unknown;
    }) {
      const key = decodeURIComponent(request.path.replace(/^\/bucket\/?/, ''));
      const header = (name: string) => request.headers[name] ?? request.headers[name.toLowerCase()];
      if (request.method === 'GET' && request.query?.['list-type'] === '2') {
        const prefix = String(request.query.prefix ?? '');
        const items = [...objects].filter(([k]) => k.startsWith(prefix));
        return respond(
          200,
          xml(
            `<ListBucketResult><IsTruncated>false</IsTruncated>${items.map(([k, o]) => `<Contents><Key>${k}</Key><ETag>${o.etag}</ETag><Size>${o.body.length}</Size></Contents>`).join('')}</ListBucketResult>`,
          ),
        );
      }
      const existing = objects.get(key);
      if (request.method === 'GET') {
        if (!existing) return respond(404, xml('<Error><Code>NoSuchKey</Code><Message>missing</Message></Error>'));
        return respond(200, existing.body, { etag: existing.etag, 'content-type': 'application/octet-stream' });
      }
      if (request.method === 'PUT') {
        const ifMatch = header('if-match');
        const ifNoneMatch = header('if-none-match');
        if ((ifMatch && existing?.etag !== ifMatch) || (ifNoneMatch === '*' && existing)) {
          return respond(
            412,
            xml(
              '<Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message></Error>',
            ),
          );
        }
        const chunks: Buffer[] = [];
        const body = request.body as Buffer | string | Uint8Array | Readable;
        if (body instanceof Readable) for await (const c of body) chunks.push(Buffer.from(c));
        else chunks.push(Buffer.from(body as Uint8Array));
        const data = Buffer.concat(chunks);
        const etag = `"${createHash('md5').update(data).digest('hex')}"`;
        objects.set(key, { body: data, etag });
        return respond(200, '', { etag });
      }
      if (request.method === 'DELETE') {
        objects.delete(key);
        return respond(204);
      }
      return respond(400, xml('<Error><Code>NotImplemented</Code></Error>'));
    },
  };
  const client = new S3Client({
    region: 'us-east-1',
    endpoint: 'http://s3.local',
    forcePathStyle: true,
    credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
    requestHandler: handler as never,
  });
  return { client, objects };
}
