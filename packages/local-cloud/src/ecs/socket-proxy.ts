// A task in bubblewrap has no network, so its command server listens on a Unix socket; this
// forwards the task's address (what sandbox-step connects to, as to a Fargate task's private IP)
// to that socket, one connection for each.
import { connect, createServer, type Socket } from 'node:net';

export interface SocketProxy {
  close(): Promise<void>;
}

export function forwardToSocket(ip: string, port: number, socketPath: string): Promise<SocketProxy> {
  const open = new Set<Socket>();
  const server = createServer((client) => {
    // As the server does on Fargate: a caller that vanishes without closing is noticed, and the
    // socket's close then tells the server to stop the caller's command.
    client.setKeepAlive(true, 30_000);
    const upstream = connect(socketPath);
    open.add(client);
    client.once('close', () => {
      open.delete(client);
      upstream.destroy();
    });
    // Before the server listens (or after it is gone) the caller sees its connection dropped.
    upstream.once('error', () => client.destroy());
    client.once('error', () => upstream.destroy());
    client.pipe(upstream).pipe(client);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: ip, port, exclusive: true }, () => {
      server.off('error', reject);
      resolve({
        close: () =>
          new Promise<void>((done) => {
            for (const socket of open) socket.destroy();
            server.close(() => done());
          }),
      });
    });
  });
}
