// Finding and killing everything a command started.
//
// Each command runs as the leader of its own session and process group (spawn with
// `detached: true`), so one kill(-pgid) reaches the shell and every process that stayed in the
// group. That is not enough on its own: a child can call setpgid (job control, `set -m`) or setsid
// to leave the group. So at kill time we also read the process table from /proc and add
//   - every process still in the command's session (catches setpgid escapes, even orphaned ones),
//   - every descendant (by ppid) of the shell and of those processes (catches setsid children whose
//     parent is still alive).
// The tree is frozen with SIGSTOP while we look, so the shell cannot die (orphaning its setsid
// children out of reach) or fork between the look and the kill.
// A setsid child whose parent had already exited before the kill has been re-parented to init and
// carries no trace of where it came from; we cannot find it. That is the one known gap (README.md).
//
// PIDs are reused, so a pid we remember from an earlier snapshot is only signalled again if its
// start time (field 22 of /proc/<pid>/stat) is unchanged.
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcessInfo {
  pid: number;
  ppid: number;
  pgrp: number;
  session: number;
  /** One-letter state; 'Z' means dead and waiting to be reaped. */
  state: string;
  /** Start time in clock ticks since boot: with the pid, identifies a process across snapshots. */
  startTime: string;
}

/** Parses /proc/<pid>/stat. The command name is in parentheses and may itself contain ") ". */
export function parseStat(text: string): ProcessInfo | null {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return null;
  const pid = Number(text.slice(0, open).trim());
  // Fields after the name, numbered as in proc(5): state is field 3, so field n is at index n - 3.
  const rest = text.slice(close + 2).split(' ');
  const field = (n: number) => rest[n - 3] ?? '';
  return {
    pid,
    state: field(3),
    ppid: Number(field(4)),
    pgrp: Number(field(5)),
    session: Number(field(6)),
    startTime: field(22),
  };
}

/** A snapshot of all processes we can see, or null where there is no /proc (not Linux). */
export function listProcesses(): Map<number, ProcessInfo> | null {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return null;
  }
  const table = new Map<number, ProcessInfo>();
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const info = parseStat(readFileSync(`/proc/${name}/stat`, 'utf8'));
      if (info) table.set(info.pid, info);
    } catch {
      // The process exited between readdir and read: nothing to do.
    }
  }
  return table;
}

/** The processes that belong to one command: its group leader's pid (= pgid = session id). */
export class ProcessTree {
  /** pid → start time, for every process we have signalled. */
  private readonly seen = new Map<number, string>();

  constructor(
    readonly rootPid: number,
    /** False once the shell itself has exited and been reaped: its pid may then be reused. */
    private readonly rootAlive: () => boolean,
  ) {
    // kill(-1) means every process we may signal and kill(-0) our own group: never go near those.
    if (!Number.isSafeInteger(rootPid) || rootPid <= 1) throw new Error(`not a process group to kill: ${rootPid}`);
  }

  /** The live members as of now: group, session, descendants, and anything seen before. */
  members(table: Map<number, ProcessInfo>): ProcessInfo[] {
    const found = new Map<number, ProcessInfo>();
    const queue: ProcessInfo[] = [];
    const add = (info: ProcessInfo | undefined) => {
      if (!info || info.state === 'Z' || found.has(info.pid) || info.pid === process.pid) return;
      found.set(info.pid, info);
      queue.push(info);
    };
    if (this.rootAlive()) add(table.get(this.rootPid));
    for (const info of table.values()) {
      if (info.pgrp === this.rootPid || info.session === this.rootPid) add(info);
      const start = this.seen.get(info.pid);
      if (start !== undefined && start === info.startTime) add(info);
    }
    // Descendants by ppid. Build the children index once rather than scanning per process.
    const children = new Map<number, ProcessInfo[]>();
    for (const info of table.values()) {
      const list = children.get(info.ppid);
      if (list) list.push(info);
      else children.set(info.ppid, [info]);
    }
    for (let i = 0; i < queue.length; i++) {
      for (const child of children.get(queue[i]!.pid) ?? []) add(child);
    }
    return [...found.values()];
  }

  /**
   * Sends `signal` to the whole tree. The tree is frozen first (SIGSTOP: a stopped process cannot
   * fork, exit or call setsid), re-reading the process table until it shows nothing new, so that
   * nothing slips out between looking and signalling; in particular the shell is not killed
   * before its setsid children have been found, which would orphan them out of reach. Then the
   * signal, then SIGCONT so that stopped processes act on a SIGTERM.
   */
  signal(signal: NodeJS.Signals): void {
    const group = (sig: NodeJS.Signals) => {
      try {
        process.kill(-this.rootPid, sig);
      } catch {
        // ESRCH: the group is empty; stragglers outside it are signalled one by one.
      }
    };
    const each = (pids: Iterable<number>, sig: NodeJS.Signals) => {
      for (const pid of pids) {
        try {
          process.kill(pid, sig);
        } catch {
          // Exited meanwhile.
        }
      }
    };
    let table = listProcesses();
    if (!table) {
      group(signal);
      return;
    }
    const frozen = new Set<number>();
    // Bounded: a tree that keeps growing faster than we can stop it still gets signalled.
    for (let round = 0; round < 10; round++) {
      const fresh = this.members(table).filter((info) => !frozen.has(info.pid));
      for (const info of fresh) {
        this.seen.set(info.pid, info.startTime);
        frozen.add(info.pid);
      }
      if (round > 0 && fresh.length === 0) break;
      each(
        fresh.map((info) => info.pid),
        'SIGSTOP',
      );
      group('SIGSTOP');
      table = listProcesses() ?? table;
    }
    group(signal);
    each(frozen, signal);
    group('SIGCONT');
    each(frozen, 'SIGCONT');
  }

  /** True while anything of the tree is still running (zombies count as gone). */
  alive(): boolean {
    const table = listProcesses();
    if (table) return this.members(table).length > 0;
    try {
      process.kill(-this.rootPid, 0);
      return true;
    } catch {
      return false;
    }
  }
}
