// Processes of local sandbox tasks seen from the host. A pid a command prints is its sandbox's own
// (a PID namespace under bubblewrap): hostPidOf finds the host's pid for it, so a test can check from
// outside that it is gone.
import { readFileSync } from 'node:fs';
import { listProcesses } from '../../containers/sandbox/src/process-tree.ts';

/** The host pid of the descendant of `taskPid` known inside its namespace as `pid`; undefined if none. */
export function hostPidOf(taskPid: number, pid: number): number | undefined {
  const table = listProcesses();
  if (!table) throw new Error('no /proc: cannot map sandbox pids');
  const tree = new Set([taskPid]);
  // Parents have lower start times than their children but pids wrap: loop until nothing is added.
  for (let grew = true; grew;) {
    grew = false;
    for (const info of table.values()) {
      if (tree.has(info.ppid) && !tree.has(info.pid)) {
        tree.add(info.pid);
        grew = true;
      }
    }
  }
  for (const candidate of tree) {
    // NSpid: the pid in each namespace the process is in, the host's first and its own last.
    const line = /^NSpid:\s+(.+)$/m.exec(statusOf(candidate))?.[1];
    if (line && Number(line.trim().split(/\s+/).at(-1)) === pid) return candidate;
  }
  return undefined;
}

function statusOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return '';
  }
}

/** Whether a host process with this pid is there (a zombie counts as there). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
