// One task of the local ECS, in memory: the live view tests and the bench read, and what the
// stand-in keeps beside it (the process, timers, times for the API).
import type { ChildProcess } from 'node:child_process';
import type { TaskRunDir } from './isolation.ts';
import type { SocketProxy } from './socket-proxy.ts';

export type LocalTaskStatus = 'PROVISIONING' | 'PENDING' | 'RUNNING' | 'STOPPING' | 'DEPROVISIONING' | 'STOPPED';

export type LocalTaskStopCode = 'UserInitiated' | 'EssentialContainerExited' | 'TaskFailedToStart';

export interface Tag {
  key: string;
  value: string;
}

/** What RunTask asks for, validated. */
export interface TaskSpec {
  taskDefinition: { arn: string; family: string };
  containerName: string;
  overrideEnv: Record<string, string>;
  overrides: Record<string, unknown>;
  tags: Tag[];
  startedBy: string | undefined;
  /** RunTask's assignPublicIp: ENABLED (the public sandbox network). Locally every address is a loopback one. */
  publicIp: boolean;
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
  /** The task definition revision the task runs (for a family alone, its latest ACTIVE one at RunTask). */
  readonly taskDefinitionArn: string;
  /** Started with assignPublicIp ENABLED. */
  readonly publicIp: boolean;
  readonly tags: readonly Tag[];
  /** Names of the environment variables the process was started with. */
  readonly envNames: readonly string[];
  readonly stopCode: LocalTaskStopCode | undefined;
  readonly stoppedReason: string | undefined;
  readonly exitCode: number | undefined;
  /** The last lines the process wrote (stdout and stderr). */
  readonly logTail: readonly string[];
}

type MutableTaskView = { -readonly [K in keyof LocalEcsTask]: LocalEcsTask[K] };

export interface TaskRecord {
  view: MutableTaskView;
  taskDefinitionArn: string;
  family: string;
  containerName: string;
  /** The RunTask overrides, returned as given. */
  overrides: Record<string, unknown>;
  /** The process's environment. */
  env: Record<string, string>;
  /** The task's bearer token (SANDBOX_TOKEN): in env for a plain process, on fd 3 in bubblewrap. */
  token: string | undefined;
  /** In bubblewrap: the bwrap arguments, and the task's directory beside its workspace (socket, passwd). */
  sandbox?: { args: string[]; runDir: string; run: TaskRunDir };
  /** In bubblewrap: forwards the task's address to its server's socket. */
  proxy?: SocketProxy;
  times: { createdAt: number; startedAt?: number; stoppedAt?: number };
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

const MAX_STOPPED_REASON = 1024;

/** A task just created: PROVISIONING, its process not started yet. */
export function newTaskRecord(task: {
  arn: string;
  id: string;
  ip: string;
  port: number;
  workspace: string;
  env: Record<string, string>;
  token: string | undefined;
  sandbox?: TaskRecord['sandbox'];
  spec: {
    taskDefinition: { arn: string; family: string };
    containerName: string;
    overrides: Record<string, unknown>;
    tags: Tag[];
    startedBy: string | undefined;
    publicIp: boolean;
  };
}): TaskRecord {
  const { spec } = task;
  const { promise: stopped, resolve: markStopped } = Promise.withResolvers<void>();
  return {
    view: {
      arn: task.arn,
      id: task.id,
      status: 'PROVISIONING',
      desiredStatus: 'RUNNING',
      ip: task.ip,
      port: task.port,
      pid: undefined,
      workspace: task.workspace,
      startedBy: spec.startedBy,
      taskDefinitionArn: spec.taskDefinition.arn,
      publicIp: spec.publicIp,
      tags: spec.tags,
      envNames: Object.keys(task.env).sort(),
      stopCode: undefined,
      stoppedReason: undefined,
      exitCode: undefined,
      logTail: [],
    },
    taskDefinitionArn: spec.taskDefinition.arn,
    family: spec.taskDefinition.family,
    containerName: spec.containerName,
    overrides: spec.overrides,
    env: task.env,
    token: task.token,
    sandbox: task.sandbox,
    times: { createdAt: Date.now() },
    stderrTail: [],
    exited: false,
    finished: false,
    stopped,
    markStopped,
  };
}

/** Marks the task to stop, unless it is stopping already; false then. */
export function markStopping(record: TaskRecord, stopCode: LocalTaskStopCode, reason: string): boolean {
  if (record.view.desiredStatus === 'STOPPED' || record.finished) return false;
  record.view.desiredStatus = 'STOPPED';
  record.view.stopCode = stopCode;
  record.view.stoppedReason = truncateTail(reason, MAX_STOPPED_REASON);
  return true;
}

export function pushTail(lines: string[], line: string, max: number): void {
  lines.push(line);
  if (lines.length > max) lines.splice(0, lines.length - max);
}

function truncateTail(text: string, max: number): string {
  return text.length <= max ? text : `…${text.slice(text.length - max + 1)}`;
}
