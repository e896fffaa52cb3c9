// Who signed a request: the access key of its SigV4 credential (header or presigned query), and the
// service its credential scope names.
import type { IncomingHttpHeaders } from 'node:http';

export interface SignedBy {
  accessKeyId?: string;
  service?: string;
}

export function signedBy(headers: IncomingHttpHeaders, url: URL): SignedBy {
  const authorization = String(headers.authorization ?? '');
  const credential = /Credential=([^,\s]+)/.exec(authorization)?.[1] ?? url.searchParams.get('X-Amz-Credential') ?? '';
  const [accessKeyId, , , service] = credential.split('/');
  return { accessKeyId: accessKeyId || undefined, service: service || undefined };
}
