// One conversation through the whole local cloud, as the e2e tests drive it (a user mentions the
// bot in a new thread; Slack delivers `message` and `app_mention`), with its timeline read from the
// records the stand-ins keep: Step Functions state entries and the Slack message's last update.
// Timestamps are Date.now() on both sides, so they line up with the execution history.
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '../shared/aws/dynamodb.ts';
import { runIdFor } from '../shared/ids.ts';
import type { ScriptedTurn } from '../packages/local-cloud/src/bedrock.ts';
import type { LocalExecution } from '../packages/local-cloud/src/step-functions/index.ts';
import type { TestStack } from '../test/support/local-stack.ts';
import { arrival, awsCallRecorder, isLogWrite, sandboxStartWrites, type AwsCall } from './aws-calls.ts';

/** What the bench's model answers unless a section scripts it: a short answer, no delay between stream events. */
export const plainAnswer = (): ScriptedTurn => ({ text: 'Done.' });

export interface Timeline {
  threadId: string;
  /** Before the user's message is delivered. */
  postedAt: number;
  /** Both deliveries acknowledged. */
  ackedAt: number;
  execution: LocalExecution;
  /** The run's states, by name, with when each was entered. */
  entered: Record<string, number>;
  /**
   * When the run's first model step began: the arrival of its first call, the read (or transaction)
   * before the model call (prepare's last writes may still be in flight beside it). It runs in the
   * Prepare state's invocation, right after prepare, so no state entry marks it. NaN when the run made
   * no model call.
   */
  modelStepAt: number;
  /** When the first model request reached the Bedrock fake. NaN when the run made none. */
  modelCallAt: number;
  /**
   * When the run's finish began: the Finish state's entry, or, when the last model step finished the
   * run in its own invocation, the answer to that step's last write (its context save or its ending
   * transaction, sent together). NaN when neither is found.
   */
  finishAt: number;
  /** The execution ended (the lease was released by its finish just before). */
  endedAt: number;
  /** The bot's reply was complete in Slack (its last stream call). */
  replyAt: number;
  /** The first characters of a bot reply were visible in the thread (time to first token). */
  firstTextAt: number;
  /** The Web API method that made them visible (chat.startStream, chat.appendStream, chat.postMessage…). */
  firstTextVia: string;
}

function botReplyDone(stack: TestStack, channel: string, threadTs: string) {
  const replies = stack.slack.messages.thread(channel, threadTs).filter((m) => m.bot_id && !m.local.deleted);
  const open = replies.some((m) => m.local.stream?.state === 'streaming');
  return replies.length > 0 && !open ? replies.at(-1) : undefined;
}

/**
 * When the thread first showed the bot's text: the earliest version of any bot message in it with
 * characters in it (a stream opened empty shows nothing until its first append).
 */
function firstBotText(stack: TestStack, channel: string, threadTs: string): { at: number; via: string } {
  const shown = stack.slack.messages
    .thread(channel, threadTs)
    .filter((m) => m.bot_id)
    .flatMap((m) => m.local.versions.filter((v) => v.text.trim() !== ''))
    .sort((a, b) => a.at - b.at);
  return { at: shown[0]?.at ?? Number.NaN, via: shown[0]?.method ?? 'none' };
}

async function actorStatus(stack: TestStack, threadId: string): Promise<unknown> {
  // The local cloud's own DynamoDB client: this check is not one of the handlers' calls.
  const db = documentClient(stack.cloud.clients.dynamodb);
  const out = await db.send(new GetCommand({ TableName: stack.cloud.names.table, Key: { pk: `actor#${threadId}`, sk: 'actor' } }));
  return out.Item?.status;
}

/** How a model step begins: a read of its flags and reply record, or a transaction that also reserves on budgets. */
const BEGINNING_CALLS = ['BatchGetItem', 'TransactWriteItems'];

/** The run's first model request: the first whose messages hold the prompt. */
function firstModelRequest(stack: TestStack, prompt: string, requestsFrom: number) {
  return stack.bedrock.requests.slice(requestsFrom).find((r) => JSON.stringify(r.body.messages ?? []).includes(prompt));
}

/**
 * The arrival of agent-step's first call of the run's first model step: its beginning call, the last
 * DynamoDB read or transaction before the model request (prepare's own is its first call, its
 * later writes go to S3), the sandbox start's item write aside (prepare's, beside the step).
 */
function firstModelStepAt(calls: AwsCall[], modelCallAt: number): number {
  const sandboxStart = sandboxStartWrites(calls);
  const begins = calls
    .filter((c) => c.fn === 'agentStep' && BEGINNING_CALLS.includes(c.operation) && !sandboxStart.has(c))
    .map(arrival)
    .filter((at) => at <= modelCallAt);
  return begins.length ? Math.max(...begins) : Number.NaN;
}

/**
 * The end of the run's last model step: the later answer of its last two writes, the context save
 * and the ending transaction, which go out together (agent-step's calls that arrived by the last
 * context save, the sandbox start's aside, and the finish's log write and sandbox read, begun
 * beside them).
 */
function lastModelStepEndAt(calls: AwsCall[]): number {
  const ofAgentStep = calls.filter((c) => c.fn === 'agentStep');
  const saves = ofAgentStep.filter((c) => c.operation === 'PutObject' && c.path.split('?')[0]!.endsWith('/context.jsonl'));
  if (saves.length === 0) return Number.NaN;
  const lastSent = Math.max(...saves.map(arrival));
  const sandboxStart = sandboxStartWrites(calls);
  const answers = ofAgentStep
    .filter(
      (c) => c.operation !== 'RunTask' && c.operation !== 'GetItem' && !sandboxStart.has(c) && !isLogWrite(c) && arrival(c) <= lastSent,
    )
    .map((c) => c.at);
  return Math.max(...answers);
}

export async function converse(stack: TestStack, text: string): Promise<Timeline> {
  const recorder = awsCallRecorder(stack);
  recorder.start();
  const requestsFrom = stack.bedrock.requests.length;
  const postedAt = Date.now();
  const posted = await stack.slack.postUserMessage({ text: `<@${stack.slack.botUserId}> ${text}` });
  const ackedAt = Date.now();
  if (posted.status !== 200) throw new Error(`Slack delivery failed with HTTP ${posted.status}`);
  const threadId = `slack:${posted.channel}:${posted.threadTs}`;
  const execution = await stack.cloud.stepFunctions.waitForExecution(runIdFor(threadId, posted.ts), 30_000);
  if (execution.status !== 'SUCCEEDED') throw new Error(`Run ${execution.name} ended ${execution.status}: ${execution.error ?? ''}`);
  const reply = await stack.slack.waitFor(() => botReplyDone(stack, posted.channel, posted.threadTs), 10_000);
  // Correctness, not timing: a run that ends must leave its thread idle.
  const status = await actorStatus(stack, threadId);
  if (status !== 'idle') throw new Error(`Thread ${threadId} is ${String(status)} after its run ended`);
  const firstText = firstBotText(stack, posted.channel, posted.threadTs);
  const calls = recorder.stop();
  const entered = Object.fromEntries(execution.history.map((h) => [h.name, h.enteredAt]));
  const modelCallAt = firstModelRequest(stack, text, requestsFrom)?.time ?? Number.NaN;
  return {
    threadId,
    postedAt,
    ackedAt,
    execution,
    entered,
    modelStepAt: firstModelStepAt(calls, modelCallAt),
    modelCallAt,
    finishAt: entered.Finish ?? lastModelStepEndAt(calls),
    endedAt: execution.stopDate?.getTime() ?? Date.now(),
    replyAt: reply.local.versions.at(-1)?.at ?? reply.local.createdAt,
    firstTextAt: firstText.at,
    firstTextVia: firstText.via,
  };
}
