// Inside a function's worker: only the connections its VPC placement and security groups allow.
// A function outside the sandbox VPC cannot reach a private address in it (a sandbox task), and a
// function inside reaches only what its security group's egress rules name. Locally, every AWS
// endpoint listens on 127.0.0.1 and every sandbox task on another 127.x address, so the guard
// decides by address and port before the socket connects, and a refused connection fails at once
// (on AWS it would hang until a timeout; failing fast keeps tests quick and says why).
import net from 'node:net';
import type { WorkerNetwork } from './network-policy.ts';

const PUBLIC_HOSTS = new Set(['127.0.0.1', 'localhost', '::1']);

function destination(args: unknown[]): { host: string; port: number } | undefined {
  const [first, second] = args;
  if (Array.isArray(first)) return destination(first);
  if (first && typeof first === 'object') {
    const options = first as { host?: string; port?: number | string; path?: string };
    if (options.path !== undefined) return undefined;
    return { host: options.host ?? 'localhost', port: Number(options.port) };
  }
  if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    return { host: typeof second === 'string' ? second : 'localhost', port: Number(first) };
  }
  return undefined;
}

/** Why the connection is refused, or undefined when the network allows it. */
export function refusal(network: WorkerNetwork, host: string, port: number): string | undefined {
  const isPrivate = !PUBLIC_HOSTS.has(host) && /^127\./.test(host);
  if (network.mode === 'public') {
    if (!isPrivate) return undefined;
    return `${network.functionName} runs outside the sandbox VPC and cannot reach the private address ${host}:${port}`;
  }
  if (isPrivate) {
    if (network.privatePorts.includes(port)) return undefined;
    return `${network.functionName}'s security group allows no egress to ${host}:${port}`;
  }
  if (network.endpoints.some((e) => e.host === host && e.port === port)) return undefined;
  return `${network.functionName} runs in the sandbox VPC, whose security group allows no egress to ${host}:${port} (only ${network.endpoints.map((e) => e.service).join(', ') || 'nothing'} through endpoints)`;
}

export function installNetworkGuard(network: WorkerNetwork): void {
  const connect = net.Socket.prototype.connect;
  net.Socket.prototype.connect = function guardedConnect(this: net.Socket, ...args: unknown[]) {
    const target = destination(args);
    const reason = target && refusal(network, target.host, target.port);
    if (!reason) return (connect as (...a: unknown[]) => net.Socket).apply(this, args);
    const error = Object.assign(new Error(`connect ETIMEDOUT ${target!.host}:${target!.port} (local cloud: ${reason})`), {
      code: 'ETIMEDOUT',
      errno: -110,
      syscall: 'connect',
      address: target!.host,
      port: target!.port,
    });
    process.nextTick(() => this.destroy(error));
    return this;
  } as typeof connect;
}
