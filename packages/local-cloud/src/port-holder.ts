// Which ports `npm start` wants are taken, and by whom: one line per taken port naming the variable
// that moves it and, where Linux lets this user see it (/proc/net/tcp{,6} for the listening socket,
// /proc/<pid>/fd for its owner), the process that holds it.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer } from 'node:net';

export interface WantedPort {
  port: number;
  what: string;
  /** The variable that moves it (none for a port picked free at start). */
  variable?: string;
}

/** The inode of the socket listening on `port` (any address), from the kernel's socket tables. */
function listeningInode(port: number): string | undefined {
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const local = fields[1];
      // st 0A is LISTEN; the local address ends in :PORT in hex.
      if (!local || fields[3] !== '0A') continue;
      if (parseInt(local.split(':').pop()!, 16) === port) return fields[9];
    }
  }
  return undefined;
}

/** The pid and command line of the process holding the listening socket on `port`, if visible. */
export function portHolder(port: number): { pid: number; command: string } | undefined {
  const inode = listeningInode(port);
  if (!inode) return undefined;
  const target = `socket:[${inode}]`;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue; // another user's process, or gone
    }
    for (const fd of fds) {
      let link: string;
      try {
        link = readlinkSync(`/proc/${entry}/fd/${fd}`);
      } catch {
        continue;
      }
      if (link !== target) continue;
      let command = '';
      try {
        command = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
      } catch {
        // it exited meanwhile; the pid still says who it was
      }
      return { pid: Number(entry), command: command.length > 100 ? `${command.slice(0, 97)}...` : command };
    }
  }
  return undefined;
}

/** Whether `port` can be listened on at 127.0.0.1 now. */
export function portFree(port: number): Promise<boolean> {
  return new Promise((done) => {
    const server = createServer();
    server.once('error', () => done(false));
    server.listen(port, '127.0.0.1', () => server.close(() => done(true)));
  });
}

/** The one line for a taken port. */
export function portInUseLine(wanted: WantedPort): string {
  const holder = portHolder(wanted.port);
  const by = holder ? ` by pid ${holder.pid} (${holder.command || 'command unknown'})` : '';
  const move = wanted.variable ? `, or move this one with ${wanted.variable}=<free port>` : '';
  return `Port ${wanted.port} (${wanted.what}) is in use${by}: stop that${move}.`;
}

/** A line for each wanted port (0: any free one, never taken) that is in use. */
export async function portsInUse(wanted: readonly WantedPort[]): Promise<string[]> {
  const fixed = wanted.filter((w) => w.port !== 0);
  const free = await Promise.all(fixed.map((w) => portFree(w.port)));
  return fixed.filter((_, i) => !free[i]).map(portInUseLine);
}
