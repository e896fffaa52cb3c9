// The local ECS's tasks: created PROVISIONING on an address of their own, launched as processes,
// stopped (SIGTERM, then SIGKILL) and cleaned up like Fargate (the workspace is removed, the
// address freed).
import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ApiError } from '../aws-protocol.ts';
import type { AddressPool, LocalEcsAddressing } from './addresses.ts';
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
}

export function createTasks(options: TasksOptions, addressing: LocalEcsAddressing, addresses: AddressPool) {
  const [command, ...args] = options.serverCommand;
  if (command === undefined) throw new Error('serverCommand must name a command');
  const records = new Map<string, TaskRecord>();
  const views = new Map<string, LocalEcsTask>();
  const processContext: ProcessContext = {
    command,
    args,
    cwd: options.cwd ?? process.cwd(),
    startTimeoutMs: options.startTimeoutMs ?? 60_000,
    onLog: options.onLog,
    stop,
    failToStart,
    finish,
  };

  /** A new PROVISIONING task, launched after startDelayMs; `taskArnPrefix` + its id is its ARN. */
  async function create(spec: TaskSpec, taskArnPrefix: string, isClosing: () => boolean): Promise<TaskRecord> {
    const { ip, port } = await addresses.acquire();
    const id = randomBytes(16).toString('hex');
    const workspace = join(options.workspaceRoot, id);
    try {
      if (isClosing()) throw new ApiError('ServerException', 'The local ECS stand-in is closing.', 500);
      await mkdir(workspace, { recursive: true });
    } catch (error) {
      addresses.release(ip);
      throw error;
    }
    const env = taskEnvironment(spec, ip, port, workspace);
    const record = newTaskRecord({ arn: `${taskArnPrefix}${id}`, id, ip, port, workspace, env, spec });
    records.set(record.view.arn, record);
    views.set(record.view.arn, record.view);
    record.startTimer = setTimeout(() => launch(record, processContext), options.startDelayMs ?? 0);
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
    await rm(record.view.workspace, { recursive: true, force: true }).catch((error: unknown) =>
      console.error(`[ecs] could not remove ${record.view.workspace}:`, error),
    );
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
