// Section 2's breakdown: where one model step's milliseconds and AWS calls go, by the function that
// spends them: the webhook (both deliveries of the mention), dispatch, then agent-step: prepare, the
// model step and the finish (one invocation, the Prepare state, for a plain reply: split where the
// model step's first call arrived and where its context save was answered). A function's time is its Lambda invocations' (the local Lambda records when each
// started and returned); its AWS time is the sum of its calls' front-door times (request arrival →
// response sent, the emulator's work and the local IAM included, the SDK's signing and parsing not).
import { FUNCTION_ENTRIES, type FunctionRole } from '../infra/function-entries.ts';
import type { Invocation } from '../packages/local-cloud/src/lambda/runtime.ts';
import type { TestStack } from '../test/support/local-stack.ts';
import { arrival, PHASES, sandboxStartWrites, type AwsCall, type Phase } from './aws-calls.ts';
import { phaseAt, phaseOf } from './calls.ts';
import type { Timeline } from './conversation.ts';
import { summarize, type Summary } from './stats.ts';

/** What one step of one conversation cost. */
export interface StepCost {
  invocations: number;
  /** Summed over the step's invocations: invoked → returned. */
  functionMs: number;
  /** Every AWS call, the model call included (as section 3 counts them). */
  awsCalls: number;
  /** Summed front-door time of the calls (the model call has none: the Bedrock fake is no front door). */
  awsMs: number;
  /** Of awsMs, the wait on the emulators behind the doors. */
  upstreamMs: number;
  slackCalls: number;
}

/** One conversation's costs by step, and the time spent between the functions. */
export interface ConversationCost {
  steps: Record<Phase, StepCost>;
  /** Whole path − the time some function of the run was running: SQS and the event source mapping, Step Functions, Lambda invokes. */
  betweenMs: number;
  /** The time of the whole path during which at least one of the run's AWS calls was at a front door (overlapping calls count once). */
  awsInFlightMs: number;
  /** Post → run ended. */
  wholeMs: number;
}

/** The records of the stand-ins a conversation left: read them from these positions on. */
export interface RecordMarks {
  awsCalls: number;
  invocations: number;
  slackCalls: number;
}

export const marksOf = (stack: TestStack): RecordMarks => ({
  awsCalls: stack.cloud.awsCalls.length,
  invocations: stack.cloud.lambda.invocations.length,
  slackCalls: stack.slack.calls.length,
});

const ROLE_OF_ENTRY = new Map(Object.entries(FUNCTION_ENTRIES).map(([role, entry]) => [entry as string, role as FunctionRole]));

export function roleOf(stack: TestStack, invocation: Invocation): FunctionRole | undefined {
  return ROLE_OF_ENTRY.get(stack.cloud.lambda.configuration(invocation.functionId)?.entry ?? '');
}

const RUN_ROLES: FunctionRole[] = ['webhook', 'dispatch', 'agentStep'];

/**
 * The costs of the conversation whose records start at `from`; `aws` are its calls as the bench's
 * recorder names them (awsCallRecorder), recorded over the same stretch.
 */
export function conversationCost(stack: TestStack, t: Timeline, from: RecordMarks, aws: AwsCall[]): ConversationCost {
  const steps = Object.fromEntries(
    PHASES.map((p) => [p, { invocations: 0, functionMs: 0, awsCalls: 0, awsMs: 0, upstreamMs: 0, slackCalls: 0 }]),
  ) as Record<Phase, StepCost>;
  const busy: [number, number][] = [];
  for (const invocation of stack.cloud.lambda.invocations.slice(from.invocations)) {
    const role = roleOf(stack, invocation);
    if (!role || !RUN_ROLES.includes(role) || invocation.endedAt === undefined || invocation.at > t.endedAt) continue;
    const step = role === 'agentStep' ? stateAt(invocation.at, t) : (role as Phase);
    steps[step].invocations++;
    if (role === 'agentStep') {
      // One invocation can run prepare, the first model step and the finish: its time is split where
      // each began.
      for (const [phase, from, to] of AGENT_STEP_PARTS(t)) {
        steps[phase].functionMs += Math.max(0, Math.min(to, invocation.endedAt) - Math.max(from, invocation.at));
      }
    } else steps[step].functionMs += invocation.endedAt - invocation.at;
    busy.push([invocation.at, invocation.endedAt]);
  }
  const ofTheRun = (c: AwsCall) => c.service === 'Bedrock Runtime' || (c.fn !== undefined && RUN_ROLES.includes(c.fn));
  const ofThisRun = aws.filter((c) => c.source === 'handlers' && ofTheRun(c) && c.at <= t.endedAt);
  const sandboxStart = sandboxStartWrites(ofThisRun);
  for (const call of ofThisRun) {
    const step = steps[phaseOf(call, t, sandboxStart)];
    step.awsCalls++;
    step.awsMs += call.durationMs ?? 0;
    step.upstreamMs += call.upstreamMs ?? 0;
  }
  // Slack calls carry no caller: once the run has started, they are its states' (the webhook makes none when warm).
  const slackStep = (at: number) => (at >= (t.entered.Prepare ?? Infinity) ? stateAt(at, t) : phaseAt(at, t));
  for (const call of stack.slack.calls.slice(from.slackCalls).filter((c) => c.at <= t.endedAt)) steps[slackStep(call.at)].slackCalls++;
  const inFlight = ofThisRun.filter((c) => c.durationMs !== undefined).map((c): [number, number] => [arrival(c), c.at]);
  return {
    steps,
    betweenMs: t.endedAt - t.postedAt - coveredMs(busy, t.postedAt, t.endedAt),
    awsInFlightMs: coveredMs(inFlight, t.postedAt, t.endedAt),
    wholeMs: t.endedAt - t.postedAt,
  };
}

/** The agent-step parts of the run, each with the stretch of time it had (NaN bounds: none found, the part is empty). */
const AGENT_STEP_PARTS = (t: Timeline): [Phase, number, number][] => {
  const modelAt = Number.isNaN(t.modelStepAt) ? Infinity : t.modelStepAt;
  const finishAt = Number.isNaN(t.finishAt) ? Infinity : t.finishAt;
  return [
    ['prepare', -Infinity, modelAt],
    ['model', modelAt, finishAt],
    ['finish', finishAt, Infinity],
  ];
};

/** The agent-step part of the run at `at` (the run may start before the second delivery is acked). */
function stateAt(at: number, t: Timeline): Phase {
  if (!(at >= t.modelStepAt)) return 'prepare';
  return at < t.finishAt ? 'model' : 'finish';
}

/** How much of [from, to] lies inside at least one of the intervals (overlapping invocations count once). */
function coveredMs(intervals: [number, number][], from: number, to: number): number {
  let covered = 0;
  let reached = from;
  for (const [start, end] of [...intervals].sort((a, b) => a[0] - b[0])) {
    const [s, e] = [Math.max(start, reached), Math.min(end, to)];
    if (e > s) covered += e - s;
    reached = Math.max(reached, Math.min(end, to));
  }
  return covered;
}

export type CostColumn = keyof StepCost | 'outsideAwsMs';

/** Per step and column, the p50 (and spread) over the conversations; `total` sums the steps per conversation first. */
export function summarizeCosts(costs: ConversationCost[]): {
  steps: Record<Phase | 'total', Record<CostColumn, Summary>>;
  between: Summary;
  awsInFlight: Summary;
  /** Whole path − awsInFlight, per conversation. */
  besidesAws: Summary;
} {
  const columns: CostColumn[] = ['invocations', 'functionMs', 'awsCalls', 'awsMs', 'upstreamMs', 'slackCalls', 'outsideAwsMs'];
  const value = (s: StepCost, column: CostColumn) => (column === 'outsideAwsMs' ? s.functionMs - s.awsMs : s[column]);
  const total = (c: ConversationCost, column: CostColumn) => PHASES.reduce((sum, p) => sum + value(c.steps[p], column), 0);
  const ofStep = (pick: (c: ConversationCost, column: CostColumn) => number) =>
    Object.fromEntries(columns.map((column) => [column, summarize(costs.map((c) => pick(c, column)))])) as Record<CostColumn, Summary>;
  const steps = Object.fromEntries([
    ...PHASES.map((p) => [p, ofStep((c, column) => value(c.steps[p], column))] as const),
    ['total', ofStep(total)] as const,
  ]) as Record<Phase | 'total', Record<CostColumn, Summary>>;
  return {
    steps,
    between: summarize(costs.map((c) => c.betweenMs)),
    awsInFlight: summarize(costs.map((c) => c.awsInFlightMs)),
    besidesAws: summarize(costs.map((c) => c.wholeMs - c.awsInFlightMs)),
  };
}
