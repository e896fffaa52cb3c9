// Section 2: what the runtime adds around one model call. Conversations run one after another with
// the Bedrock fake answering at once, so the whole path is almost all orchestration: webhook, SQS,
// dispatch, Step Functions, the agent-step Lambda's S3/DynamoDB work and Slack streaming. Each
// conversation is followed by the very same model request sent straight to the fake with the
// Bedrock Runtime client, so both samples see the same machine state.
import { BedrockRuntimeClient, ConverseStreamCommand, type ConverseStreamCommandInput } from '@aws-sdk/client-bedrock-runtime';
import type { TestStack } from '../test/support/local-stack.ts';
import { awsCallRecorder } from './aws-calls.ts';
import { conversationCost, marksOf, summarizeCosts, type ConversationCost } from './breakdown.ts';
import { converse, type Timeline } from './conversation.ts';
import { summarize, type Summary } from './stats.ts';

const WARM_UP = 2;

export interface StepResult {
  n: number;
  /** User message posted → run ended (reply complete, thread idle). */
  wholePath: Summary;
  /** User message posted → reply complete in Slack. */
  replyVisible: Summary;
  /** User message posted → the reply's first characters visible in the thread (time to first token). */
  firstToken: Summary;
  /** How the first characters came (Web API method → conversations). */
  firstTokenVia: Map<string, number>;
  /** Where the milliseconds and AWS calls of each conversation went, by function (p50 over the conversations). */
  costs: ReturnType<typeof summarizeCosts>;
  /** Where the time goes, per phase of the path. */
  phases: { name: string; stats: Summary }[];
  /** The same ConverseStream request, sent directly (send → stream fully read). */
  direct: Summary;
  /** The model step minus the direct call made right after it: the step's S3, DynamoDB, Slack work. */
  modelStepExtra: Summary;
}

/** The request the agent step just sent, as the fake recorded it, replayable with the SDK. */
function lastModelRequest(stack: TestStack): ConverseStreamCommandInput {
  const request = stack.bedrock.requests.at(-1);
  if (!request) throw new Error('The Bedrock fake has not been called');
  const { messages, system, inferenceConfig } = request.body;
  return { modelId: request.modelId, messages, system, inferenceConfig };
}

async function directModelCall(bedrock: BedrockRuntimeClient, input: ConverseStreamCommandInput): Promise<number> {
  const started = performance.now();
  const response = await bedrock.send(new ConverseStreamCommand(input));
  for await (const _event of response.stream ?? []) {
    // Read to the end, as the model step does.
  }
  return performance.now() - started;
}

function phasesOf(t: Timeline): Record<string, number> {
  const e = t.entered;
  return {
    'post → both deliveries acked': t.ackedAt - t.postedAt,
    'post → execution started (webhook, SQS, dispatch)': t.execution.startDate.getTime() - t.postedAt,
    'Prepare state: prepare (agent-step)': t.modelStepAt - (e.Prepare ?? Number.NaN),
    'Prepare state: then the model step, incl. Bedrock': t.finishAt - t.modelStepAt,
    'Prepare state: then the finish → execution ended': t.endedAt - t.finishAt,
    'model step began → first characters in the thread': t.firstTextAt - t.modelStepAt,
  };
}

export async function measureSteps(stack: TestStack, count: number): Promise<StepResult> {
  // Same client settings as the handlers' (shared/aws/bedrock.ts: one attempt, default HTTP/2 handler),
  // signing as the operator: the handlers' region and credentials live in their workers, not here.
  const { env } = stack.cloud;
  const bedrock = new BedrockRuntimeClient({
    maxAttempts: 1,
    endpoint: stack.bedrock.endpoint,
    region: env.AWS_REGION,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const timelines: Timeline[] = [];
  const direct: number[] = [];
  const costs: ConversationCost[] = [];
  const recorder = awsCallRecorder(stack);
  try {
    for (let i = 0; i < WARM_UP + count; i++) {
      const marks = marksOf(stack);
      recorder.start();
      const timeline = await converse(stack, `step bench ${i}`);
      // Before the direct call: that model request is the bench's, not the run's.
      const calls = recorder.stop();
      const ms = await directModelCall(bedrock, lastModelRequest(stack));
      if (i < WARM_UP) continue;
      timelines.push(timeline);
      direct.push(ms);
      costs.push(conversationCost(stack, timeline, marks, calls));
    }
  } finally {
    bedrock.destroy();
  }
  const phaseSamples = timelines.map(phasesOf);
  const names = Object.keys(phaseSamples[0] ?? {});
  const modelState = timelines.map((t) => t.finishAt - t.modelStepAt);
  return {
    n: timelines.length,
    wholePath: summarize(timelines.map((t) => t.endedAt - t.postedAt)),
    replyVisible: summarize(timelines.map((t) => t.replyAt - t.postedAt)),
    firstToken: summarize(timelines.map((t) => t.firstTextAt - t.postedAt)),
    firstTokenVia: timelines.reduce((m, t) => m.set(t.firstTextVia, (m.get(t.firstTextVia) ?? 0) + 1), new Map<string, number>()),
    costs: summarizeCosts(costs),
    phases: names.map((name) => ({ name, stats: summarize(phaseSamples.map((p) => p[name]!)) })),
    direct: summarize(direct),
    // Paired: each model step against the direct call made right after it.
    modelStepExtra: summarize(modelState.map((x, i) => x - direct[i]!)),
  };
}
