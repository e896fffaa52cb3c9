// Section 1: how fast Slack gets its HTTP 200. Each request is a signed `event_callback` mention in
// a new thread, sent one at a time (latency, not throughput) and timed client-side from send to the
// end of the response. The same requests are then given to the webhook handler as an API Gateway
// event, without HTTP, to separate the stand-in's HTTP overhead from the handler's own time.
import type { TestStack } from '../test/support/local-stack.ts';
import { SIGNING_SECRET } from '../test/support/local-stack.ts';
import { apiGatewayEvent, loadMention, signedMention, type SignedEvent } from './slack-events.ts';
import { waitForQuiet, runsSummary } from './quiet.ts';
import { summarize, type Summary } from './stats.ts';

/** Requests sent before measuring, so JIT warm-up and first-use caches don't land in the sample. */
const WARM_UP = 5;

export interface AckSeries {
  label: string;
  /** The very first request of the series (for HTTP: the first webhook call of the process, cold). */
  first: number;
  stats: Summary;
  non2xx: number;
  /** How long the runs these requests triggered took to finish after the last ack. */
  drainMs: number;
}

export interface AckResult {
  http: AckSeries;
  direct: AckSeries;
}

async function timeHttp(url: string, event: SignedEvent): Promise<{ ms: number; status: number }> {
  const started = performance.now();
  const response = await fetch(url, { method: 'POST', headers: event.headers, body: event.body });
  await response.arrayBuffer();
  return { ms: performance.now() - started, status: response.status };
}

async function timeDirect(stack: TestStack, event: SignedEvent): Promise<{ ms: number; status: number }> {
  const apiEvent = apiGatewayEvent(event); // built before the clock starts: the stand-in's part, not the handler's
  const started = performance.now();
  const result = (await stack.cloud.handlers.webhook(apiEvent)) as { statusCode?: number };
  return { ms: performance.now() - started, status: result.statusCode ?? 200 };
}

async function series(
  stack: TestStack,
  label: string,
  count: number,
  send: (event: SignedEvent) => Promise<{ ms: number; status: number }>,
): Promise<AckSeries> {
  const fixture = loadMention();
  const samples: number[] = [];
  let first = Number.NaN;
  let non2xx = 0;
  const runsBefore = runsSummary(stack).total;
  for (let i = 0; i < WARM_UP + count; i++) {
    // Signing happens before the clock starts, as Slack signs before it sends.
    const { ms, status } = await send(signedMention(fixture, SIGNING_SECRET));
    if (i === 0) first = ms;
    if (status < 200 || status >= 300) non2xx++;
    if (i >= WARM_UP) samples.push(ms);
  }
  // Every mention starts a run; let them all finish before anything else is measured.
  const drainMs = await waitForQuiet(stack, runsBefore + WARM_UP + count);
  return { label, first, stats: summarize(samples), non2xx, drainMs };
}

export async function measureAcks(stack: TestStack, count: number): Promise<AckResult> {
  const http = await series(stack, 'HTTP → API Gateway stand-in → webhook', count, (e) => timeHttp(stack.cloud.slackEventsUrl, e));
  const direct = await series(stack, 'webhook handler called directly', count, (e) => timeDirect(stack, e));
  return { http, direct };
}
