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
