// The model step: one Bedrock call with the run's prompt and the thread's context, the reply
// streamed into the thread, the answer saved; then where the loop goes (tools, another turn for
// steering that arrived meanwhile, or the end), within the run's limits.
import { channelKeyOf } from '../../ids.ts';
import { costOf } from '../../model/pricing.ts';
import type { ContentBlock, Message } from '@aws-sdk/client-bedrock-runtime';
import { takeSteer } from '../actor.ts';
import { materializeImages } from '../../platforms/attachments.ts';
import { mergeConsecutiveRoles, streamModel, textOf } from '../../model/converse.ts';
import type { LoopState, RunInput } from '../../contracts.ts';
import { applySteer } from '../steer.ts';
import { type ContextEntry, type LoadedContext, saveLoadedContext, toBedrockMessages, contextIdOf } from '../../context/store.ts';
import { appendToolResult, repairToolPairs } from '../../context/tool-calls.ts';
import { toolCallRefusal } from '../../tools/allowed-tools.ts';
import { compactIfNeeded } from './compact.ts';
import { sendConnectLinks } from './connect-links.ts';
import { type AgentDeps, stepMeta } from './deps.ts';
import { CUT_OFF_NOTE, openReply } from './reply.ts';
import { postedMessage, postOnce, writeRecord } from '../ledger.ts';
import { RUN_RECORD } from '../../table.ts';
import { isStopped, routeAfterAnswer, runLimitReached, stoppedAt, watchForStop } from './run-control.ts';
import { loadSnapshot, type RunSnapshot } from './snapshot.ts';
import type { PreparedRun } from './prepare.ts';
import { withRunContext } from './run-context.ts';
import { runToolsOf } from './run-tools.ts';
import { showStopCard } from './stop-card.ts';
import { showChildProgress } from '../subagents/progress.ts';
import { beginModelStep, endModelStep } from './budget.ts';
import { countModelStep } from './step-metrics.ts';
import { countBudgetRefusal } from '../../observability/run-metrics.ts';
import { noteHooks, postToolUseLambdaHooks, runLambdaHooks } from '../../hooks/step-hooks.ts';

/** How many more turns Stop hooks may ask for in one run: a hook that always asks cannot keep a run going. */
export const MAX_STOP_HOOK_TURNS = 3;

/**
 * The Stop hooks, as the model ends its turn: one may ask for another turn with a message, which the
 * model gets as the next user turn, at most MAX_STOP_HOOK_TURNS times a run.
 */
async function stopHooksContinue(
  deps: AgentDeps,
  run: RunInput,
  snapshot: RunSnapshot,
  entries: ContextEntry[],
  content: ContentBlock[],
  meta: ContextEntry['meta'],
): Promise<boolean> {
  const turns = entries.filter((e) => e.meta.runId === run.runId && e.meta.hookContinue).length;
  if (turns >= MAX_STOP_HOOK_TURNS) return false;
  const verdict = await runLambdaHooks(deps, run, snapshot, 'Stop', { answer: textOf(content) });
  if (!verdict) return false;
  noteHooks(entries.at(-1), verdict.notes);
  if (!verdict.continue) return false;
  entries.push({
    role: 'user',
    content: [{ text: `[a Stop hook asks for one more turn]\n${verdict.continue}` }],
    meta: { ...meta, hookContinue: true },
  });
  return true;
}

/**
 * A cache point after the last message: the next step of the run (same prefix plus this step's
 * answer and tool results) reads everything up to here from Bedrock's prompt cache.
 */
export function withHistoryCachePoint(messages: Message[], enabled: boolean): Message[] {
  const last = messages[messages.length - 1];
  if (!enabled || !last) return messages;
  return [...messages.slice(0, -1), { ...last, content: [...(last.content ?? []), { cachePoint: { type: 'default' } }] }];
}

/** Calls over the per-turn limit are answered with an error, not run. */
function refuseExtraToolCalls(entries: ContextEntry[], content: ContentBlock[], limit: number, meta: ContextEntry['meta']): void {
  for (const block of content.filter((b) => b.toolUse).slice(limit)) {
    const use = block.toolUse!;
    appendToolResult(
      entries,
      { toolUseId: use.toolUseId!, name: use.name ?? '', input: {} },
      {
        status: 'error',
        text: `not run: a response may make at most ${limit} tool calls (maxToolCallsPerTurn); make the rest in your next response`,
      },
      meta,
    );
  }
}

/** Calls outside the agent's tools, or that the offered skills' `allowed-tools` do not allow, are answered with an error, never run. */
function refuseDisallowedToolCalls(
  entries: ContextEntry[],
  content: ContentBlock[],
  { toolPolicy: policy, tools, agent }: Pick<RunSnapshot, 'toolPolicy' | 'tools' | 'agent'>,
  meta: ContextEntry['meta'],
): void {
  if (!policy && !tools) return;
  const answered = new Set(entries.flatMap((e) => e.content.flatMap((b) => (b.toolResult?.toolUseId ? [b.toolResult.toolUseId] : []))));
  for (const use of content.flatMap((b) => (b.toolUse ? [b.toolUse] : []))) {
    if (answered.has(use.toolUseId!)) continue;
    const input = (use.input ?? {}) as Record<string, unknown>;
    const refusal =
      tools && !tools.includes(use.name ?? '')
        ? `not run: the agent ${agent ?? ''} works with ${tools.join(', ')} only (tools in its AGENT.md)`
        : toolCallRefusal(policy, use.name ?? '', input);
    if (refusal)
      appendToolResult(entries, { toolUseId: use.toolUseId!, name: use.name ?? '', input }, { status: 'error', text: refusal }, meta);
  }
}

/** Said once in the thread when a run's MCP servers could not all be listed: their tools are not offered in this run. */
function unavailableNotice(unavailable: { server: string; reason: string }[]): string {
  const names = unavailable.map(({ server, reason }) => `${server} (${reason})`).join(', ');
  return `I could not reach the MCP server${unavailable.length === 1 ? '' : 's'} ${names}, so ${unavailable.length === 1 ? 'its' : 'their'} tools are not available in this run.`;
}

/** What the context keeps of an answer: a cut-off marked as such, never an empty message. */
function answerContent(content: ContentBlock[], cutOff: boolean): ContentBlock[] {
  const marked = cutOff ? [...content, { text: `\n\n${CUT_OFF_NOTE}` }] : content;
  const empty = marked.length === 0 || (textOf(marked) === '' && !marked.some((b) => 'toolUse' in b));
  return empty ? [{ text: '(no reply)' }] : marked;
}

export interface ModelStepOptions {
  /**
   * The run as prepare left it in this invocation, its writes maybe still in flight (the step's
   * first call goes out beside them, and the model is called only once they are answered).
   */
  prepared?: Pick<PreparedRun, 'snapshot' | 'context' | 'written'>;
  /**
   * Told, with the context, as an answer that would end the run goes to its last writes: the
   * invocation's finish starts its own work beside them. The run may still go on (a steer, a Stop
   * hook) or turn out stopped.
   */
  ending?: (entries: ContextEntry[]) => void;
}

export async function modelStep(deps: AgentDeps, run: RunInput, loop: LoopState, options: ModelStepOptions = {}): Promise<LoopState> {
  const { prepared, ending } = options;
  if (prepared) {
    const { snapshot, context, written } = prepared;
    return withRunContext(deps, contextIdOf(run), { context }, (inHand) => answer(deps, run, loop, snapshot, inHand, written, ending));
  }
  const snapshot = loadSnapshot(deps, run);
  // Awaited below; if the context read fails first, this read's failure is not left unhandled.
  snapshot.catch(() => undefined);
  // Read together: a step after prepare usually finds both kept by its container.
  return withRunContext(deps, contextIdOf(run), loop.contextVersion, async (context) =>
    answer(deps, run, loop, await snapshot, context, undefined, ending),
  );
}

async function answer(
  deps: AgentDeps,
  run: RunInput,
  loop: LoopState,
  snapshot: RunSnapshot,
  context: LoadedContext,
  written?: Promise<unknown>,
  ending?: ModelStepOptions['ending'],
): Promise<LoopState> {
  const done = context.entries.find((e) => e.role === 'assistant' && e.meta.runId === run.runId && e.meta.step === loop.step);
  if (done) {
    await written;
    return routeAfterAnswer(loop.step, done.content, 'end_turn');
  }
  // A run with MCP servers lists their tools (the Connect step) before its first model call.
  const runTools = await runToolsOf(deps, run, snapshot);
  if (runTools === 'connect') {
    await written;
    return { step: loop.step, next: 'connect', ...(context.version ? { contextVersion: context.version } : {}) };
  }

  const thread = deps.thread(run);
  // A subagent's part of the thread's one status line, beside the step's own work.
  const progress = run.child ? showChildProgress(deps, run, `thinking (model call ${loop.step + 1})…`) : undefined;
  if (runTools.listing?.unavailable.length && loop.step === 0) {
    await postOnce(deps.ledger, run.runId, RUN_RECORD.mcpUnavailable, () =>
      thread.post(unavailableNotice(runTools.listing!.unavailable)).then(postedMessage),
    );
  }
  if (runTools.listing?.toConnect?.length && loop.step === 0) await sendConnectLinks(deps, run, thread, runTools.listing.toConnect);
  // One call: the stop flag, an earlier attempt's reply and the budgets' reservation, together (a
  // read when no budget applies); beside prepare's writes when they are still in flight.
  const [began, prepareWrote] = await Promise.allSettled([
    beginModelStep(deps, run, snapshot, { system: snapshot.system, entries: context.entries }, loop.step),
    written,
  ]);
  if (began.status === 'rejected') throw began.reason;
  const start = began.value;
  if (prepareWrote.status === 'rejected') {
    // The run is not prepared: no model call (the retry prepares it again); a reservation goes back.
    if ('spend' in start) await endModelStep(deps, run, loop.step, start.spend, { usage: undefined });
    throw prepareWrote.reason;
  }
  if ('stopped' in start) return stoppedAt(loop.step);
  if ('refused' in start) {
    // A subagent's refusal is its parent's result to read (and the parent's own next step says it in the thread).
    if (!run.child)
      await postOnce(deps.ledger, run.runId, RUN_RECORD.budgetRefused(loop.step), () => thread.post(start.refused).then(postedMessage));
    if (deps.metrics) countBudgetRefusal(deps.metrics, run.prompt);
    return { step: loop.step, next: 'finish', stopReason: 'budget' };
  }
  const { spend } = start;
  await compactIfNeeded(deps, run, snapshot, context).catch(async (error: unknown) => {
    await endModelStep(deps, run, loop.step, spend, { usage: undefined });
    throw error;
  });
  // Results of sandbox and reach calls, as the run's PostToolUse lambda hooks leave them (none: no call).
  await postToolUseLambdaHooks(deps, run, snapshot, context.entries).catch(async (error: unknown) => {
    await endModelStep(deps, run, loop.step, spend, { usage: undefined });
    throw error;
  });
  const reply = openReply(deps, run, loop.step, thread, start.earlier);
  const messages = await materializeImages(deps.store, repairToolPairs(mergeConsecutiveRoles(toBedrockMessages(context.entries))));
  const started = deps.now();
  let firstTextAt: number | undefined;
  let posted: string | undefined;
  // A stop ends the model stream at once (the execution itself is stopped by the one who asked).
  const stopWatch = watchForStop(deps, run);
  const result = await streamModel(
    deps.model,
    {
      modelId: snapshot.modelId,
      system: snapshot.system,
      messages: withHistoryCachePoint(messages, snapshot.promptCaching),
      maxOutputTokens: snapshot.maxOutputTokens,
      temperature: snapshot.temperature,
      toolConfig: (snapshot.tools ? runTools.tools.only(snapshot.tools) : runTools.tools).toolConfig(snapshot.promptCaching),
    },
    (delta) => {
      firstTextAt ??= deps.now();
      reply.onText(delta);
    },
    stopWatch.signal,
  )
    .catch((error: unknown) => {
      if (stopWatch.signal.aborted) return undefined;
      throw error;
    })
    .finally(async () => {
      stopWatch.stop();
      posted = await reply.close();
    })
    .catch(async (error: unknown) => {
      await endModelStep(deps, run, loop.step, spend, { usage: undefined, posted });
      throw error;
    });
  if (!result) {
    // What a stopped stream cost is not reported: the reservation stays counted.
    if (posted) await writeRecord(deps.ledger, run.runId, RUN_RECORD.reply(loop.step), postedMessage({ id: posted }));
    deps.logger.info('model stream stopped', { runId: run.runId, step: loop.step });
    return stoppedAt(loop.step);
  }
  const latencyMs = deps.now() - started;

  const cutOff = result.stopReason === 'max_tokens';
  const content = answerContent(result.content, cutOff);
  await reply.settle(textOf(content), cutOff);
  const meta = stepMeta(deps.now, run, loop.step);
  // Usage per step (cache reads and writes included) stays with the answer it paid for, priced.
  const usage = snapshot.price ? { ...result.usage, costUsd: costOf(result.usage, snapshot.price) } : result.usage;
  // The exchange log names the reply's message from here, without reading its record.
  const replyId = posted ?? start.earlier?.messageId;
  context.entries.push({ role: 'assistant', content, meta: { ...meta, usage, ...(replyId ? { replyId } : {}) } });
  refuseExtraToolCalls(context.entries, content, snapshot.maxToolCallsPerTurn, meta);
  refuseDisallowedToolCalls(context.entries, content, snapshot, meta);
  let decision = routeAfterAnswer(loop.step, content, result.stopReason);
  // The answer goes into context.jsonl while the step's ending write is made: on AWS an S3 round trip
  // less per model step; both have landed before the step goes on. If the run turns out stopped, the
  // whole answer it streamed into the thread may be in the context too: the save is conditional on
  // the version the run read, so it never overwrites what the thread's next run wrote. A stream the
  // stop watch cut short is a part-answer: it is saved (after the write) only if the run goes on.
  const saveBeside = !stopWatch.signal.aborted;
  if (decision.next === 'finish' && saveBeside) ending?.([...context.entries]);
  const [ended, save] = await Promise.allSettled([
    // One write: the settlement, the reply's record, and whether the run was stopped (or, when it
    // would end, steered) while the answer streamed in.
    endModelStep(deps, run, loop.step, spend, { usage, posted, check: { noSteer: decision.next === 'finish' } }),
    saveBeside ? saveLoadedContext(deps.store, contextIdOf(run), context) : undefined,
  ]);
  if (ended.status === 'rejected') throw ended.reason;
  let resave = !saveBeside;
  if (ended.value === 'flagged') {
    // Stopped while the answer streamed in: what streamed stays in the thread, but the thread may
    // already belong to the next run, so this run starts no more writes. The ones it made beside
    // the ending write (the answer's save, the log's) are conditional on what they read: they
    // overwrite nothing of the next run's (which at worst writes again), and a save that lost to
    // the next run's is no failure.
    if (await isStopped(deps, run)) return stoppedAt(loop.step);
    if (decision.next === 'finish' && !run.child) {
      // Words the user steered with while the model answered: answer them in another turn.
      const steer = await takeSteer(deps.actor, run.threadId, run.runId);
      if (steer.length) {
        applySteer(context.entries, steer, meta);
        decision = { ...decision, next: 'model' };
        resave = true;
      }
    }
  }
  if (save.status === 'rejected') throw save.reason;
  if (decision.next === 'finish' && result.stopReason === 'end_turn' && snapshot.hooks) {
    // The hooks' notes go on the answer, and a turn one asks for after it.
    resave = true;
    if (await stopHooksContinue(deps, run, snapshot, context.entries, content, meta)) decision = { ...decision, next: 'model' };
  }
  const limit = decision.next !== 'finish' ? runLimitReached(loop.step, snapshot, deps.now()) : undefined;
  if (resave) await saveLoadedContext(deps.store, contextIdOf(run), context);
  // The channel (adapter:channel) lets the dashboard rank channels by cost from these lines.
  deps.logger.info('model step', {
    runId: run.runId,
    channel: channelKeyOf(run.threadId),
    step: loop.step,
    modelId: snapshot.modelId,
    stopReason: result.stopReason,
    attempts: result.attempts,
    durationMs: deps.now() - started,
    ...usage,
  });
  countModelStep(deps.metrics, run, {
    modelId: snapshot.modelId,
    usage,
    throttles: result.throttles,
    latencyMs,
    ...(firstTextAt !== undefined ? { firstTokenMs: firstTextAt - started } : {}),
    ...(snapshot.agent ? { agent: snapshot.agent } : {}),
  });
  await progress;
  if (limit) {
    if (!run.child) await thread.post(limit);
    return { ...decision, next: 'finish', stopReason: 'limit' };
  }
  if (decision.next === 'tool' && !run.child) {
    await showStopCard(deps, run, thread).catch((error: unknown) => deps.logger.warn('could not post the stop card', { error }));
  }
  return decision;
}
