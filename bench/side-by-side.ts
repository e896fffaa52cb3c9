// Section 8: the runtime side by side with the reference bot (bench/reference-bot.ts) on the same
// fakes, the model answering each step after BENCH_MODEL_MS (default 1 s) as a real one would take
// time. Two kinds of exchange, each measured from the user's post to the reply complete in Slack:
//   - a 1-step reply: a mention in a new thread, answered in one model step;
//   - a 4-step tool turn: a mention in a thread whose sandbox already runs, three bash `true` tool
//     calls (one per model step) and the answer in a fourth.
// Samples alternate between the two bots, so both see the same machine state. The runtime runs with
// settings.json sandbox.startEarly off (as in section 2): a sandbox per new thread is a process on
// this machine, not a task elsewhere.
import type { RecordedRequest, ScriptedTurn } from '../packages/local-cloud/src/bedrock.ts';
import { DEFAULT_MODEL_ID } from '../shared/defaults.ts';
import { runIdFor } from '../shared/ids.ts';
import type { TestStack } from '../test/support/local-stack.ts';
import { BOT_TOKEN, SIGNING_SECRET } from '../test/support/local-stack.ts';
import { plainAnswer } from './conversation.ts';
import { startReferenceBot, type ReferenceBot } from './reference-bot.ts';
import { summarize, type Summary } from './stats.ts';

/** Model steps of a tool turn: three tool calls, then the answer. */
export const TOOL_TURN_STEPS = 4;
const TOOL_MARK = 'side by side: tool turn';
const REPLY_MARK = 'side by side: reply';
const WARM_UP = 1;

export interface SideBySideResult {
  n: number;
  modelMs: number;
  reply: { runtime: Summary; reference: Summary };
  toolTurn: { runtime: Summary; reference: Summary };
}

/** Tool results since the conversation's last prompt (the trailing tool call / result pairs). */
function toolResultsSincePrompt(request: RecordedRequest): number {
  let results = 0;
  for (const message of [...(request.body.messages ?? [])].reverse()) {
    const content = message.content ?? [];
    if (message.role === 'user' && !content.some((b) => b.toolResult)) break;
    results += content.filter((b) => b.toolResult).length;
  }
  return results;
}

/** The same model for both bots: each step after `modelMs`; a tool turn asks for `true` until three results are in. */
function sideBySideModel(modelMs: number) {
  return (request: RecordedRequest): ScriptedTurn => {
    const all = JSON.stringify(request.body.messages ?? []);
    if (!all.includes(TOOL_MARK) && !all.includes(REPLY_MARK)) return plainAnswer();
    const wantsTool = all.includes(TOOL_MARK) && toolResultsSincePrompt(request) < TOOL_TURN_STEPS - 1;
    return wantsTool
      ? { firstByteDelayMs: modelMs, toolUses: [{ name: 'bash', input: { command: 'true' } }] }
      : { firstByteDelayMs: modelMs, text: 'Done.' };
  };
}

/** When the bot's reply to a post was complete in the thread: the last version of its last message since the post. */
async function replyCompleteAt(stack: TestStack, channel: string, threadTs: string, postedAt: number): Promise<number> {
  const reply = await stack.slack.waitFor(() => {
    const mine = stack.slack.messages
      .thread(channel, threadTs)
      .filter((m) => m.bot_id && !m.local.deleted && m.local.createdAt >= postedAt);
    return mine.length > 0 && !mine.some((m) => m.local.stream?.state === 'streaming') ? mine : undefined;
  }, 60_000);
  return Math.max(...reply.map((m) => m.local.versions.at(-1)?.at ?? m.local.createdAt));
}

type Side = 'runtime' | 'reference';

/** One exchange on one side: post → reply complete (ms); the runtime's run must also have ended. */
async function exchange(stack: TestStack, bot: ReferenceBot, side: Side, text: string, threadTs?: string) {
  stack.slack.setEventsUrl(side === 'runtime' ? stack.cloud.slackEventsUrl : bot.url);
  const postedAt = Date.now();
  const posted = await stack.slack.postUserMessage({ text: `<@${stack.slack.botUserId}> ${text}`, ...(threadTs ? { threadTs } : {}) });
  if (posted.status !== 200) throw new Error(`Slack delivery to the ${side} failed with HTTP ${posted.status}`);
  if (side === 'runtime') {
    const execution = await stack.cloud.stepFunctions.waitForExecution(
      runIdFor(`slack:${posted.channel}:${posted.threadTs}`, posted.ts),
      120_000,
    );
    if (execution.status !== 'SUCCEEDED') throw new Error(`Run ${execution.name} ended ${execution.status}: ${execution.error ?? ''}`);
  }
  const doneAt = await replyCompleteAt(stack, posted.channel, posted.threadTs, postedAt);
  if (bot.errors.length) throw new Error(`The reference bot failed: ${String(bot.errors[0])}`);
  return { ms: doneAt - postedAt, threadTs: posted.threadTs };
}

export async function measureSideBySide(stack: TestStack, n: number, modelMs: number): Promise<SideBySideResult> {
  const { env } = stack.cloud;
  const bot = await startReferenceBot({
    signingSecret: SIGNING_SECRET,
    botToken: BOT_TOKEN,
    slackApiUrl: stack.slack.apiUrl,
    bedrockEndpoint: stack.bedrock.endpoint,
    region: env.AWS_REGION ?? 'us-east-1',
    modelId: DEFAULT_MODEL_ID,
  });
  stack.bedrock.setDefault(sideBySideModel(modelMs));
  const samples: Record<'reply' | 'toolTurn', Record<Side, number[]>> = {
    reply: { runtime: [], reference: [] },
    toolTurn: { runtime: [], reference: [] },
  };
  try {
    // A thread per side for the tool turns, its sandbox (the runtime's) started by the first one.
    const toolThreads: Partial<Record<Side, string>> = {};
    for (const side of ['runtime', 'reference'] as const) {
      toolThreads[side] = (await exchange(stack, bot, side, `${TOOL_MARK} (warm-up)`)).threadTs;
    }
    for (let i = 0; i < WARM_UP + n; i++) {
      for (const side of ['runtime', 'reference'] as const) {
        const reply = await exchange(stack, bot, side, `${REPLY_MARK} ${i}`);
        const turn = await exchange(stack, bot, side, `${TOOL_MARK} ${i}`, toolThreads[side]);
        if (i < WARM_UP) continue;
        samples.reply[side].push(reply.ms);
        samples.toolTurn[side].push(turn.ms);
      }
    }
  } finally {
    stack.slack.setEventsUrl(stack.cloud.slackEventsUrl);
    stack.bedrock.setDefault(plainAnswer);
    await bot.close();
  }
  return {
    n,
    modelMs,
    reply: { runtime: summarize(samples.reply.runtime), reference: summarize(samples.reply.reference) },
    toolTurn: { runtime: summarize(samples.toolTurn.runtime), reference: summarize(samples.toolTurn.reference) },
  };
}
