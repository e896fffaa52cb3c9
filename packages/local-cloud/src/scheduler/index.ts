// Local stand-in for Amazon EventBridge Scheduler. It serves the part of the Scheduler API that
// production code calls through @aws-sdk/client-scheduler (restJson1), so the same code runs
// unchanged against AWS_ENDPOINT_URL_SCHEDULER=<endpoint>, and it fires the schedules itself, on a
// clock that tests can drive. What it reads (expressions.ts) and how it fires (fire-times.ts,
// firing.ts) follow the service's documented behaviour; cron() with L, W, # or a year other than
// '*' is refused.
import { serveRestJson } from '../aws-protocol.ts';
import { listenLocally } from '../http-server.ts';
import { LOCAL_ACCOUNT, LOCAL_PARTITION, LOCAL_REGION } from '../template.ts';
import { schedulerRoutes } from './api.ts';
import type { SchedulerClock } from './clock.ts';
import { createFiring, type LocalDeadLetter, type LocalFiring } from './firing.ts';
import { createScheduleStore, type LocalSchedule } from './schedules.ts';

export { createManualClock, type ManualClock, type SchedulerClock } from './clock.ts';
export type { LocalDeadLetter, LocalFiring } from './firing.ts';
export type { LocalSchedule, ScheduleTarget } from './schedules.ts';

export interface LocalSchedulerOptions {
  /** The stand-in's HTTP port on 127.0.0.1. Default: any free port. */
  port?: number;
  /**
   * Default Date.now, and then a timer fires what is due every tickIntervalMs. With a clock given,
   * nothing fires by itself: call tick() or advance().
   */
  clock?: SchedulerClock;
  /** Real-time mode only. Default 1000. */
  tickIntervalMs?: number;
  /** Invokes the target (e.g. the Lambda function behind targetArn) with the substituted Input. */
  invokeTarget(targetArn: string, input: string): Promise<void>;
  /** A firing failed for good (after its retries), or a real-time tick failed. */
  onError?(error: unknown): void;
}

export interface LocalScheduler {
  endpoint: string;
  /** By `${group}/${name}`. */
  schedules: ReadonlyMap<string, LocalSchedule>;
  /** Every invocation attempt, in order. */
  firings: readonly LocalFiring[];
  deadLetters: readonly LocalDeadLetter[];
  /** The scheduler's current time. */
  now(): number;
  /**
   * Moves time forward by ms, firing everything that comes due on the way in time order (a
   * periodic schedule once per due instant), each awaited; the clock stands at each due instant
   * while its target runs. Moves the clock through its `set`, else an offset of the stand-in's own.
   */
  advance(ms: number): Promise<void>;
  /** Fires what is due now (in time order), awaiting the targets. */
  tick(): Promise<void>;
  close(): Promise<void>;
}

export async function startLocalScheduler(options: LocalSchedulerOptions): Promise<LocalScheduler> {
  const clock: SchedulerClock = options.clock ?? { now: () => Date.now() };
  let offsetMs = 0;
  let closing = false;
  const now = () => clock.now() + offsetMs;
  function setNow(epochMs: number): void {
    if (clock.set) clock.set(epochMs - offsetMs);
    else offsetMs += epochMs - now();
  }
  const store = createScheduleStore(`arn:${LOCAL_PARTITION}:scheduler:${LOCAL_REGION}:${LOCAL_ACCOUNT}`, now);
  const firing = createFiring({ ...options, store, now, setNow, isClosing: () => closing });
  const routes = schedulerRoutes(store, now);
  const server = await listenLocally((request, response) => void serveRestJson('scheduler', routes, request, response), {
    port: options.port,
  });
  const timer = options.clock === undefined ? startTicking(firing.tick, options) : undefined;

  let closed: Promise<void> | undefined;
  function close(): Promise<void> {
    closed ??= (async () => {
      closing = true;
      if (timer) clearInterval(timer);
      const serverClosed = server.close();
      await firing.idle();
      await serverClosed;
    })();
    return closed;
  }

  const { firings, deadLetters, advance, tick } = firing;
  return { endpoint: server.url, schedules: store.views, firings, deadLetters, now, advance, tick, close };
}

/** Real time: a tick every tickIntervalMs, one at a time (a slow target does not pile ticks up). */
function startTicking(tick: () => Promise<void>, options: LocalSchedulerOptions): NodeJS.Timeout {
  const report = (error: unknown) => (options.onError ? options.onError(error) : console.error('[scheduler] tick failed:', error));
  let tickPending = false;
  const timer = setInterval(() => {
    if (tickPending) return;
    tickPending = true;
    void tick()
      .catch(report)
      .finally(() => (tickPending = false));
  }, options.tickIntervalMs ?? 1000);
  timer.unref();
  return timer;
}
