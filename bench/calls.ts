// Section 3: the API calls behind one run (prepare + one model step + finish), by service and
// operation and by the function that made them. Measured on a warm system (after section 2), so
// cold-start-only calls (auth.test, a Secrets Manager read in AWS) are not in the counts.
import type { TestStack } from '../test/support/local-stack.ts';
import { arrival, isLogWrite, PHASES, sandboxStartWrites, type AwsCall, type AwsCallRecorder, type Phase } from './aws-calls.ts';
import { converse, type Timeline } from './conversation.ts';
import { waitForQuiet, runsSummary } from './quiet.ts';

export interface CallsResult {
  /** `${service}\t${operation}` → calls per phase. */
  aws: Map<string, Record<Phase, number>>;
  /** The same keys → summed front-door time (ms) per phase; model calls have none (no front door). */
  awsMs: Map<string, Record<Phase, number>>;
  /** The event source mapping's own SQS calls during the run. */
  platform: Map<string, number>;
  slack: Map<string, Record<Phase, number>>;
  /** Model calls, which carry no caller (the Bedrock fake is no front door): placed by time. */
  placedByTime: number;
  bedrockRequestsSeen: number;
  lambdaInvocations: Record<string, number>;
  stateTransitions: number;
  /** The longest chains of the run's AWS calls each sent once the one before it was answered, per phase and from dispatch to the run's end. */
  sequential: Record<Phase | 'run' | 'firstToken', number>;
}

/**
 * How many AWS round trips follow one another in `calls`: the longest chain of calls each sent
 * (arrived) once the one before it was answered. Calls in flight together count once. In AWS each
 * is a network round trip, whatever the local emulators' speed, so this is what carries over of
 * the calls' latency. (The earliest-answered call first gives the longest chain of intervals that
 * do not overlap.) A model call, which has no front door, is a point at its arrival.
 */
export function sequentialRoundTrips(calls: readonly AwsCall[]): number {
  let chain = 0;
  let answeredAt = -Infinity;
  for (const call of [...calls].sort((a, b) => a.at - b.at)) {
    if (arrival(call) < answeredAt) continue;
    chain++;
    answeredAt = call.at;
  }
  return chain;
}

/** Where a moment of the run falls: before the acks → webhook, then the run's states. */
export function phaseAt(at: number, t: Timeline): Phase {
  const e = t.entered;
  if (at <= t.ackedAt) return 'webhook';
  if (at < (e.Prepare ?? Infinity)) return 'dispatch';
  if (!(at >= t.modelStepAt)) return 'prepare';
  return at < t.finishAt ? 'model' : 'finish';
}

/**
 * The phase of an AWS call: the webhook's and dispatch's by the role that signed it; agent-step's
 * by when it arrived, against the states of the run (prepare, model and finish are all agent-step),
 * except the sandbox start's (`sandboxStart`: sandboxStartWrites), which is prepare's wherever it
 * lands, the exchange's log write and sandbox read, which are the finish's, and those before the
 * model call, which are prepare's but for the step's beginning call.
 * Arrival, not the recorded end: a step's last call can be recorded after the next state began.
 */
export function phaseOf(call: AwsCall, t: Timeline, sandboxStart?: Set<AwsCall>): Phase {
  if (call.fn === 'webhook' || call.fn === 'dispatch') return call.fn;
  if (sandboxStart?.has(call)) return 'prepare';
  // The exchange's log write is the finish's, wherever it lands: the model step whose answer ends
  // the run starts it beside its own last writes.
  if (call.fn === 'agentStep' && isLogWrite(call)) return 'finish';
  // So is the sandbox item's read for the run's sandbox share, begun beside the log write. (After
  // its model call a model step reads an item only when its ending write finds a flag, or while a
  // stream outlasts the stop watch's 300 ms: not in the bench's runs.)
  if (call.fn === 'agentStep' && call.operation === 'GetItem' && arrival(call) >= t.modelCallAt) return 'finish';
  // Before the model call, the model step has made one call, its beginning read (or transaction),
  // the last DynamoDB call there; prepare's last writes (to S3) may still be in flight beside it.
  if (call.fn === 'agentStep' && arrival(call) < t.modelCallAt)
    return call.service === 'DynamoDB' && arrival(call) >= t.modelStepAt ? 'model' : 'prepare';
  const at = phaseAt(arrival(call), t);
  return call.fn === 'agentStep' && (at === 'webhook' || at === 'dispatch') ? 'prepare' : at;
}

const zero = (): Record<Phase, number> => ({ webhook: 0, dispatch: 0, prepare: 0, model: 0, finish: 0 });

/** Per key and phase: how many items, or the sum of `value` over them. */
function tally<T>(
  items: T[],
  key: (item: T) => string,
  phase: (item: T) => Phase,
  value: (item: T) => number = () => 1,
): Map<string, Record<Phase, number>> {
  const counts = new Map<string, Record<Phase, number>>();
  for (const item of items) {
    const row = counts.get(key(item)) ?? zero();
    row[phase(item)] += value(item);
    counts.set(key(item), row);
  }
  return new Map([...counts].sort(([a], [b]) => a.localeCompare(b)));
}

export async function countOneRun(stack: TestStack, counter: AwsCallRecorder): Promise<CallsResult> {
  const slackBefore = stack.slack.calls.length;
  const deliveriesBefore = stack.slack.deliveries.length;
  const bedrockBefore = stack.bedrock.requests.length;
  const batchesBefore = stack.cloud.poller.batches;
  const runsBefore = runsSummary(stack).total;
  counter.start();
  let timeline: Timeline;
  let calls: AwsCall[];
  try {
    timeline = await converse(stack, 'count the calls of this run');
    // The event source mapping deletes the message after dispatch returns: wait for that too.
    await waitForQuiet(stack, runsBefore + 1);
  } finally {
    calls = counter.stop();
  }
  // The run's functions only: a sandbox reaper tick in the same window is not the run's.
  const ofTheRun = (c: AwsCall) => c.service === 'Bedrock Runtime' || c.fn === 'webhook' || c.fn === 'dispatch' || c.fn === 'agentStep';
  const handlerCalls = calls.filter((c) => c.source === 'handlers' && ofTheRun(c) && c.at <= timeline.endedAt);
  const platform = new Map<string, number>();
  for (const c of calls.filter((c) => c.source === 'platform')) {
    platform.set(c.operation, (platform.get(c.operation) ?? 0) + 1);
  }
  const slackCalls = stack.slack.calls.slice(slackBefore).filter((c) => c.at <= timeline.endedAt);
  const tasks = timeline.execution.history.filter((h) => h.type === 'Task').length;
  const sandboxStart = sandboxStartWrites(handlerCalls);
  // The sandbox's early start goes on beside the run (prepare starts it, the invocation awaits it
  // before it returns): no part of the chain the run waits for while a model takes seconds.
  const waitedFor = handlerCalls.filter((c) => c.operation !== 'RunTask' && !sandboxStart.has(c));
  // From dispatch on: the webhook's second delivery goes on beside the run, and its calls could fill
  // the chain's gaps (the webhook's own chain is its phase's).
  const fromDispatch = waitedFor.filter((c) => c.fn !== 'webhook');
  const sequential = {
    run: sequentialRoundTrips(fromDispatch),
    // Up to the model call, whose first chunk is the first token's (the reply's post is Slack's).
    firstToken: sequentialRoundTrips(fromDispatch.filter((c) => c.at <= timeline.modelCallAt)),
  } as CallsResult['sequential'];
  for (const phase of PHASES)
    sequential[phase] = sequentialRoundTrips(waitedFor.filter((c) => phaseOf(c, timeline, sandboxStart) === phase));
  return {
    sequential,
    aws: tally(
      handlerCalls,
      (c) => `${c.service}\t${c.operation}`,
      (c) => phaseOf(c, timeline, sandboxStart),
    ),
    awsMs: tally(
      handlerCalls,
      (c) => `${c.service}\t${c.operation}`,
      (c) => phaseOf(c, timeline, sandboxStart),
      (c) => c.durationMs ?? 0,
    ),
    platform,
    slack: tally(
      slackCalls,
      (c) => c.method,
      (c) => phaseAt(c.at, timeline),
    ),
    placedByTime: handlerCalls.filter((c) => c.service === 'Bedrock Runtime').length,
    bedrockRequestsSeen: stack.bedrock.requests.length - bedrockBefore,
    lambdaInvocations: {
      webhook: stack.slack.deliveries.length - deliveriesBefore,
      dispatch: stack.cloud.poller.batches - batchesBefore,
      'agent-step': tasks,
    },
    stateTransitions: timeline.execution.history.length,
  };
}
