// Local stand-in for Amazon ECS (Fargate RunTask). Each task runs as a local process: the sandbox
// command server, started with the environment the container would get. The stand-in serves the
// part of the ECS API that production code calls through @aws-sdk/client-ecs (AWS JSON 1.1
// protocol: POST /, X-Amz-Target: AmazonEC2ContainerServiceV20141113.<Operation>), so the same
// code runs unchanged against AWS_ENDPOINT_URL_ECS=<endpoint>.
//
// Like awsvpc tasks, every task gets its own IP address and they all listen on the same port: on
// Linux all of 127.0.0.0/8 is routed to lo, so task n listens on 127.0.x.y:<sandboxPort>. Where
// that is not so (macOS without aliases), the stand-in falls back to 127.0.0.1 with a distinct port
// per task, reported as the container's networkBindings[].hostPort.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, request as httpRequest } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { constants as osConstants, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ApiError, isPlainObject, serveAwsJson } from './aws-protocol.ts';

export type LocalTaskStatus = 'PROVISIONING' | 'PENDING' | 'RUNNING' | 'STOPPING' | 'DEPROVISIONING' | 'STOPPED';

export type LocalEcsAddressing = 'loopback-ips' | 'ports';

export type LocalTaskStopCode = 'UserInitiated' | 'EssentialContainerExited' | 'TaskFailedToStart';

export interface LocalEcsOptions {
  /** The container's command, e.g. ['node', '--import', 'tsx', '/abs/containers/sandbox/server.ts']. */
  serverCommand: string[];
  /** Each task gets a fresh subdirectory <workspaceRoot>/<taskId> as its SANDBOX_WORKSPACE. */
  workspaceRoot: string;
  /** Default arn:aws:ecs:local:000000000000:cluster/default. Requests may name it by ARN or name. */
  clusterArn?: string;
  /** The stand-in's own HTTP port on 127.0.0.1. Default: any free port. */
  port?: number;
  /** The port every task's server listens on (SANDBOX_PORT). Default 8080. */
  sandboxPort?: number;
  /** Simulated PROVISIONING time before the process is started. Default 0. */
  startDelayMs?: number;
  /** A task whose server has not answered GET /health by then is stopped (TaskFailedToStart). Default 60 s. */
  startTimeoutMs?: number;
  /** StopTask: SIGTERM, then SIGKILL after this long. Default 2000 ms. */
  stopTimeoutMs?: number;
  /** Working directory of the task processes (where `--import tsx` resolves). Default process.cwd(). */
  cwd?: string;
  /** The task definition's environment; container overrides and the SANDBOX_* variables win. */
  env?: Record<string, string>;
  /** The task definition's container name; if set, overrides naming another container are rejected. */
  containerName?: string;
  /** Reported as the container image. Default 'local/sandbox:latest'. */
  image?: string;
  /** Default: 'loopback-ips' if 127.0.0.2 can be bound, else 'ports'. */
  addressing?: LocalEcsAddressing;
  /** Keep task directories after the task stops (debugging). Default false: removed like Fargate storage. */
  keepWorkspaces?: boolean;
  /** Every stdout / stderr line of every task. */
  onLog?(taskArn: string, line: string, stream: 'stdout' | 'stderr'): void;
}

/** A live view of one task (updated in place as the task changes). */
export interface LocalEcsTask {
  readonly arn: string;
  readonly id: string;
  readonly status: LocalTaskStatus;
  readonly desiredStatus: 'RUNNING' | 'STOPPED';
  readonly ip: string;
  /** The port the task's server listens on (sandboxPort, or a distinct one in 'ports' addressing). */
  readonly port: number;
  readonly pid: number | undefined;
  readonly workspace: string;
  readonly startedBy: string | undefined;
  readonly tags: readonly { key: string; value: string }[];
  /** Names of the environment variables the process was started with. */
  readonly envNames: readonly string[];
  readonly stopCode: LocalTaskStopCode | undefined;
  readonly stoppedReason: string | undefined;
  readonly exitCode: number | undefined;
  /** The last lines the process wrote (stdout and stderr). */
  readonly logTail: readonly string[];
}

export interface LocalEcs {
  endpoint: string;
  clusterArn: string;
  addressing: LocalEcsAddressing;
  /** Every task started, by task ARN, stopped ones included. */
  tasks: ReadonlyMap<string, LocalEcsTask>;
  /** Simulates the task dying: SIGKILLs its process tree; resolves once the task is STOPPED. */
  kill(taskArnOrId: string): Promise<LocalEcsTask>;
  /** Stops the API and every task (SIGTERM, then SIGKILL); resolves once all processes are gone. */
  close(): Promise<void>;
}

const TARGET_PREFIX = 'AmazonEC2ContainerServiceV20141113.';
const PROTOCOL = {
  service: 'ecs',
  targetPrefix: TARGET_PREFIX,
  contentType: 'application/x-amz-json-1.1',
  internalErrorType: 'ServerException',
};
const DEFAULT_CLUSTER_ARN = 'arn:aws:ecs:local:000000000000:cluster/default';
const LOG_TAIL_LINES = 50;
const STDERR_TAIL_LINES = 10;
const MAX_STOPPED_REASON = 1024;
const HEALTH_POLL_MS = 50;
// After the main process exits, how long to wait for the last stderr bytes before reporting.
const OUTPUT_DRAIN_MS = 1000;
// ECS: "A total of 8192 characters are allowed for overrides."
const MAX_OVERRIDES_CHARS = 8192;
const STARTED_BY_PATTERN = /^[A-Za-z0-9_/-]{1,128}$/;

// ---------------------------------------------------------------------------------------------
// Process cleanup on exit: every live task process group, over all stand-ins in this process.
// ---------------------------------------------------------------------------------------------

const liveProcessGroups = new Set<number>();
const HOOK_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
let openStandIns = 0;

function killLiveProcessGroups(): void {
  for (const pgid of liveProcessGroups) signalGroup(pgid, 'SIGKILL');
  liveProcessGroups.clear();
  for (const lock of heldAddressLocks) rmSync(lock, { force: true });
  heldAddressLocks.clear();
}

// Tasks run detached (their own process group), so a signal to this process's group does not reach
// them: kill them here, then, unless someone else handles the signal, die of it as we would have.
function onTerminatingSignal(signal: NodeJS.Signals): void {
  killLiveProcessGroups();
  if (process.listenerCount(signal) === 1) {
    process.removeListener(signal, onTerminatingSignal);
    process.kill(process.pid, signal);
  }
}

function retainExitHooks(): void {
  if (openStandIns++ > 0) return;
  process.on('exit', killLiveProcessGroups);
  for (const signal of HOOK_SIGNALS) process.on(signal, onTerminatingSignal);
}

function releaseExitHooks(): void {
  if (--openStandIns > 0) return;
  process.removeListener('exit', killLiveProcessGroups);
  for (const signal of HOOK_SIGNALS) process.removeListener(signal, onTerminatingSignal);
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is gone already.
  }
}

// ---------------------------------------------------------------------------------------------
// Addresses
// ---------------------------------------------------------------------------------------------

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

class AddressExhausted extends Error {}

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
    const server = createNetServer();
    server.once('error', reject);
    server.listen({ host: ip, port, exclusive: true }, () => {
      const bound = (server.address() as AddressInfo).port;
      server.close(() => resolve(bound));
    });
  });
}

async function detectAddressing(): Promise<LocalEcsAddressing> {
  try {
    await probeBind(intToIp(FIRST_LOOPBACK), 0);
    return 'loopback-ips';
  } catch {
    return 'ports';
  }
}

class AddressPool {
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

// ---------------------------------------------------------------------------------------------
// Tasks
// ---------------------------------------------------------------------------------------------

interface Tag {
  key: string;
  value: string;
}

type MutableTaskView = { -readonly [K in keyof LocalEcsTask]: LocalEcsTask[K] };

interface TaskRecord {
  view: MutableTaskView;
  taskDefinitionArn: string;
  family: string;
  group: string;
  containerName: string;
  containerArn: string;
  attachmentId: string;
  networkInterfaceId: string;
  macAddress: string;
  subnetId: string;
  overrides: Record<string, unknown>;
  cpu: string | undefined;
  memory: string | undefined;
  env: Record<string, string>;
  token: string | undefined;
  version: number;
  times: Partial<Record<TimeField, number>>;
  child?: ChildProcess;
  startTimer?: NodeJS.Timeout;
  killTimer?: NodeJS.Timeout;
  stderrTail: string[];
  exitSignal?: NodeJS.Signals;
  /** The main process has exited. */
  exited: boolean;
  /** Cleaned up: STOPPED or about to be. */
  finished: boolean;
  stopped: Promise<void>;
  markStopped(): void;
}

type TimeField =
  'createdAt' | 'pullStartedAt' | 'pullStoppedAt' | 'startedAt' | 'connectivityAt' | 'stoppingAt' | 'executionStoppedAt' | 'stoppedAt';

type Operation = (input: Record<string, unknown>) => unknown;

export async function startLocalEcs(options: LocalEcsOptions): Promise<LocalEcs> {
  const [command, ...commandArgs] = options.serverCommand;
  if (command === undefined) throw new Error('serverCommand must name a command');
  const clusterArn = options.clusterArn ?? DEFAULT_CLUSTER_ARN;
  const clusterMatch = /^arn:([^:]+):ecs:([^:]*):([^:]*):cluster\/([A-Za-z0-9_-]{1,255})$/.exec(clusterArn);
  if (!clusterMatch) throw new Error(`Not an ECS cluster ARN: ${clusterArn}`);
  const [, partition, region, account, clusterName] = clusterMatch as unknown as [string, string, string, string, string];
  const arnPrefix = `arn:${partition}:ecs:${region}:${account}`;
  const sandboxPort = options.sandboxPort ?? 8080;
  const startDelayMs = options.startDelayMs ?? 0;
  const startTimeoutMs = options.startTimeoutMs ?? 60_000;
  const stopTimeoutMs = options.stopTimeoutMs ?? 2000;
  const addressing = options.addressing ?? (await detectAddressing());
  const addresses = new AddressPool(addressing, sandboxPort);
  const records = new Map<string, TaskRecord>();
  const views = new Map<string, LocalEcsTask>();
  const idempotent = new Map<string, unknown>();
  let closing = false;

  await mkdir(options.workspaceRoot, { recursive: true });

  // ---- lifecycle -----------------------------------------------------------------------------

  function setStatus(record: TaskRecord, status: LocalTaskStatus): void {
    record.view.status = status;
    record.version++;
  }

  function stamp(record: TaskRecord, field: TimeField): void {
    record.times[field] ??= Date.now();
  }

  function launch(record: TaskRecord): void {
    record.startTimer = undefined;
    if (record.view.desiredStatus === 'STOPPED') return;
    setStatus(record, 'PENDING');
    stamp(record, 'pullStartedAt');
    stamp(record, 'pullStoppedAt');
    let child: ChildProcess;
    try {
      child = spawn(command as string, commandArgs, {
        cwd: options.cwd ?? process.cwd(),
        env: record.env,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (error) {
      failToStart(record, `CannotStartContainerError: ${(error as Error).message}`);
      return;
    }
    record.child = child;
    record.view.pid = child.pid;
    if (child.pid !== undefined) liveProcessGroups.add(child.pid);
    const outputClosed = Promise.all([
      child.stdout ? readLines(record, child.stdout, 'stdout') : Promise.resolve(),
      child.stderr ? readLines(record, child.stderr, 'stderr') : Promise.resolve(),
    ]);
    child.once('error', (error) => {
      if (child.pid === undefined) failToStart(record, `CannotStartContainerError: ${error.message}`);
    });
    child.once('exit', (code, signal) => void onExit(record, code, signal, outputClosed));
    if (child.pid !== undefined) void waitUntilHealthy(record);
  }

  function readLines(record: TaskRecord, stream: NodeJS.ReadableStream, name: 'stdout' | 'stderr'): Promise<void> {
    return new Promise((resolve) => {
      const lines = createInterface({ input: stream, crlfDelay: Infinity });
      lines.on('line', (line) => {
        pushTail(record.view.logTail as string[], line, LOG_TAIL_LINES);
        if (name === 'stderr') pushTail(record.stderrTail, line, STDERR_TAIL_LINES);
        try {
          options.onLog?.(record.view.arn, line, name);
        } catch (error) {
          console.error('[ecs] onLog threw:', error);
        }
      });
      lines.once('close', () => resolve());
    });
  }

  async function waitUntilHealthy(record: TaskRecord): Promise<void> {
    const deadline = Date.now() + startTimeoutMs;
    while (record.view.status === 'PENDING' && !record.finished) {
      if (await answersHealth(record.view.ip, record.view.port, record.token)) {
        if (record.view.status !== 'PENDING' || record.finished) return;
        setStatus(record, 'RUNNING');
        stamp(record, 'startedAt');
        stamp(record, 'connectivityAt');
        return;
      }
      if (Date.now() >= deadline) {
        stop(record, 'TaskFailedToStart', `Task failed to start: GET /health did not answer 200 within ${startTimeoutMs} ms`);
        return;
      }
      await delay(HEALTH_POLL_MS);
    }
  }

  function failToStart(record: TaskRecord, reason: string): void {
    if (record.finished) return;
    record.view.desiredStatus = 'STOPPED';
    record.view.stopCode ??= 'TaskFailedToStart';
    record.view.stoppedReason ??= reason;
    stamp(record, 'stoppingAt');
    void finish(record);
  }

  /** Marks the task to stop and ends its process (SIGTERM, SIGKILL after stopTimeoutMs). */
  function stop(record: TaskRecord, stopCode: LocalTaskStopCode, reason: string): void {
    if (record.view.desiredStatus === 'STOPPED' || record.finished) return;
    record.view.desiredStatus = 'STOPPED';
    record.view.stopCode = stopCode;
    record.view.stoppedReason = truncateTail(reason, MAX_STOPPED_REASON);
    stamp(record, 'stoppingAt');
    if (record.startTimer) clearTimeout(record.startTimer);
    const child = record.child;
    const pid = child?.pid;
    // Never started (still PROVISIONING) or the spawn failed: nothing to end.
    if (!child || pid === undefined) {
      void finish(record);
      return;
    }
    // Exited already: onExit finishes the task.
    if (child.exitCode !== null || child.signalCode !== null) return;
    setStatus(record, 'STOPPING');
    signalGroup(pid, 'SIGTERM');
    record.killTimer = setTimeout(() => signalGroup(pid, 'SIGKILL'), stopTimeoutMs);
  }

  async function onExit(
    record: TaskRecord,
    code: number | null,
    signal: NodeJS.Signals | null,
    outputClosed: Promise<unknown>,
  ): Promise<void> {
    const pid = record.child?.pid;
    record.exited = true;
    if (record.killTimer) clearTimeout(record.killTimer);
    // The main process is gone: end whatever it left behind in its group, then the pipes close.
    if (pid !== undefined) {
      signalGroup(pid, 'SIGKILL');
      liveProcessGroups.delete(pid);
    }
    record.view.exitCode = code ?? (signal ? 128 + (osConstants.signals[signal] ?? 0) : undefined);
    record.exitSignal = signal ?? undefined;
    await Promise.race([outputClosed, delay(OUTPUT_DRAIN_MS)]);
    if (record.view.desiredStatus !== 'STOPPED') {
      record.view.desiredStatus = 'STOPPED';
      record.view.stopCode = 'EssentialContainerExited';
      record.view.stoppedReason = exitReason(record);
      stamp(record, 'stoppingAt');
    }
    await finish(record);
  }

  function exitReason(record: TaskRecord): string {
    const how = [`exit code ${record.view.exitCode ?? 'unknown'}`, record.exitSignal ? `signal ${record.exitSignal}` : '']
      .filter(Boolean)
      .join(', ');
    const stderr = record.stderrTail.length ? `; last stderr: ${record.stderrTail.join(' | ')}` : '';
    return truncateTail(`Essential container in task exited (${how})${stderr}`, MAX_STOPPED_REASON);
  }

  async function finish(record: TaskRecord): Promise<void> {
    if (record.finished) return;
    record.finished = true;
    stamp(record, 'executionStoppedAt');
    setStatus(record, 'DEPROVISIONING');
    if (!options.keepWorkspaces) {
      await rm(record.view.workspace, { recursive: true, force: true }).catch((error: unknown) =>
        console.error(`[ecs] could not remove ${record.view.workspace}:`, error),
      );
    }
    if (addressing === 'loopback-ips') addresses.release(record.view.ip);
    setStatus(record, 'STOPPED');
    stamp(record, 'stoppedAt');
    record.markStopped();
  }

  // ---- API -----------------------------------------------------------------------------------

  function checkCluster(value: unknown): void {
    const cluster = value === undefined || value === null ? 'default' : String(value);
    if (cluster !== clusterArn && cluster !== clusterName) {
      throw new ApiError('ClusterNotFoundException', 'Cluster not found.');
    }
  }

  function findRecord(reference: string): TaskRecord | undefined {
    return records.get(reference) ?? [...records.values()].find((record) => record.view.id === reference);
  }

  function taskDefinitionOf(reference: unknown): { arn: string; family: string } {
    if (typeof reference !== 'string' || reference === '') {
      throw new ApiError('InvalidParameterException', 'taskDefinition can not be blank.');
    }
    const arn = /^arn:[^:]+:ecs:[^:]*:[^:]*:task-definition\/([A-Za-z0-9_-]{1,255}):(\d+)$/.exec(reference);
    if (arn?.[1]) return { arn: reference, family: arn[1] };
    const short = /^([A-Za-z0-9_-]{1,255})(?::(\d+))?$/.exec(reference);
    if (short?.[1]) return { arn: `${arnPrefix}:task-definition/${short[1]}:${short[2] ?? '1'}`, family: short[1] };
    throw new ApiError('ClientException', 'Unable to describe task definition.');
  }

  function wireTask(record: TaskRecord, includeTags: boolean): Record<string, unknown> {
    const { view, times } = record;
    const seconds = (field: TimeField) => (times[field] === undefined ? undefined : times[field] / 1000);
    const containerStatus = record.exited || record.finished ? 'STOPPED' : times.startedAt !== undefined ? 'RUNNING' : 'PENDING';
    const attachmentStatus =
      view.status === 'PROVISIONING'
        ? 'PRECREATED'
        : view.status === 'STOPPED'
          ? 'DELETED'
          : view.status === 'DEPROVISIONING'
            ? 'DETACHED'
            : 'ATTACHED';
    const task: Record<string, unknown> = {
      taskArn: view.arn,
      clusterArn,
      taskDefinitionArn: record.taskDefinitionArn,
      group: record.group,
      startedBy: view.startedBy,
      launchType: 'FARGATE',
      platformVersion: '1.4.0',
      platformFamily: 'Linux',
      availabilityZone: `${region}a`,
      lastStatus: view.status,
      desiredStatus: view.desiredStatus,
      connectivity: times.connectivityAt === undefined ? undefined : 'CONNECTED',
      connectivityAt: seconds('connectivityAt'),
      createdAt: seconds('createdAt'),
      pullStartedAt: seconds('pullStartedAt'),
      pullStoppedAt: seconds('pullStoppedAt'),
      startedAt: seconds('startedAt'),
      stoppingAt: seconds('stoppingAt'),
      executionStoppedAt: seconds('executionStoppedAt'),
      stoppedAt: seconds('stoppedAt'),
      stopCode: view.stopCode,
      stoppedReason: view.stoppedReason,
      cpu: record.cpu,
      memory: record.memory,
      version: record.version,
      enableExecuteCommand: false,
      healthStatus: 'UNKNOWN',
      ephemeralStorage: { sizeInGiB: 20 },
      attachments: [
        {
          id: record.attachmentId,
          type: 'ElasticNetworkInterface',
          status: attachmentStatus,
          details: [
            { name: 'subnetId', value: record.subnetId },
            { name: 'networkInterfaceId', value: record.networkInterfaceId },
            { name: 'macAddress', value: record.macAddress },
            { name: 'privateDnsName', value: `ip-${view.ip.replaceAll('.', '-')}.${region}.compute.internal` },
            { name: 'privateIPv4Address', value: view.ip },
          ],
        },
      ],
      containers: [
        {
          containerArn: record.containerArn,
          taskArn: view.arn,
          name: record.containerName,
          image: options.image ?? 'local/sandbox:latest',
          lastStatus: containerStatus,
          exitCode: view.exitCode,
          runtimeId: view.pid === undefined ? undefined : `${view.id}-${view.pid}`,
          networkBindings:
            addressing === 'ports' ? [{ bindIP: view.ip, containerPort: sandboxPort, hostPort: view.port, protocol: 'tcp' }] : [],
          networkInterfaces: [{ attachmentId: record.attachmentId, privateIpv4Address: view.ip }],
          healthStatus: 'UNKNOWN',
          cpu: '0',
        },
      ],
      overrides: record.overrides,
      tags: includeTags ? view.tags.map((tag) => ({ ...tag })) : undefined,
    };
    return dropUndefined(task);
  }

  async function createTask(input: Record<string, unknown>, shared: RunShared): Promise<TaskRecord> {
    const { ip, port } = await addresses.acquire();
    if (closing) {
      addresses.release(ip);
      throw new ApiError('ServerException', 'The local ECS stand-in is closing.', 500);
    }
    const id = randomBytes(16).toString('hex');
    const arn = `${arnPrefix}:task/${clusterName}/${id}`;
    const workspace = join(options.workspaceRoot, id);
    try {
      await mkdir(workspace, { recursive: true });
    } catch (error) {
      addresses.release(ip);
      throw error;
    }
    const env: Record<string, string> = {
      ...pick(process.env, ['PATH', 'HOME']),
      ...options.env,
      ...shared.overrideEnv,
      SANDBOX_HOST: ip,
      SANDBOX_PORT: String(port),
      SANDBOX_WORKSPACE: workspace,
    };
    let markStopped!: () => void;
    const stopped = new Promise<void>((resolve) => (markStopped = resolve));
    const record: TaskRecord = {
      view: {
        arn,
        id,
        status: 'PROVISIONING',
        desiredStatus: 'RUNNING',
        ip,
        port,
        pid: undefined,
        workspace,
        startedBy: typeof input.startedBy === 'string' ? input.startedBy : undefined,
        tags: shared.tags,
        envNames: Object.keys(env).sort(),
        stopCode: undefined,
        stoppedReason: undefined,
        exitCode: undefined,
        logTail: [],
      },
      taskDefinitionArn: shared.taskDefinition.arn,
      family: shared.taskDefinition.family,
      group: typeof input.group === 'string' ? input.group : `family:${shared.taskDefinition.family}`,
      containerName: shared.containerName,
      containerArn: `${arnPrefix}:container/${clusterName}/${id}/${randomUUID()}`,
      attachmentId: randomUUID(),
      networkInterfaceId: `eni-${randomBytes(9).toString('hex').slice(0, 17)}`,
      macAddress: ['02', ...[...randomBytes(5)].map((byte) => byte.toString(16).padStart(2, '0'))].join(':'),
      subnetId: shared.subnetId,
      overrides: shared.overrides,
      cpu: shared.cpu,
      memory: shared.memory,
      env,
      token: env.SANDBOX_TOKEN,
      version: 1,
      times: { createdAt: Date.now() },
      stderrTail: [],
      exited: false,
      finished: false,
      stopped,
      markStopped,
    };
    records.set(arn, record);
    views.set(arn, record.view);
    record.startTimer = setTimeout(() => launch(record), startDelayMs);
    return record;
  }

  interface RunShared {
    taskDefinition: { arn: string; family: string };
    containerName: string;
    overrideEnv: Record<string, string>;
    overrides: Record<string, unknown>;
    tags: Tag[];
    subnetId: string;
    cpu: string | undefined;
    memory: string | undefined;
  }

  function validateRunTask(input: Record<string, unknown>): { shared: RunShared; count: number } {
    checkCluster(input.cluster);
    const taskDefinition = taskDefinitionOf(input.taskDefinition);
    if (input.launchType !== undefined && input.capacityProviderStrategy !== undefined) {
      throw new ApiError('InvalidParameterException', 'Specifying both a launch type and capacity provider strategy is not supported.');
    }
    if (input.launchType !== undefined && input.launchType !== 'FARGATE') {
      throw new ApiError(
        'InvalidParameterException',
        `The local ECS stand-in runs FARGATE tasks only, not launchType ${String(input.launchType)}.`,
      );
    }
    const count = input.count === undefined ? 1 : Number(input.count);
    if (!Number.isInteger(count) || count < 1 || count > 10) {
      throw new ApiError('InvalidParameterException', 'Count must be between 1 and 10.');
    }
    if (input.startedBy !== undefined && (typeof input.startedBy !== 'string' || !STARTED_BY_PATTERN.test(input.startedBy))) {
      throw new ApiError(
        'InvalidParameterException',
        'startedBy: up to 128 letters (uppercase and lowercase), numbers, hyphens (-), forward slash (/), and underscores (_) are allowed.',
      );
    }
    const network = asObject(asObject(input.networkConfiguration).awsvpcConfiguration);
    const subnets = Array.isArray(network.subnets) ? network.subnets : [];
    if (subnets.length === 0) {
      throw new ApiError('InvalidParameterException', "Network Configuration must be provided when networkMode 'awsvpc' is specified.");
    }
    if (network.assignPublicIp !== undefined && network.assignPublicIp !== 'ENABLED' && network.assignPublicIp !== 'DISABLED') {
      throw new ApiError('InvalidParameterException', 'assignPublicIp must be ENABLED or DISABLED.');
    }
    const tags = validateTags(input.tags);
    const overrides = asObject(input.overrides);
    if (JSON.stringify(overrides).length > MAX_OVERRIDES_CHARS) {
      throw new ApiError('InvalidParameterException', `Container Overrides length must be at most ${MAX_OVERRIDES_CHARS}`);
    }
    const containerOverrides = Array.isArray(overrides.containerOverrides) ? overrides.containerOverrides.map(asObject) : [];
    const overrideEnv: Record<string, string> = {};
    let containerName = options.containerName;
    for (const override of containerOverrides) {
      const name = typeof override.name === 'string' ? override.name : undefined;
      if (name === undefined) throw new ApiError('InvalidParameterException', 'Container override name can not be blank.');
      containerName ??= name;
      if (name !== containerName) {
        throw new ApiError('InvalidParameterException', `Override for container named ${name} is not a container in the TaskDefinition.`);
      }
      for (const variable of Array.isArray(override.environment) ? override.environment.map(asObject) : []) {
        if (typeof variable.name !== 'string' || variable.name === '') {
          throw new ApiError('InvalidParameterException', 'Environment variable name can not be blank.');
        }
        overrideEnv[variable.name] = typeof variable.value === 'string' ? variable.value : '';
      }
    }
    return {
      count,
      shared: {
        taskDefinition,
        containerName: containerName ?? 'sandbox',
        overrideEnv,
        overrides: { containerOverrides, inferenceAcceleratorOverrides: [], ...withoutKey(overrides, 'containerOverrides') },
        tags,
        subnetId: String(subnets[0]),
        cpu: typeof overrides.cpu === 'string' ? overrides.cpu : undefined,
        memory: typeof overrides.memory === 'string' ? overrides.memory : undefined,
      },
    };
  }

  async function runTask(input: Record<string, unknown>): Promise<unknown> {
    const clientToken = typeof input.clientToken === 'string' ? input.clientToken : undefined;
    if (clientToken !== undefined && idempotent.has(clientToken)) return idempotent.get(clientToken);
    const { shared, count } = validateRunTask(input);
    const tasks: Record<string, unknown>[] = [];
    const failures: Record<string, unknown>[] = [];
    for (let index = 0; index < count; index++) {
      try {
        tasks.push(wireTask(await createTask(input, shared), true));
      } catch (error) {
        if (!(error instanceof AddressExhausted)) throw error;
        failures.push({ arn: shared.taskDefinition.arn, reason: 'RESOURCE:ENI', detail: error.message });
      }
    }
    const response = { tasks, failures };
    if (clientToken !== undefined) idempotent.set(clientToken, response);
    return response;
  }

  const operations: Record<string, Operation> = {
    RunTask: runTask,

    DescribeTasks(input) {
      checkCluster(input.cluster);
      const references = Array.isArray(input.tasks) ? input.tasks.map(String) : [];
      if (references.length === 0) throw new ApiError('InvalidParameterException', 'Tasks cannot be empty.');
      if (references.length > 100) throw new ApiError('InvalidParameterException', 'Tasks cannot have more than 100 elements.');
      const includeTags = Array.isArray(input.include) && input.include.includes('TAGS');
      const tasks: Record<string, unknown>[] = [];
      const failures: Record<string, unknown>[] = [];
      for (const reference of references) {
        const found = findRecord(reference);
        if (found) tasks.push(wireTask(found, includeTags));
        else failures.push({ arn: reference, reason: 'MISSING' });
      }
      return { tasks, failures };
    },

    StopTask(input) {
      checkCluster(input.cluster);
      const found = typeof input.task === 'string' ? findRecord(input.task) : undefined;
      if (!found) throw new ApiError('InvalidParameterException', 'The referenced task was not found.');
      const reason = typeof input.reason === 'string' && input.reason !== '' ? input.reason : 'Task stopped by user';
      stop(found, 'UserInitiated', reason);
      return { task: wireTask(found, false) };
    },

    ListTasks(input) {
      checkCluster(input.cluster);
      const desiredStatus = input.desiredStatus ?? 'RUNNING';
      const maxResults = input.maxResults === undefined ? 100 : Number(input.maxResults);
      if (!Number.isInteger(maxResults) || maxResults < 1 || maxResults > 100) {
        throw new ApiError('InvalidParameterException', 'maxResults must be between 1 and 100.');
      }
      const offset = input.nextToken === undefined ? 0 : decodeNextToken(input.nextToken);
      const matching = [...records.values()].filter(
        (task) =>
          task.view.desiredStatus === desiredStatus &&
          (input.startedBy === undefined || task.view.startedBy === input.startedBy) &&
          (input.family === undefined || task.family === input.family) &&
          (input.launchType === undefined || input.launchType === 'FARGATE') &&
          input.serviceName === undefined &&
          input.containerInstance === undefined,
      );
      const page = matching.slice(offset, offset + maxResults).map((task) => task.view.arn);
      const next = offset + maxResults < matching.length ? encodeNextToken(offset + maxResults) : undefined;
      return dropUndefined({ taskArns: page, nextToken: next });
    },
  };

  // ---- server --------------------------------------------------------------------------------

  const server = createServer((request, response) => void serveAwsJson(PROTOCOL, operations, request, response));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  retainExitHooks();
  const { port } = server.address() as AddressInfo;

  async function kill(taskArnOrId: string): Promise<LocalEcsTask> {
    const found = findRecord(taskArnOrId);
    if (!found) throw new Error(`No task ${taskArnOrId}`);
    const pid = found.child?.pid;
    if (pid !== undefined && !found.finished) signalGroup(pid, 'SIGKILL');
    else stop(found, 'TaskFailedToStart', 'Task killed before its container started');
    await found.stopped;
    return found.view;
  }

  let closed: Promise<void> | undefined;
  function close(): Promise<void> {
    closed ??= (async () => {
      closing = true;
      const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      for (const task of records.values()) stop(task, 'UserInitiated', 'The local ECS stand-in was closed');
      await Promise.all([...records.values()].map((task) => task.stopped));
      await serverClosed;
      releaseExitHooks();
    })();
    return closed;
  }

  return { endpoint: `http://127.0.0.1:${port}`, clusterArn, addressing, tasks: views, kill, close };
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

function answersHealth(ip: string, port: number, token: string | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    const request = httpRequest(
      {
        host: ip,
        port,
        path: '/health',
        method: 'GET',
        agent: false,
        timeout: 1000,
        headers: token === undefined ? {} : { Authorization: `Bearer ${token}` },
      },
      (response) => {
        response.resume();
        resolve(response.statusCode === 200);
      },
    );
    request.on('timeout', () => request.destroy());
    request.on('error', () => resolve(false));
    request.end();
  });
}

function validateTags(value: unknown): Tag[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new ApiError('InvalidParameterException', 'tags must be a list.');
  if (value.length > 50) throw new ApiError('InvalidParameterException', 'A resource can have at most 50 tags.');
  return value.map((item) => {
    const tag = asObject(item);
    const key = tag.key;
    const tagValue = tag.value ?? '';
    if (typeof key !== 'string' || key.length < 1 || key.length > 128) {
      throw new ApiError('InvalidParameterException', 'Tag keys must be 1 to 128 characters long.');
    }
    if (typeof tagValue !== 'string' || tagValue.length > 256) {
      throw new ApiError('InvalidParameterException', 'Tag values must be at most 256 characters long.');
    }
    if (key.toLowerCase().startsWith('aws:')) {
      throw new ApiError('InvalidParameterException', 'Tag keys may not start with the reserved prefix aws:.');
    }
    return { key, value: tagValue };
  });
}

function encodeNextToken(offset: number): string {
  return Buffer.from(JSON.stringify({ offset }), 'utf8').toString('base64');
}

function decodeNextToken(token: unknown): number {
  try {
    const offset = (JSON.parse(Buffer.from(String(token), 'base64').toString('utf8')) as { offset?: unknown }).offset;
    if (typeof offset === 'number' && Number.isInteger(offset) && offset >= 0) return offset;
  } catch {
    // fall through
  }
  throw new ApiError('InvalidParameterException', 'Invalid nextToken.');
}

function pushTail(lines: string[], line: string, max: number): void {
  lines.push(line);
  if (lines.length > max) lines.splice(0, lines.length - max);
}

function truncateTail(text: string, max: number): string {
  return text.length <= max ? text : `…${text.slice(text.length - max + 1)}`;
}

function pick(source: NodeJS.ProcessEnv, keys: string[]): Record<string, string> {
  const picked: Record<string, string> = {};
  for (const key of keys) {
    const value = source[key];
    if (value !== undefined) picked[key] = value;
  }
  return picked;
}

function withoutKey(source: Record<string, unknown>, key: string): Record<string, unknown> {
  return Object.fromEntries(Object.entries(source).filter(([name]) => name !== key));
}

function asObject(value: unknown): Record<string, unknown> {
  return isPlainObject(value) ? value : {};
}

function dropUndefined(source: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(source).filter(([, value]) => value !== undefined));
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
