// A task's container, as a local process: started with the task's environment in a process group
// of its own (in bubblewrap: behind a forward from its address to its socket, the token on fd 3),
// RUNNING once its server answers GET /health, and STOPPED when it exits.
import { spawn, type ChildProcess } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { constants as osConstants } from 'node:os';
import { createInterface } from 'node:readline';
import type { Writable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { takeServerSocket } from './isolation.ts';
import { signalGroup, trackProcessGroup, untrackProcessGroup } from './process-groups.ts';
import { forwardToSocket } from './socket-proxy.ts';
import { markStopping, pushTail, type LocalTaskStopCode, type TaskRecord } from './task-record.ts';

const LOG_TAIL_LINES = 50;
const STDERR_TAIL_LINES = 10;
const HEALTH_POLL_MS = 50;
// After the main process exits, how long to wait for the last stderr bytes before reporting.
const OUTPUT_DRAIN_MS = 1000;

export interface ProcessContext {
  command: string;
  args: string[];
  cwd: string;
  startTimeoutMs: number;
  onLog?(taskArn: string, line: string, stream: 'stdout' | 'stderr'): void;
  pullImage?(taskDefinitionArn: string): string | undefined;
  stop(record: TaskRecord, stopCode: LocalTaskStopCode, reason: string): void;
  failToStart(record: TaskRecord, reason: string): void;
  finish(record: TaskRecord): Promise<void>;
}

export async function launch(record: TaskRecord, context: ProcessContext): Promise<void> {
  record.startTimer = undefined;
  if (record.view.desiredStatus === 'STOPPED') return;
  record.view.status = 'PENDING';
  const pullFailure = context.pullImage?.(record.taskDefinitionArn);
  if (pullFailure !== undefined) {
    context.failToStart(record, pullFailure);
    return;
  }
  const { sandbox } = record;
  let child: ChildProcess;
  try {
    if (sandbox) {
      const proxy = await forwardToSocket(record.view.ip, record.view.port, sandbox.run.socket);
      // Stopped meanwhile: finished already, without the forward.
      if (isStopping(record)) return await proxy.close();
      record.proxy = proxy;
    }
    const stdio = sandbox ? (['ignore', 'pipe', 'pipe', 'pipe'] as const) : (['ignore', 'pipe', 'pipe'] as const);
    child = spawn(context.command, sandbox?.args ?? context.args, { cwd: context.cwd, env: record.env, detached: true, stdio: [...stdio] });
    if (sandbox) (child.stdio[3] as Writable).on('error', () => {}).end(`${record.token ?? ''}\n`);
  } catch (error) {
    context.failToStart(record, `CannotStartContainerError: ${(error as Error).message}`);
    return;
  }
  record.child = child;
  record.view.pid = child.pid;
  if (child.pid !== undefined) trackProcessGroup(child.pid);
  const outputClosed = Promise.all([
    child.stdout ? readLines(record, child.stdout, 'stdout', context) : Promise.resolve(),
    child.stderr ? readLines(record, child.stderr, 'stderr', context) : Promise.resolve(),
  ]);
  child.once('error', (error) => {
    if (child.pid === undefined) context.failToStart(record, `CannotStartContainerError: ${error.message}`);
  });
  child.once('exit', (code, signal) => void onExit(record, code, signal, outputClosed, context));
  if (child.pid !== undefined) void waitUntilHealthy(record, context);
}

const isStopping = (record: TaskRecord) => record.view.desiredStatus === 'STOPPED';

function readLines(record: TaskRecord, stream: NodeJS.ReadableStream, name: 'stdout' | 'stderr', context: ProcessContext): Promise<void> {
  return new Promise((resolve) => {
    const lines = createInterface({ input: stream, crlfDelay: Infinity });
    lines.on('line', (line) => {
      pushTail(record.view.logTail as string[], line, LOG_TAIL_LINES);
      if (name === 'stderr') pushTail(record.stderrTail, line, STDERR_TAIL_LINES);
      try {
        context.onLog?.(record.view.arn, line, name);
      } catch (error) {
        console.error('[ecs] onLog threw:', error);
      }
    });
    lines.once('close', () => resolve());
  });
}

async function waitUntilHealthy(record: TaskRecord, context: ProcessContext): Promise<void> {
  const deadline = Date.now() + context.startTimeoutMs;
  while (record.view.status === 'PENDING' && !record.finished) {
    // In bubblewrap the forward reaches the server only once its socket is out of the sandbox's
    // reach, so no caller (and so no command) can come before that.
    let reachable: boolean;
    try {
      reachable = record.sandbox === undefined || takeServerSocket(record.sandbox.run);
    } catch (error) {
      context.stop(record, 'TaskFailedToStart', `Task failed to start: ${(error as Error).message}`);
      return;
    }
    if (reachable && (await answersHealth(record.view.ip, record.view.port, record.token))) {
      if (record.view.status !== 'PENDING' || record.finished) return;
      record.view.status = 'RUNNING';
      record.times.startedAt ??= Date.now();
      return;
    }
    if (Date.now() >= deadline) {
      const reason = `Task failed to start: GET /health did not answer 200 within ${context.startTimeoutMs} ms`;
      context.stop(record, 'TaskFailedToStart', reason);
      return;
    }
    await delay(HEALTH_POLL_MS);
  }
}

async function onExit(
  record: TaskRecord,
  code: number | null,
  signal: NodeJS.Signals | null,
  outputClosed: Promise<unknown>,
  context: ProcessContext,
): Promise<void> {
  const pid = record.child?.pid;
  record.exited = true;
  if (record.killTimer) clearTimeout(record.killTimer);
  // The main process is gone: end whatever it left behind in its group, then the pipes close.
  if (pid !== undefined) {
    signalGroup(pid, 'SIGKILL');
    untrackProcessGroup(pid);
  }
  record.view.exitCode = code ?? (signal ? 128 + (osConstants.signals[signal] ?? 0) : undefined);
  record.exitSignal = signal ?? undefined;
  await Promise.race([outputClosed, delay(OUTPUT_DRAIN_MS)]);
  markStopping(record, 'EssentialContainerExited', exitReason(record));
  await context.finish(record);
}

function exitReason(record: TaskRecord): string {
  const how = [`exit code ${record.view.exitCode ?? 'unknown'}`, record.exitSignal ? `signal ${record.exitSignal}` : '']
    .filter(Boolean)
    .join(', ');
  const stderr = record.stderrTail.length ? `; last stderr: ${record.stderrTail.join(' | ')}` : '';
  return `Essential container in task exited (${how})${stderr}`;
}

function answersHealth(ip: string, port: number, token: string | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    const headers = token === undefined ? {} : { Authorization: `Bearer ${token}` };
    const request = httpRequest({ host: ip, port, path: '/health', method: 'GET', agent: false, timeout: 1000, headers }, (response) => {
      response.resume();
      resolve(response.statusCode === 200);
    });
    request.on('timeout', () => request.destroy());
    request.on('error', () => resolve(false));
    request.end();
  });
}
