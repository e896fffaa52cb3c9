// Where the machine's CPU went over a stretch of the bench: the whole machine's time (/proc/stat),
// split into this process (every function, stand-in, front door and HTTP client of the local cloud:
// they are its threads), DynamoDB Local's JVM (its child process) and the rest (the kernel's own
// work, sandbox processes, anything else on the machine). Also the time the hypervisor kept the
// machine's CPUs from it (steal): on a shared machine that is why figures move between runs.
import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/** Linux counts /proc CPU times in clock ticks of 10 ms (USER_HZ 100 on every common build). */
const TICK_MS = 10;

export interface CpuUse {
  wallMs: number;
  cores: number;
  /** CPU time the machine spent working (all processes and the kernel), in ms; steal not included. */
  busyMs: number;
  /** This process (the bench, the local cloud and every function in it). */
  processMs: number;
  /** DynamoDB Local's JVM; undefined when it could not be found (not Linux, or not started by this process). */
  dynamoDbLocalMs: number | undefined;
  /** Time the hypervisor ran something else while this machine's CPUs waited. */
  stealMs: number;
}

interface MachineTicks {
  busy: number;
  steal: number;
}

function machineTicks(): MachineTicks | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
    const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = line.trim().split(/\s+/).slice(1).map(Number);
    return { busy: user + nice + system + irq + softirq, steal };
  } catch {
    return undefined;
  }
}

/** utime + stime of a process, in ticks (the fields after the command name, which may hold spaces). */
function processTicks(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
}

/** DynamoDB Local's JVM among this process's children. */
function dynamoDbLocalPid(): number | undefined {
  let entries: string[];
  try {
    entries = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return undefined;
  }
  for (const name of entries) {
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8');
      if (!cmdline.includes('DynamoDBLocal.jar')) continue;
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent === process.pid) return Number(name);
    } catch {
      // The process ended while being looked at.
    }
  }
  return undefined;
}

/** Starts measuring; `stop` tells what the machine spent since. */
export function cpuMeter(): { stop(): CpuUse } {
  const jvm = dynamoDbLocalPid();
  const startedAt = performance.now();
  const machine = machineTicks();
  const own = process.cpuUsage();
  const jvmTicks = jvm === undefined ? undefined : processTicks(jvm);
  return {
    stop() {
      const machineNow = machineTicks();
      const ownNow = process.cpuUsage(own);
      const jvmNow = jvm === undefined ? undefined : processTicks(jvm);
      return {
        wallMs: performance.now() - startedAt,
        cores: availableParallelism(),
        busyMs: machine && machineNow ? (machineNow.busy - machine.busy) * TICK_MS : Number.NaN,
        stealMs: machine && machineNow ? (machineNow.steal - machine.steal) * TICK_MS : Number.NaN,
        processMs: (ownNow.user + ownNow.system) / 1000,
        dynamoDbLocalMs: jvmTicks !== undefined && jvmNow !== undefined ? (jvmNow - jvmTicks) * TICK_MS : undefined,
      };
    },
  };
}

/** "1.93 of 2 cores busy (97 %): this process 1.21, DynamoDB Local 0.62, the rest 0.10; steal 0.02" */
export function describeCpu(use: CpuUse): string {
  const cores = (ms: number) => (ms / use.wallMs).toFixed(2);
  const busy = use.busyMs / use.wallMs;
  const jvm = use.dynamoDbLocalMs;
  const rest = use.busyMs - use.processMs - (jvm ?? 0);
  return (
    `${busy.toFixed(2)} of ${use.cores} cores busy (${((100 * busy) / use.cores).toFixed(0)} %): this process (the functions, ` +
    `stand-ins and front doors) ${cores(use.processMs)}, ${jvm === undefined ? '' : `DynamoDB Local ${cores(jvm)}, `}the rest ${cores(Math.max(0, rest))}; ` +
    `the hypervisor took ${cores(use.stealMs)} more (steal)`
  );
}
