// The local ECS's tasks: created PROVISIONING on an address of their own, launched as processes
// (in bubblewrap unless told otherwise, see isolation.ts), stopped (SIGTERM, then SIGKILL) and
// cleaned up like Fargate (the workspace is removed, the address freed).
import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ApiError } from '../aws-protocol.ts';
import type { AddressPool, LocalEcsAddressing } from './addresses.ts';
import { bubblewrapArgs, createRunDir, IsolationUnavailable, SANDBOX_PATHS, type LocalIsolation } from './isolation.ts';
import { signalGroup } from './process-groups.ts';
import { launch, type ProcessContext } from './task-process.ts';
import { markStopping, newTaskRecord, type LocalEcsTask, type LocalTaskStopCode, type TaskRecord, type TaskSpec } from './task-record.ts';

// StopTask: SIGTERM, then SIGKILL after this long.
const STOP_TIMEOUT_MS = 2000;

export interface TasksOptions {
  /** The container's command, e.g. ['node', '--import', 'tsx', '/abs/containers/sandbox/server.ts']. */
  serverCommand: string[];
  /** Each task gets a fresh subdirectory <workspaceRoot>/<taskId> as its SANDBOX_WORKSPACE. */
  workspaceRoot: string;
  /** Working directory of the task processes (where `--import tsx` resolves). Default process.cwd(). */
  cwd?: string;
  /** Simulated PROVISIONING time before the process is started. Default 0. */
  startDelayMs?: number;
  /** A task whose server has not answered GET /health by then is stopped (TaskFailedToStart). Default 60 s. */
  startTimeoutMs?: number;
  /** Every stdout / stderr line of every task. */
  onLog?(taskArn: string, line: string, stream: 'stdout' | 'stderr'): void;
  /**
   * Pulls the task definition's image, as Fargate does before it starts the container: the reason
   * the pull failed (the task then stops, TaskFailedToStart), or undefined when it was found.
   */
  pullImage?(taskDefinitionArn: string): string | undefined;
  /**
   * How tasks run. Default: plain processes. In bubblewrap, serverCommand must be
   * [node binary, server bundle]: both are shown inside at the image's paths.
   */
  isolation?: LocalIsolation;
}

export function createTasks(options: TasksOptions, addressing: LocalEcsAddressing, addresses: AddressPool) {
  const [command, ...args] = options.serverCommand;
  if (command === undefined) throw new Error('serverCommand must name a command');
  const node = command;
  const isolation = options.isolation ?? { mode: 'process' };
  if (isolation.mode === 'bubblewrap' && args.length !== 1) {
    throw new Error('in bubblewrap, serverCommand must be [node binary, server bundle]');
  }
  const records = new Map<string, TaskRecord>();
  const views = new Map<string, LocalEcsTask>();
  const processContext: ProcessContext = {
    command: isolation.mode === 'bubblewrap' ? isolation.bwrap : command,
    args,
    cwd: options.cwd ?? process.cwd(),
    startTimeoutMs: options.startTimeoutMs ?? 60_000,
    onLog: options.onLog,
    pullImage: options.pullImage,
    stop,
    failToStart,
    finish,
  };

  /** A new PROVISIONING task, launched after startDelayMs; `taskArnPrefix` + its id is its ARN. */
  async function create(spec: TaskSpec, taskArnPrefix: string, isClosing: () => boolean): Promise<TaskRecord> {
    if (isolation.mode === 'unavailable') throw new IsolationUnavailable(isolation.reason);
    const { ip, port } = await addresses.acquire();
    const id = randomBytes(16).toString('hex');
    const workspace = join(options.workspaceRoot, id);
    let sandbox: TaskRecord['sandbox'];
    try {
      if (isClosing()) throw new ApiError('ServerException', 'The local ECS stand-in is closing.', 500);
      await mkdir(workspace, { recursive: true });
      if (isolation.mode === 'bubblewrap') {
        const runDir = `${workspace}.run`;
        const run = createRunDir(runDir);
        const sandboxArgs = bubblewrapArgs({ workspace, run, node, server: args[0]!, shareNetwork: isolation.shareNetwork });
        sandbox = { args: sandboxArgs, runDir, run };
      }
    } catch (error) {
      addresses.release(ip);
      throw error;
    }
    const token = spec.overrideEnv.SANDBOX_TOKEN;
    const env = sandbox ? sandboxEnvironment(spec) : taskEnvironment(spec, ip, port, workspace);
    const record = newTaskRecord({ arn: `${taskArnPrefix}${id}`, id, ip, port, workspace, env, token, sandbox, spec });
    records.set(record.view.arn, record);
    views.set(record.view.arn, record.view);
    record.startTimer = setTimeout(() => void launch(record, processContext), options.startDelayMs ?? 0);
    return record;
  }

  function find(reference: string): TaskRecord | undefined {
    return records.get(reference) ?? [...records.values()].find((record) => record.view.id === reference);
  }

  function failToStart(record: TaskRecord, reason: string): void {
    if (record.finished) return;
    record.view.desiredStatus = 'STOPPED';
    record.view.stopCode ??= 'TaskFailedToStart';
    record.view.stoppedReason ??= reason;
    void finish(record);
  }

  /** Marks the task to stop and ends its process (SIGTERM, SIGKILL after STOP_TIMEOUT_MS). */
  function stop(record: TaskRecord, stopCode: LocalTaskStopCode, reason: string): void {
    if (!markStopping(record, stopCode, reason)) return;
    if (record.startTimer) clearTimeout(record.startTimer);
    const child = record.child;
    const pid = child?.pid;
    // Never started (still PROVISIONING) or the spawn failed: nothing to end.
    if (!child || pid === undefined) {
      void finish(record);
      return;
    }
    // Exited already: its exit handler finishes the task.
    if (child.exitCode !== null || child.signalCode !== null) return;
    record.view.status = 'STOPPING';
    signalGroup(pid, 'SIGTERM');
    record.killTimer = setTimeout(() => signalGroup(pid, 'SIGKILL'), STOP_TIMEOUT_MS);
  }

  async function finish(record: TaskRecord): Promise<void> {
    if (record.finished) return;
    record.finished = true;
    record.view.status = 'DEPROVISIONING';
    await record.proxy?.close();
    for (const dir of [record.view.workspace, record.sandbox?.runDir]) {
      if (dir)
        await rm(dir, { recursive: true, force: true }).catch((error: unknown) => console.error(`[ecs] could not remove ${dir}:`, error));
    }
    if (addressing === 'loopback-ips') addresses.release(record.view.ip);
    record.view.status = 'STOPPED';
    record.times.stoppedAt ??= Date.now();
    record.markStopped();
  }

  /** Simulates the task dying: SIGKILLs its process tree; resolves once the task is STOPPED. */
  async function kill(taskArnOrId: string): Promise<LocalEcsTask> {
    const found = find(taskArnOrId);
    if (!found) throw new Error(`No task ${taskArnOrId}`);
    const pid = found.child?.pid;
    if (pid !== undefined && !found.finished) signalGroup(pid, 'SIGKILL');
    else stop(found, 'TaskFailedToStart', 'Task killed before its container started');
    await found.stopped;
    return found.view;
  }

  async function stopAll(reason: string): Promise<void> {
    for (const record of records.values()) stop(record, 'UserInitiated', reason);
    await Promise.all([...records.values()].map((record) => record.stopped));
  }

  return { records: records as ReadonlyMap<string, TaskRecord>, views, create, find, stop, kill, stopAll };
}

export type Tasks = ReturnType<typeof createTasks>;

/** Only what the container is given: the task's variables, and PATH and HOME to run at all. */
function taskEnvironment(spec: TaskSpec, ip: string, port: number, workspace: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of ['PATH', 'HOME']) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  return { ...env, ...spec.overrideEnv, SANDBOX_HOST: ip, SANDBOX_PORT: String(port), SANDBOX_WORKSPACE: workspace };
}

/**
 * In bubblewrap: the image's environment, the server on its socket, and the token on fd 3 as the
 * image's entrypoint.sh hands it over (in the environment, bwrap's own first process in the
 * sandbox would keep it where every command can read it).
 */
function sandboxEnvironment(spec: TaskSpec): Record<string, string> {
  const { SANDBOX_TOKEN: _token, ...overrides } = spec.overrideEnv;
  return {
    PATH: SANDBOX_PATHS.path,
    HOME: SANDBOX_PATHS.home,
    ...overrides,
    SANDBOX_WORKSPACE: SANDBOX_PATHS.workspace,
    SANDBOX_SOCKET: SANDBOX_PATHS.socket,
    SANDBOX_TOKEN_FD: '3',
  };
}
