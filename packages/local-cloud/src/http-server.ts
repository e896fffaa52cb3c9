// One way for every local stand-in to listen: on a loopback address, on the port asked for or any
// free one, and to close without waiting for idle keep-alive connections.
import { createServer, type IncomingMessage, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LocalHttpServer {
  /** http://host:port, no trailing slash. */
  url: string;
  port: number;
  close(): Promise<void>;
}

export async function listenLocally(handler: RequestListener, options: { port?: number; host?: string } = {}): Promise<LocalHttpServer> {
  const host = options.host ?? '127.0.0.1';
  const server = createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}`,
    port,
    close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      return closed;
    },
  };
}

export async function readRequestBytes(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * Why a request to a local page or a "post as a user" endpoint is not from this machine's own
 * tools (undefined: it is). Such an endpoint acts as any user of the stack, so a web page elsewhere
 * in the browser must not reach it: the request must name this machine as its Host (a DNS-rebound
 * name does not), a post from a browser must come from the server's own origin, and a post must be
 * JSON (which a browser sends cross-site only after a preflight these servers never allow).
 */
export function foreignRequestRefusal(
  request: IncomingMessage,
  port: number,
  isPost: boolean,
): { status: number; why: string } | undefined {
  const local = [`127.0.0.1:${port}`, `localhost:${port}`];
  if (!local.includes(request.headers.host ?? '')) return { status: 403, why: 'This answers only at 127.0.0.1 or localhost.' };
  if (!isPost) return undefined;
  const origin = request.headers.origin;
  if (origin !== undefined && !local.some((host) => origin === `http://${host}`)) {
    return { status: 403, why: "Posts are taken from this server's own page only." };
  }
  if (!/^application\/json\b/i.test(request.headers['content-type'] ?? '')) {
    return { status: 415, why: 'The body must be JSON (content-type: application/json).' };
  }
  return undefined;
}
