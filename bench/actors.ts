// Section 6: thread actors under pressure, through the whole local cloud.
//
// Stop latency. One thread runs a bash tool call that sleeps (`sleep 300 & echo $! > pidfile; wait`)
// and the user posts `stop` in the thread (the Slack stand-in's signed `message` delivery). The
// webhook flags the run in the actor item and calls StopExecution; the sandbox step, which polls the
// flag every 300 ms while the command runs (watchForStop), then cancels the command and the sandbox
// kills its process tree. Measured from just before the post to
//   (a) the execution ABORTED in the Step Functions stand-in (its stopDate),
//   (b) the sleeping process gone: process.kill(pid, 0) polled every few ms (a zombie counts as gone),
//   (c) "Stopped." in the thread (the stand-in's message record),
// and to the thread idle again (the run-ended rule released the lease). The same
// thread is reused, so its sandbox is already up; the stop is posted at a random point of the poll
// period, so the samples spread over it.
//
// Dispatcher throughput. N mentions, each in a new thread, posted as fast as the machine allows with
// at most POST_CONCURRENCY in flight, and the Bedrock fake answering at once: how fast prompts are
// acked (webhook), admitted (dispatch took the lease and started the execution: its startDate), and
// their runs completed. Then the dispatch handler alone, given SQS events of 10 records (as the event
// source mapping builds them) for new threads, with the prompt bodies the webhook produced in the
// series above (only the thread's ts changed): first one batch at a time with its runs drained
// between batches, then back to back on as many lanes as the local event source mapping polls with.
import { existsSync, readFileSync } from 'node:fs';
import { randomUUID, createHash } from 'node:crypto';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '../shared/aws/dynamodb.ts';
import { executionArnFor } from '../shared/run/control.ts';
import { runIdFor } from '../shared/ids.ts';
import { workspaceLayout } from '../shared/sandbox/workspace.ts';
import type { LocalExecution } from '../packages/local-cloud/src/step-functions/index.ts';
import type { TestStack } from '../test/support/local-stack.ts';
import { hostPidOf } from '../test/support/sandbox-pids.ts';
import { runsSummary, waitForQuiet } from './quiet.ts';
import { summarize, type Summary } from './stats.ts';
import { cpuMeter, type CpuUse } from './cpu.ts';

/** Stops before measuring: the first one also waits for the thread's sandbox to start. */
const STOP_WARM_UP = 1;
/** The sandbox step's flag poll (shared/run/steps/run-control.ts watchForStop). */
export const STOP_POLL_MS = 300;
/** How often the bench looks for the sleeping process. */
export const PID_POLL_MS = 2;
export const OBEY_WITHIN_MS = 1000;
export const POST_CONCURRENCY = 20;
/** FIFO event source mappings take at most 10 records per batch. */
export const BATCH_SIZE = 10;
/** Batches given to the dispatch handler one at a time, runs drained between them. */
const ISOLATED_BATCHES = 3;
/** The local event source mapping's concurrent pollers (packages/local-cloud/src/sqs-poller.ts default). */
export const DISPATCH_LANES = 2;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 60_000,
  everyMs = 10,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(everyMs);
  }
}

const executionOf = (stack: TestStack, runId: string) =>
  stack.cloud.stepFunctions.executions.get(executionArnFor(stack.cloud.stateMachineArn, runId));

async function actorStatus(stack: TestStack, threadId: string): Promise<unknown> {
  // The local cloud's own DynamoDB client: not one of the handlers' calls.
  const db = documentClient(stack.cloud.clients.dynamodb);
  const out = await db.send(
    new GetCommand({ TableName: stack.cloud.names.table, Key: { pk: `actor#${threadId}`, sk: 'actor' }, ConsistentRead: true }),
  );
  return out.Item?.status;
}

// ---------------------------------------------------------------------------------------------
// Stop latency
// ---------------------------------------------------------------------------------------------

const HAS_PROC = existsSync('/proc/self/stat');

/** Gone: no such process, or a zombie (it has exited; only its parent has not reaped it yet). */
function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
  if (!HAS_PROC) return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // pid (comm) state ...: comm may hold spaces and parentheses, the state follows the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
  } catch {
    return true;
  }
}

/** Resolves with Date.now() at the first poll that finds the process gone. */
async function whenGone(pid: number, timeoutMs = 30_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  while (!processGone(pid)) {
    if (Date.now() > deadline) throw new Error(`Process ${pid} still alive ${timeoutMs} ms after the stop`);
    await sleep(PID_POLL_MS);
  }
  return Date.now();
}

export interface StopSample {
  aborted: number;
  killed: number;
  visible: number;
  idle: number;
  ack: number;
}

export interface StopResult {
  n: number;
  samples: StopSample[];
  aborted: Summary;
  killed: Summary;
  visible: Summary;
  idle: Summary;
  ack: Summary;
}

const stoppedReplies = (stack: TestStack, channel: string, threadTs: string, since: number) =>
  stack.slack.messages.thread(channel, threadTs).filter((m) => m.bot_id && m.text === 'Stopped.' && m.local.createdAt >= since);

export async function measureStops(stack: TestStack, count: number): Promise<StopResult> {
  const samples: StopSample[] = [];
  const bot = stack.slack.botUserId;
  let thread: { channel: string; threadTs: string; threadId: string } | undefined;
  for (let i = 0; i < STOP_WARM_UP + count; i++) {
    const pidFile = `stop-bench-${i}.pid`;
    stack.bedrock.script({
      toolUses: [
        { toolUseId: `tu_stop_bench_${i}_${Date.now()}`, name: 'bash', input: { command: `sleep 300 & echo $! > ${pidFile}; wait` } },
      ],
    });
    const posted = await stack.slack.postUserMessage({
      text: thread ? 'sleep again' : `<@${bot}> sleep a while`,
      threadTs: thread?.threadTs,
    });
    if (posted.status !== 200) throw new Error(`Slack delivery failed with HTTP ${posted.status}`);
    thread ??= { channel: posted.channel, threadTs: posted.threadTs, threadId: `slack:${posted.channel}:${posted.threadTs}` };
    const { threadId } = thread;
    const runId = runIdFor(threadId, posted.ts);
    // The command is running once its pid file holds a live pid (the sandbox step is watching the flag by then).
    const scratch = workspaceLayout(threadId).scratchPath;
    const pid = await until('the sleeping command started', () => {
      const task = [...stack.cloud.ecs.tasks.values()].find((t) => t.status === 'RUNNING' && t.tags.some((x) => x.value === threadId));
      if (!task) return undefined;
      const path = `${task.workspace}/${scratch}/${pidFile}`;
      const value = existsSync(path) ? Number(readFileSync(path, 'utf8').trim()) : Number.NaN;
      // The sandbox's pid (a PID namespace of its own) as the host knows it.
      const host = Number.isInteger(value) && value > 0 ? hostPidOf(task.pid!, value) : undefined;
      return host !== undefined && !processGone(host) ? host : undefined;
    });
    const execution = executionOf(stack, runId);
    if (execution?.status !== 'RUNNING') throw new Error(`Run ${runId} is ${execution?.status ?? 'missing'} while its command sleeps`);
    await sleep(Math.random() * STOP_POLL_MS);

    const stopAt = Date.now();
    const killed = whenGone(pid);
    const stop = stack.slack.postUserMessage({ text: 'stop', threadTs: thread.threadTs });
    const ended = stack.cloud.stepFunctions.waitForExecution(runId, 30_000);
    const acked = await stop;
    const ackAt = Date.now();
    if (acked.status !== 200) throw new Error(`The stop's delivery failed with HTTP ${acked.status}`);
    const [killedAt, record] = await Promise.all([killed, ended]);
    if (record.status !== 'ABORTED') throw new Error(`Run ${runId} ended ${record.status} after the stop, not ABORTED`);
    const reply = await stack.slack.waitFor(() => stoppedReplies(stack, thread!.channel, thread!.threadTs, stopAt)[0], 10_000);
    await until(`${threadId} idle after the stop`, async () => (await actorStatus(stack, threadId)) === 'idle', 30_000, 5);
    const idleAt = Date.now();
    if (i < STOP_WARM_UP) continue;
    samples.push({
      aborted: (record.stopDate?.getTime() ?? Number.NaN) - stopAt,
      killed: killedAt - stopAt,
      visible: reply.local.createdAt - stopAt,
      idle: idleAt - stopAt,
      ack: ackAt - stopAt,
    });
  }
  const pick = (key: keyof StopSample) => summarize(samples.map((s) => s[key]));
  return {
    n: samples.length,
    samples,
    aborted: pick('aborted'),
    killed: pick('killed'),
    visible: pick('visible'),
    idle: pick('idle'),
    ack: pick('ack'),
  };
}

// ---------------------------------------------------------------------------------------------
// Dispatcher throughput
// ---------------------------------------------------------------------------------------------

/** Runs `task(0..count-1)` with at most `concurrency` in flight; results in index order. */
async function pool<T>(count: number, concurrency: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const results = new Array<T>(count);
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const i = next++;
      results[i] = await task(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
  return results;
}

/** The part of an SDK client this needs (its stack is typed per command; this middleware is the same for all). */
interface InitializeHost {
  middlewareStack: {
    add(
      middleware: (
        next: (args: unknown) => Promise<{ output: { Messages?: { Attributes?: Record<string, string> }[] } }>,
        context: { commandName?: string },
      ) => (args: unknown) => Promise<unknown>,
      options: { step: 'initialize'; name: string; override?: boolean },
    ): void;
  };
}

/**
 * Counts the messages the event source mapping receives (the local cloud's own SQS client) and how
 * many of them were redeliveries (ApproximateReceiveCount > 1: a visibility timeout ran out first).
 */
function countInboxReceives(stack: TestStack): () => { messages: number; redelivered: number } {
  const counts = { messages: 0, redelivered: 0 };
  let recording = true;
  (stack.cloud.clients.sqs as unknown as InitializeHost).middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      if (recording && context.commandName === 'ReceiveMessageCommand') {
        for (const m of result.output.Messages ?? []) {
          counts.messages++;
          if (Number(m.Attributes?.ApproximateReceiveCount ?? 1) > 1) counts.redelivered++;
        }
      }
      return result;
    },
    { step: 'initialize', name: 'benchInboxReceives', override: true },
  );
  return () => {
    recording = false;
    return { ...counts };
  };
}

interface Posted {
  ts: string;
  threadId: string;
  postedAt: number;
  ackedAt: number;
  status: number | null;
}

export interface ThroughputResult {
  threads: number;
  non2xx: number;
  /** From the first post (Date.now() before it) to ... */
  lastAckMs: number;
  lastStartMs: number;
  allDoneMs: number;
  /** Per prompt: its post acked → its execution started; post → started; started → ended. */
  ackToStart: Summary;
  postToStart: Summary;
  runTime: Summary;
  failedRuns: number;
  /** Batches the event source mapping handed to dispatch during the series, and the messages in them. */
  pollerBatches: number;
  received: { messages: number; redelivered: number };
  /** Prompts whose run started after the last ack, and how long after it the last one did. */
  backlogAtLastAck: number;
  /** The dispatch handler, called directly. */
  direct: { isolated: DispatchSeries; backToBack: DispatchSeries; drainMs: number };
  /** The machine's CPU from the first post to the last ack. */
  cpuWhilePosting: CpuUse;
}

export interface DispatchSeries {
  records: number;
  batches: number;
  lanes: number;
  /** First batch handed over → last batch returned (with drains, when runs were drained between batches). */
  wallMs: number;
  /** The handler's own time, summed over the batches. */
  handlerMs: number;
  batchMs: Summary;
  failures: number;
  /** Admissions that did not start a run within the series (they should all have). */
  notStarted: number;
}

/** A mention in a new thread, with its timeline. */
async function postMention(stack: TestStack, text: string): Promise<Posted> {
  const postedAt = Date.now();
  const posted = await stack.slack.postUserMessage({ text });
  return { ts: posted.ts, threadId: `slack:${posted.channel}:${posted.threadTs}`, postedAt, ackedAt: Date.now(), status: posted.status };
}

let sequence = 0;
/** An SQS record as the event source mapping builds it (packages/local-cloud/src/sqs-poller.ts), for a FIFO message. */
function sqsRecord(stack: TestStack, body: string, groupId: string, dedupId: string): SQSRecord {
  const now = String(Date.now());
  return {
    messageId: randomUUID(),
    receiptHandle: randomUUID(),
    body,
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: now,
      SenderId: 'AIDALOCAL',
      ApproximateFirstReceiveTimestamp: now,
      SequenceNumber: String(++sequence).padStart(20, '0'),
      MessageGroupId: groupId,
      MessageDeduplicationId: dedupId,
    },
    messageAttributes: {},
    md5OfBody: createHash('md5').update(body).digest('hex'),
    eventSource: 'aws:sqs',
    eventSourceARN: `arn:aws:sqs:us-east-1:000000000000:${stack.cloud.names.inboxUrl.split('/').pop() ?? 'inbox'}`,
    awsRegion: 'us-east-1',
  };
}

/**
 * `count` prompts for new threads, as the webhook would enqueue them: the captured prompt with its
 * thread's ts replaced by that of a new top-level message stored in the Slack stand-in (not delivered).
 */
async function promptBodies(
  stack: TestStack,
  template: { body: string; ts: string; text: string },
  count: number,
): Promise<{ body: string; threadId: string; ts: string }[]> {
  const out: { body: string; threadId: string; ts: string }[] = [];
  for (let i = 0; i < count; i++) {
    const posted = await stack.slack.postUserMessage({ text: template.text, events: [] });
    out.push({
      body: template.body.split(template.ts).join(posted.ts),
      threadId: `slack:${posted.channel}:${posted.threadTs}`,
      ts: posted.ts,
    });
  }
  return out;
}

async function dispatchSeries(
  stack: TestStack,
  prompts: { body: string; threadId: string; ts: string }[],
  lanes: number,
  drainBetween: boolean,
): Promise<DispatchSeries> {
  const batches: SQSEvent[] = [];
  const groups: { threadId: string; ts: string }[][] = [];
  for (let i = 0; i < prompts.length; i += BATCH_SIZE) {
    const slice = prompts.slice(i, i + BATCH_SIZE);
    batches.push({ Records: slice.map((p) => sqsRecord(stack, p.body, p.threadId, randomUUID())) });
    groups.push(slice);
  }
  const batchMs: number[] = [];
  let failures = 0;
  const wallStart = performance.now();
  await pool(batches.length, lanes, async (b) => {
    const started = performance.now();
    const result = (await stack.cloud.handlers.dispatch(batches[b]!)) as { batchItemFailures: unknown[] };
    const elapsed = performance.now() - started;
    batchMs.push(elapsed);
    failures += result.batchItemFailures.length;
    if (drainBetween)
      await Promise.all(groups[b]!.map((p) => stack.cloud.stepFunctions.waitForExecution(runIdFor(p.threadId, p.ts), 60_000)));
  });
  const wallMs = performance.now() - wallStart;
  const notStarted = prompts.filter((p) => !executionOf(stack, runIdFor(p.threadId, p.ts))).length;
  return {
    records: prompts.length,
    batches: batches.length,
    lanes,
    wallMs,
    handlerMs: batchMs.reduce((sum, x) => sum + x, 0),
    batchMs: summarize(batchMs),
    failures,
    notStarted,
  };
}

export async function measureThroughput(stack: TestStack, threads: number, dispatchThreads: number): Promise<ThroughputResult> {
  const runsBefore = runsSummary(stack).total;
  const batchesBefore = stack.cloud.poller.batches;
  const receives = countInboxReceives(stack);
  // The pollers' long polls already in flight (up to 1 s) do not go through the counter: let them end.
  await sleep(1200);
  const text = `<@${stack.slack.botUserId}> pressure`;
  const firstPost = Date.now();
  const cpu = cpuMeter();
  const posts = await pool(threads, POST_CONCURRENCY, () => postMention(stack, text));
  const cpuWhilePosting = cpu.stop();
  const executions: LocalExecution[] = await Promise.all(
    posts.map((p) => stack.cloud.stepFunctions.waitForExecution(runIdFor(p.threadId, p.ts), 120_000)),
  );
  await waitForQuiet(stack, runsBefore + threads);
  const pollerBatches = stack.cloud.poller.batches - batchesBefore;
  const received = receives();
  const started = executions.map((e) => e.startDate.getTime());
  const ended = executions.map((e) => e.stopDate?.getTime() ?? Number.NaN);

  // The dispatch handler alone, on the prompt bodies the webhook produced above.
  const sample = executions[0]!;
  const template = { body: JSON.stringify((sample.input as { prompt: unknown }).prompt), ts: posts[0]!.ts, text };
  const isolatedPrompts = await promptBodies(stack, template, ISOLATED_BATCHES * BATCH_SIZE);
  const runsBeforeDirect = runsSummary(stack).total;
  const isolated = await dispatchSeries(stack, isolatedPrompts, 1, true);
  const backToBackPrompts = await promptBodies(stack, template, dispatchThreads);
  const backToBack = await dispatchSeries(stack, backToBackPrompts, DISPATCH_LANES, false);
  const drainMs = await waitForQuiet(stack, runsBeforeDirect + isolatedPrompts.length + backToBackPrompts.length);

  const lastAck = Math.max(...posts.map((p) => p.ackedAt));
  return {
    threads,
    non2xx: posts.filter((p) => p.status !== 200).length,
    lastAckMs: lastAck - firstPost,
    lastStartMs: Math.max(...started) - firstPost,
    allDoneMs: Math.max(...ended) - firstPost,
    ackToStart: summarize(posts.map((p, i) => started[i]! - p.ackedAt)),
    postToStart: summarize(posts.map((p, i) => started[i]! - p.postedAt)),
    runTime: summarize(executions.map((e, i) => ended[i]! - started[i]!)),
    failedRuns: executions.filter((e) => e.status !== 'SUCCEEDED').length,
    pollerBatches,
    received,
    backlogAtLastAck: started.filter((at) => at > lastAck).length,
    direct: { isolated, backToBack, drainMs },
    cpuWhilePosting,
  };
}
