// A tiny HTTP server that records what a real AWS SDK client sends and answers every request with
// the local IAM's access-denied response for its service: tests map the exact bytes the SDK sent,
// and see which error the SDK makes of the denial.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { deniedResponse, signingOf, type AwsHttpRequest } from '../../packages/local-cloud/src/iam/index.ts';

export interface Capture {
  endpoint: string;
  /** Client options: this endpoint, a region, dummy credentials, one attempt. */
  clientConfig: { endpoint: string; region: string; credentials: { accessKeyId: string; secretAccessKey: string }; maxAttempts: number };
  /** Sends through the SDK; resolves to the request it made and the name of the error it threw. */
  send(call: () => Promise<unknown>): Promise<{ request: AwsHttpRequest; errorName: string; status?: number }>;
  close(): Promise<void>;
}

async function readBody(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function startCapture(): Promise<Capture> {
  const requests: AwsHttpRequest[] = [];
  const server = createServer((incoming, response) => {
    void readBody(incoming).then((body) => {
      const headers = Object.fromEntries(
        Object.entries(incoming.headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(',') : value]),
      );
      const url = incoming.url ?? '/';
      const service = signingOf({ url, headers })?.service ?? 'unsigned';
      requests.push({ service, method: incoming.method ?? 'GET', url, headers, body });
      const denied = deniedResponse(service, { message: `User: test is not authorized (${service})` });
      response.writeHead(denied.status, denied.headers);
      response.end(denied.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    endpoint,
    clientConfig: { endpoint, region: 'us-east-1', credentials: { accessKeyId: 'AKIDTEST', secretAccessKey: 'secret' }, maxAttempts: 1 },
    async send(call) {
      const before = requests.length;
      let errorName = '(no error)';
      let status: number | undefined;
      try {
        await call();
      } catch (error) {
        errorName = (error as Error).name;
        status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      }
      const request = requests[before];
      if (!request || requests.length !== before + 1) throw new Error(`expected one request, got ${requests.length - before}`);
      return { request, errorName, status };
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
