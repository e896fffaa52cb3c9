// Task addresses. Like awsvpc tasks, every task gets its own IP address and they all listen on the
// same port: on Linux all of 127.0.0.0/8 is routed to lo, so task n listens on 127.0.x.y:<port>.
// Where that is not so (macOS without aliases), 'ports' addressing gives every task 127.0.0.1 and a
// port of its own.
import { rmSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type LocalEcsAddressing = 'loopback-ips' | 'ports';

const FIRST_LOOPBACK = ipToInt('127.0.0.2');
const LAST_LOOPBACK = ipToInt('127.0.255.254');
// Give up after this many consecutive addresses already taken (by something outside this stand-in).
const MAX_BUSY_PROBES = 64;

function ipToInt(ip: string): number {
  return ip.split('.').reduce((value, octet) => value * 256 + Number(octet), 0);
}

function intToIp(value: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(value / 2 ** shift) % 256).join('.');
}

export class AddressExhausted extends Error {}

// Stand-ins in other processes (test files run in parallel) allocate from the same addresses: an
// ip:port is reserved machine-wide by creating <tmpdir>/local-ecs-addresses/<ip>_<port> exclusively,
// holding the owner's pid. A lock whose owner is gone is stale and taken over.
const ADDRESS_LOCK_DIR = join(tmpdir(), 'local-ecs-addresses');
const heldAddressLocks = new Set<string>();

async function lockAddress(ip: string, port: number): Promise<string | undefined> {
  const path = join(ADDRESS_LOCK_DIR, `${ip}_${port}`);
  await mkdir(ADDRESS_LOCK_DIR, { recursive: true });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await writeFile(path, String(process.pid), { flag: 'wx' });
      heldAddressLocks.add(path);
      return path;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = Number((await readFile(path, 'utf8').catch(() => '')).trim());
      // Empty: its owner is between creating and writing it.
      if (!Number.isInteger(owner) || owner <= 0 || isProcessAlive(owner)) return undefined;
      await rm(path, { force: true });
    }
  }
  return undefined;
}

function unlockAddress(path: string): void {
  heldAddressLocks.delete(path);
  rmSync(path, { force: true });
}

/** Removes every lock this process holds: on exit, when no release will run any more. */
export function releaseAllAddressLocks(): void {
  for (const lock of heldAddressLocks) rmSync(lock, { force: true });
  heldAddressLocks.clear();
}

function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Binds ip:port and lets go: resolves the port bound (useful with port 0), rejects with the bind error. */
function probeBind(ip: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ host: ip, port, exclusive: true }, () => {
      const bound = (server.address() as AddressInfo).port;
      server.close(() => resolve(bound));
    });
  });
}

export async function detectAddressing(): Promise<LocalEcsAddressing> {
  try {
    await probeBind(intToIp(FIRST_LOOPBACK), 0);
    return 'loopback-ips';
  } catch {
    return 'ports';
  }
}

export class AddressPool {
  private cursor = FIRST_LOOPBACK;
  /** In use by this stand-in: ip → its machine-wide lock file. */
  private readonly inUse = new Map<string, string>();

  constructor(
    private readonly addressing: LocalEcsAddressing,
    private readonly sandboxPort: number,
  ) {}

  /** 'loopback-ips': the next free 127.0.x.y (round robin, so a freed address is reused last). */
  async acquire(): Promise<{ ip: string; port: number }> {
    if (this.addressing === 'ports') {
      return { ip: '127.0.0.1', port: await probeBind('127.0.0.1', 0) };
    }
    let busy = 0;
    for (let scanned = 0; scanned <= LAST_LOOPBACK - FIRST_LOOPBACK; scanned++) {
      const candidate = this.cursor;
      this.cursor = candidate >= LAST_LOOPBACK ? FIRST_LOOPBACK : candidate + 1;
      const lastOctet = candidate % 256;
      const ip = intToIp(candidate);
      if (lastOctet === 0 || lastOctet === 255 || this.inUse.has(ip)) continue;
      this.inUse.set(ip, '');
      const lock = await lockAddress(ip, this.sandboxPort).catch((error: unknown) => {
        this.inUse.delete(ip);
        throw error;
      });
      if (lock !== undefined) {
        this.inUse.set(ip, lock);
        try {
          // Also taken by something that is no stand-in?
          await probeBind(ip, this.sandboxPort);
          return { ip, port: this.sandboxPort };
        } catch (error) {
          this.release(ip);
          if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
        }
      } else {
        this.inUse.delete(ip);
      }
      if (++busy >= MAX_BUSY_PROBES) {
        throw new AddressExhausted(`${busy} loopback addresses in a row already have port ${this.sandboxPort} taken`);
      }
    }
    throw new AddressExhausted('every loopback address is in use');
  }

  release(ip: string): void {
    const lock = this.inUse.get(ip);
    this.inUse.delete(ip);
    if (lock) unlockAddress(lock);
  }
}
