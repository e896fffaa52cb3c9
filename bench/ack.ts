// Section 1: how fast Slack gets its HTTP 200. Each request is a signed `event_callback` mention in
// a new thread, sent one at a time (latency, not throughput) and timed client-side from send to the
// end of the response. Every mention starts a run, and on a 2-core machine a run's work competes
// with the next ack, so the requests are sent in two ways:
//   isolated      the next request waits until the previous mention's run has ended: the ack path
//                 alone, sent over HTTP and given to the webhook handler directly (the difference
//                 is the HTTP stand-in's overhead);
//   back-to-back  the next request goes as soon as the previous is acked, so runs overlap acks, as
//                 in a burst of mentions.
import type { TestStack } from '../test/support/local-stack.ts';
import { cpuMeter, type CpuUse } from './cpu.ts';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { SIGNING_SECRET } from '../test/support/local-stack.ts';
import { runIdFor } from '../shared/ids.ts';
import { apiGatewayEvent, loadMention, signedMention, type SignedEvent } from './slack-events.ts';
import { waitForQuiet, runsSummary } from './quiet.ts';
import { summarize, type Summary } from './stats.ts';

/** Requests sent before measuring, so JIT warm-up and first-use caches don't land in the sample. */
const WARM_UP = 5;

type Send = (event: SignedEvent) => Promise<{ ms: number; status: number }>;

export interface AckSeries {
  label: string;
  stats: Summary;
  non2xx: number;
  /** How long the runs still going after the last ack took to finish. */
  drainMs: number;
  /** The machine's CPU while the series' requests were sent (not the drain). */
  cpu: CpuUse;
  /**
   * How late this process's event loop ran what was due while the requests were sent (p99, ms): the
   * local cloud's front doors, stand-ins and API Gateway all answer on it, so an ack waits that long
   * behind whatever else it is doing.
   */
  loopDelayP99Ms: number;
}

export interface AckResult {
  /** The first webhook call of the process (the Chat SDK sets itself up). */
  coldMs: number;
  /** The Slack Web API calls made during that first call. */
  coldSlackCalls: string[];
  isolatedHttp: AckSeries;
  isolatedDirect: AckSeries;
  burstHttp: AckSeries;
}

function httpSender(stack: TestStack): Send {
  return async (event) => {
    const started = performance.now();
    const response = await fetch(stack.cloud.slackEventsUrl, { method: 'POST', headers: event.headers, body: event.body });
    await response.arrayBuffer();
    return { ms: performance.now() - started, status: response.status };
  };
}

function directSender(stack: TestStack): Send {
  return async (event) => {
    const apiEvent = apiGatewayEvent(event); // built before the clock starts: the stand-in's part, not the handler's
    const started = performance.now();
    const result = (await stack.cloud.handlers.webhook(apiEvent)) as { statusCode?: number };
    return { ms: performance.now() - started, status: result.statusCode ?? 200 };
  };
}

/** Event-driven (no polling): resolves when the run this mention started has ended. */
async function runEnded(stack: TestStack, event: SignedEvent): Promise<void> {
  await stack.cloud.stepFunctions.waitForExecution(runIdFor(event.threadId, event.messageId), 30_000);
}

async function series(stack: TestStack, label: string, count: number, send: Send, isolated: boolean): Promise<AckSeries> {
  const fixture = loadMention();
  const samples: number[] = [];
  let non2xx = 0;
  const runsBefore = runsSummary(stack).total;
  const meter = cpuMeter();
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  for (let i = 0; i < WARM_UP + count; i++) {
    // Signing happens before the clock starts, as Slack signs before it sends.
    const event = signedMention(fixture, SIGNING_SECRET);
    const { ms, status } = await send(event);
    if (status < 200 || status >= 300) non2xx++;
    if (i >= WARM_UP) samples.push(ms);
    if (isolated && status === 200) await runEnded(stack, event);
  }
  const cpu = meter.stop();
  loop.disable();
  const loopDelayP99Ms = loop.percentile(99) / 1e6;
  // Let every run finish before anything else is measured.
  const drainMs = await waitForQuiet(stack, runsBefore + WARM_UP + count);
  return { label, stats: summarize(samples), non2xx, drainMs, cpu, loopDelayP99Ms };
}

export async function measureAcks(stack: TestStack, count: number): Promise<AckResult> {
  const http = httpSender(stack);
  const cold = signedMention(loadMention(), SIGNING_SECRET);
  const slackBefore = stack.slack.calls.length;
  const { ms: coldMs } = await http(cold);
  const coldSlackCalls = stack.slack.calls.slice(slackBefore).map((c) => c.method);
  await runEnded(stack, cold);
  return {
    coldMs,
    coldSlackCalls,
    isolatedHttp: await series(stack, 'HTTP → API Gateway stand-in → webhook, isolated', count, http, true),
    isolatedDirect: await series(stack, 'webhook handler called directly, isolated', count, directSender(stack), true),
    burstHttp: await series(stack, 'HTTP, back-to-back (runs overlap the acks)', count, http, false),
  };
}
