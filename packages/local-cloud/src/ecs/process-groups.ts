// Task processes run detached (in a process group of their own, so a task's whole process tree can
// be ended at once), which also means a signal to this process's group does not reach them. While
// any local ECS is open, exit and terminating-signal hooks end every live task process group, over
// all stand-ins in this process, so no task outlives its host.
import { releaseAllAddressLocks } from './addresses.ts';

const liveProcessGroups = new Set<number>();
const HOOK_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
let openStandIns = 0;

export function trackProcessGroup(pgid: number): void {
  liveProcessGroups.add(pgid);
}

export function untrackProcessGroup(pgid: number): void {
  liveProcessGroups.delete(pgid);
}

export function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is gone already.
  }
}

function killLiveProcessGroups(): void {
  for (const pgid of liveProcessGroups) signalGroup(pgid, 'SIGKILL');
  liveProcessGroups.clear();
  releaseAllAddressLocks();
}

// Kill the tasks, then, unless someone else handles the signal, die of it as we would have.
function onTerminatingSignal(signal: NodeJS.Signals): void {
  killLiveProcessGroups();
  if (process.listenerCount(signal) === 1) {
    process.removeListener(signal, onTerminatingSignal);
    process.kill(process.pid, signal);
  }
}

export function retainExitHooks(): void {
  if (openStandIns++ > 0) return;
  process.on('exit', killLiveProcessGroups);
  for (const signal of HOOK_SIGNALS) process.on(signal, onTerminatingSignal);
}

export function releaseExitHooks(): void {
  if (--openStandIns > 0) return;
  process.removeListener('exit', killLiveProcessGroups);
  for (const signal of HOOK_SIGNALS) process.removeListener(signal, onTerminatingSignal);
}
