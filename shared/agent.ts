// The agent loop's steps, one Lambda invocation each, driven by the state machine:
// prepare -> model -> (model ...) -> finish, and fail from every Catch. Each step is idempotent:
// Step Functions and Lambda retries re-run code, so every effect is keyed by (run, step).
import type { Attachment, Thread } from 'chat';
import { attachmentBlocks, materializeImages, saveAttachments } from './attachments.ts';
import { STOP_ACTION } from './control.ts';
import type { ContentBlock, Message, SystemContentBlock } from '@aws-sdk/client-bedrock-runtime';
import { dataKeys, ROOT_KEYS, parseThreadId } from './ids.ts';
import { releaseLease, type ActorDeps, type Release } from './actor.ts';
import { readRecord, writeRecord, type LedgerDeps } from './ledger.ts';
import { mergeConsecutiveRoles, streamModel, textOf, type ModelDeps, type ModelResult } from './model.ts';
import {
  appendLog,
  loadContext,
  loadSettings,
  readText,
  saveContext,
  toBedrockMessages,
  writeText,
  type ContextEntry,
  type LogEntry,
  type StoreDeps,
} from './store.ts';
import { buildSystemPrompt } from './system-prompt.ts';
import { describeFailure, parseStepFailure } from './failures.ts';
import { createTextPipe } from './text-pipe.ts';
import type { LoopState, RunInput, Settings, StepEvent } from './schemas.ts';
import type { JsonLogger } from './log.ts';
import { CACHED_TOOL_CONFIG, TOOL_CONFIG, isSandboxTool } from './tools/specs.ts';
import { appendToolResult, pendingToolCall, repairToolPairs } from './tool-calls.ts';
import { runChatTool } from './tools/chat-tools.ts';
import { ensureSandbox, warmSandbox, type LifecycleDeps } from './sandbox/lifecycle.ts';
import { workspaceLayout } from './sandbox/workspace.ts';
import { runFlags, setExecution, takeSteer } from './actor.ts';
import { applySteer } from './steer.ts';
import { backfill, contextText } from './backfill.ts';
import { formatSkillsForPrompt, loadSkills, selectSkills } from './skills.ts';
import { archiveKey, bedrockSummarizer, compactContext, estimateTokens, needsCompaction } from './compaction.ts';
import { Actions, Button, Card, CardText } from 'chat';

export interface AgentDeps {
  store: StoreDeps;
  actor: ActorDeps;
  ledger: LedgerDeps;
  model: ModelDeps;
  defaultModelId: string;
  /** Rebuilds the run's thread (with its triggering message) so replies stream into it. */
  thread(run: RunInput): Thread;
  logger: JsonLogger;
  /** The per-thread sandbox (absent when the deployment has none: then only chat tools run). */
  sandbox?: LifecycleDeps;
  /** Restores a serialized attachment's download through the chat adapter (platform auth). */
  rehydrateAttachment?: (attachment: Attachment) => Attachment;
  /** Steps one execution takes before the run continues in a fresh one (default 1000). */
  handoffAfterSteps?: number;
  now?: () => Date;
}

/** What prepare decides once per run, so every step of the run uses the same prompt and model. */
export interface RunSnapshot {
  modelId: string;
  maxOutputTokens: number;
  temperature?: number;
  maxModelSteps: number;
  maxToolCallsPerTurn: number;
  maxRunMinutes: number;
  startedAt: number;
  /** cachePoint blocks after the stable system prompt, the tools, and the history. */
  promptCaching: boolean;
  compaction?: Settings['compaction'];
  system: SystemContentBlock[];
}

interface ReplyRecord {
  messageId: string;
}

/** A heartbeat's answer when nothing needs doing: not posted. */
export const HEARTBEAT_OK = 'HEARTBEAT_OK';

const snapshotKey = (run: RunInput) => `${dataKeys(run.threadId).threadDir}/runs/${run.runId}.json`;

function userText(run: RunInput): string {
  return contextText(run.prompt.author.userName, run.prompt.text);
}

export async function prepare(deps: AgentDeps, run: RunInput): Promise<LoopState> {
  const now = (deps.now ?? (() => new Date()))();
  const layout = workspaceLayout(run.threadId);
  // Memory is read fresh for every run: another thread may have written it a moment ago.
  const skillProblems: string[] = [];
  const [{ settings, problems }, skills, identity, systemNotes, context, ...memory] = await Promise.all([
    loadSettings(deps.store),
    loadSkills(deps.store, run.threadId, (problem) => skillProblems.push(problem)),
    readText(deps.store, ROOT_KEYS.identity),
    readText(deps.store, ROOT_KEYS.system),
    loadContext(deps.store, run.threadId),
    ...layout.memoryKeys.map((key) => readText(deps.store, key)),
  ]);
  for (const problem of problems) deps.logger.warn('settings.json ignored', { problem, runId: run.runId });
  for (const problem of skillProblems) deps.logger.warn('skill skipped', { problem, runId: run.runId });
  const { offered, manualRequested } = selectSkills(skills, run.prompt.text);
  const skillsSection = [
    formatSkillsForPrompt(offered, (key) => `/workspace/data/${key}`),
    manualRequested.length
      ? `The user asked for skill(s) ${manualRequested.map((n) => `"${n}"`).join(', ')}, which do not exist here: say so.`
      : '',
  ]
    .filter(Boolean)
    .join('\n\n');
  const { adapter, channel } = parseThreadId(run.threadId);
  const channelModel = settings.channels[`${adapter}:${channel}`]?.model ?? {};
  const snapshot: RunSnapshot = {
    modelId: channelModel.id ?? settings.model.id ?? deps.defaultModelId,
    maxOutputTokens: channelModel.maxOutputTokens ?? settings.model.maxOutputTokens ?? 4096,
    temperature: channelModel.temperature ?? settings.model.temperature,
    maxModelSteps: settings.maxModelSteps,
    maxToolCallsPerTurn: settings.maxToolCallsPerTurn,
    maxRunMinutes: settings.maxRunMinutes,
    startedAt: now.getTime(),
    promptCaching: settings.promptCaching,
    compaction: settings.compaction,
    system: buildSystemPrompt({
      identity,
      systemNotes,
      threadId: run.threadId,
      runId: run.runId,
      now,
      workspace: layout,
      memory: { global: memory[0], transport: memory[1], channel: memory[2] },
      skills: skillsSection,
      cache: settings.promptCaching,
    }),
  };
  if (deps.sandbox && settings.sandbox.startEarly) {
    // Start the sandbox now, in parallel with the first model call, so a first tool call rarely waits.
    const sandbox = deps.sandbox;
    await warmSandbox(sandbox, run.threadId).catch((error: unknown) =>
      deps.logger.warn('could not start the sandbox early', { runId: run.runId, error }),
    );
  }
  await writeText(deps.store, snapshotKey(run), JSON.stringify(snapshot), 'application/json');
  // Stopped before it began (a stop right after the prompt was admitted): end without working.
  if ((await runFlags(deps.actor, run.threadId, run.runId)).abort) return { step: 0, next: 'finish', stopReason: 'aborted' };
  if (!context.some((e) => e.meta.messageId === run.prompt.messageId)) {
    // What was said in the thread while the agent was not running comes first, in order.
    const filled = await backfill(deps.store, deps.thread(run), run, context).catch((error: unknown) => {
      deps.logger.warn('could not backfill the thread', { runId: run.runId, error });
      return undefined;
    });
    if (filled?.injected) deps.logger.info('backfilled', { runId: run.runId, ...filled });
    const files = await saveAttachments({ store: deps.store, rehydrate: deps.rehydrateAttachment ?? ((a) => a) }, run).catch(
      (error: unknown) => {
        deps.logger.warn('could not save the attachments', { runId: run.runId, error });
        return { saved: [], notes: ['the attached files could not be saved'] };
      },
    );
    context.push({
      role: 'user',
      content: [{ text: userText(run) }, ...attachmentBlocks(deps.store, files.saved, files.notes)],
      meta: {
        runId: run.runId,
        messageId: run.prompt.messageId,
        at: run.prompt.postedAt,
        ...(files.saved.length ? { attachments: files.saved.map((a) => ({ original: a.original, local: a.local })) } : {}),
      },
    });
    await saveContext(deps.store, run.threadId, context);
  }
  deps.logger.info('run prepared', {
    runId: run.runId,
    threadId: run.threadId,
    modelId: snapshot.modelId,
    contextMessages: context.length,
  });
  return { step: 0, next: 'model' };
}

async function loadSnapshot(deps: AgentDeps, run: RunInput): Promise<RunSnapshot> {
  const raw = await readText(deps.store, snapshotKey(run));
  if (!raw) throw new Error(`Run snapshot missing for ${run.runId}: prepare did not complete`);
  return JSON.parse(raw) as RunSnapshot;
}

/** Why a run that still wants to work must end now, if it must (the message goes to the thread). */
function limitReached(step: number, snapshot: RunSnapshot, now: number): string | undefined {
  if (step + 1 >= snapshot.maxModelSteps) {
    return `I stopped here: this run reached its limit of ${snapshot.maxModelSteps} model calls (maxModelSteps in settings.json). Say "continue" to go on.`;
  }
  if (now - snapshot.startedAt >= snapshot.maxRunMinutes * 60_000) {
    return `I stopped here: this run reached its time limit of ${snapshot.maxRunMinutes} minutes (maxRunMinutes in settings.json). Say "continue" to go on.`;
  }
  return undefined;
}

function decide(step: number, content: ContentBlock[], stopReason: string): LoopState {
  return { step: step + 1, next: content.some((b) => b.toolUse) ? 'tool' : 'finish', stopReason };
}

/**
 * Before a model call: past the threshold, older messages are summarised by the model (tool pairs
 * kept together, the recent part verbatim), the full context first archived in S3 for good. If the
 * summary fails, the older part is dropped with a notice instead: a thread never gets stuck.
 */
async function compactIfNeeded(deps: AgentDeps, run: RunInput, snapshot: RunSnapshot, context: ContextEntry[]): Promise<void> {
  const settings = snapshot.compaction;
  if (!settings) return;
  const fixed = estimateTokens(JSON.stringify(snapshot.system)) + estimateTokens(JSON.stringify(TOOL_CONFIG));
  if (!needsCompaction(context, settings, fixed)) return;
  const at = new Date().toISOString();
  await writeText(
    deps.store,
    archiveKey(run.threadId, at),
    context.map((e) => JSON.stringify(e)).join('\n') + '\n',
    'application/x-ndjson',
  );
  const summarize = bedrockSummarizer({ bedrock: deps.model.bedrock, modelId: snapshot.modelId });
  const out = await compactContext({ summarize }, context, settings, { runId: run.runId, at });
  if (!out.compacted) return;
  const previous = context.find((e) => typeof e.meta.compactions === 'number')?.meta.compactions ?? 0;
  const head = out.entries[0];
  if (head) head.meta = { ...head.meta, compactions: previous + 1 };
  // Into the loaded array: the save stays conditional on the version loaded.
  context.splice(0, context.length, ...out.entries);
  await saveContext(deps.store, run.threadId, context);
  const level = out.fallback ? 'warn' : 'info';
  deps.logger[level]('context compacted', {
    runId: run.runId,
    compactions: previous + 1,
    removedEntries: out.removedEntries,
    tokensBefore: out.tokensBefore,
    tokensAfter: out.tokensAfter,
    archive: archiveKey(run.threadId, at),
    ...(out.fallback ? { fallback: out.fallback, error: out.error } : {}),
  });
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

/** Polls the run's stop flag while work is in flight; aborts the signal when it is set. */
type FlagDeps = { actor: Pick<ActorDeps, 'db' | 'tableName'> };

export function watchForStop(deps: FlagDeps, run: RunInput, everyMs = 300): { signal: AbortSignal; stop(): void } {
  const controller = new AbortController();
  const timer = setInterval(() => {
    runFlags(deps.actor, run.threadId, run.runId)
      .then((flags) => flags.abort && controller.abort(new Error('stopped by the user')))
      .catch(() => undefined);
  }, everyMs);
  return { signal: controller.signal, stop: () => clearInterval(timer) };
}

const STOP_CARD = 'stop-card';

/** While a run uses tools, a small card with a Stop button sits in the thread. */
async function showStopCard(deps: AgentDeps, run: RunInput, thread: Thread): Promise<void> {
  if (await readRecord(deps.ledger, run.runId, STOP_CARD)) return;
  const card = Card({
    children: [CardText('Working on it…'), Actions([Button({ id: STOP_ACTION, label: 'Stop', style: 'danger', value: run.runId })])],
  });
  const sent = await thread.post(card);
  await writeRecord(deps.ledger, run.runId, STOP_CARD, { messageId: sent.id });
}

export async function removeStopCard(deps: AgentDeps, run: RunInput): Promise<void> {
  const card = await readRecord<ReplyRecord>(deps.ledger, run.runId, STOP_CARD);
  if (!card) return;
  await deps
    .thread(run)
    .adapter.deleteMessage(run.threadId, card.messageId)
    .catch((error: unknown) => deps.logger.warn('could not remove the stop card', { runId: run.runId, error }));
}

/** Where the loop goes once a tool result is saved: the next tool call, or back to the model. */
export function routeAfterTool(context: ContextEntry[], step: number, inSandbox: boolean): LoopState {
  const pending = pendingToolCall(context);
  if (!pending) return { step, next: 'model' };
  return { step, next: inSandbox && isSandboxTool(pending.name) ? 'sandbox' : 'tool' };
}

export async function modelStep(deps: AgentDeps, run: RunInput, loop: LoopState): Promise<LoopState> {
  const [snapshot, context] = await Promise.all([loadSnapshot(deps, run), loadContext(deps.store, run.threadId)]);
  const done = context.find((e) => e.role === 'assistant' && e.meta.runId === run.runId && e.meta.step === loop.step);
  if (done) return decide(loop.step, done.content, 'end_turn');
  if ((await runFlags(deps.actor, run.threadId, run.runId)).abort) return { step: loop.step, next: 'finish', stopReason: 'aborted' };

  await compactIfNeeded(deps, run, snapshot, context);
  const thread = deps.thread(run);
  const recordName = `reply#${loop.step}`;
  const earlier = await readRecord<ReplyRecord>(deps.ledger, run.runId, recordName);
  const pipe = createTextPipe();
  let posting: Promise<{ id: string }> | undefined;
  // A heartbeat's answer is held back: posted whole, and only if it is not "nothing to do".
  const quiet = run.prompt.heartbeat === true;
  const onText = (delta: string) => {
    // A reply already posted for this step (a retry after a crash) is edited, never posted twice.
    if (earlier || quiet) return;
    posting ??= thread.post(pipe.iterable);
    pipe.push(delta);
  };
  let result: ModelResult;
  const started = Date.now();
  // A stop ends the model stream at once (the execution itself is stopped by the one who asked).
  const stopWatch = watchForStop(deps, run);
  try {
    result = await streamModel(
      deps.model,
      {
        modelId: snapshot.modelId,
        system: snapshot.system,
        messages: withHistoryCachePoint(
          await materializeImages(deps.store, repairToolPairs(mergeConsecutiveRoles(toBedrockMessages(context)))),
          snapshot.promptCaching,
        ),
        maxOutputTokens: snapshot.maxOutputTokens,
        temperature: snapshot.temperature,
        toolConfig: snapshot.promptCaching ? CACHED_TOOL_CONFIG : TOOL_CONFIG,
      },
      onText,
      stopWatch.signal,
    );
  } catch (error) {
    if (stopWatch.signal.aborted) {
      pipe.end();
      await posting?.catch(() => undefined);
      deps.logger.info('model stream stopped', { runId: run.runId, step: loop.step });
      return { step: loop.step, next: 'finish', stopReason: 'aborted' };
    }
    throw error;
  } finally {
    stopWatch.stop();
    pipe.end();
    // A partial reply stays visible; the failure handler adds the error message below it.
    const sent = await posting?.catch((error: unknown) => {
      deps.logger.error('streaming the reply failed', { runId: run.runId, error });
      return undefined;
    });
    if (sent) await writeRecord(deps.ledger, run.runId, recordName, { messageId: sent.id } satisfies ReplyRecord);
  }
  let content: ContentBlock[] = result.content;
  if (result.stopReason === 'max_tokens') content = [...content, { text: '\n\n_(reply cut off at the output limit)_' }];
  if (content.length === 0 || (textOf(content) === '' && !content.some((b) => 'toolUse' in b))) content = [{ text: '(no reply)' }];
  if (earlier) await thread.adapter.editMessage(run.threadId, earlier.messageId, textOf(content));
  else if (quiet) {
    const said = textOf(content).trim();
    if (said && said !== HEARTBEAT_OK) {
      const sent = await thread.post(said);
      await writeRecord(deps.ledger, run.runId, recordName, { messageId: sent.id } satisfies ReplyRecord);
    } else if (said === HEARTBEAT_OK) deps.logger.info('heartbeat: nothing to do', { runId: run.runId });
  } else if (result.stopReason === 'max_tokens') await thread.post('_(reply cut off at the output limit)_');

  const meta = { runId: run.runId, step: loop.step, at: new Date().toISOString() };
  // Usage per step (cache reads and writes included) stays with the answer it paid for.
  context.push({ role: 'assistant', content, meta: { ...meta, usage: result.usage } });
  // Over the per-turn tool limit: the extra calls are answered with an error, not run.
  const uses = content.filter((b) => b.toolUse);
  for (const block of uses.slice(snapshot.maxToolCallsPerTurn)) {
    appendToolResult(
      context,
      { toolUseId: block.toolUse!.toolUseId!, name: block.toolUse!.name ?? '', input: {} },
      {
        status: 'error',
        text: `not run: a response may make at most ${snapshot.maxToolCallsPerTurn} tool calls (maxToolCallsPerTurn); make the rest in your next response`,
      },
      meta,
    );
  }
  let decision = decide(loop.step, content, result.stopReason);
  if (decision.next === 'finish') {
    // Words the user steered with while the model answered: answer them in another turn.
    const steer = await takeSteer(deps.actor, run.threadId, run.runId);
    if (steer.length) {
      applySteer(context, steer, meta);
      decision = { ...decision, next: 'model' };
    }
  }
  const limit = decision.next !== 'finish' ? limitReached(loop.step, snapshot, Date.now()) : undefined;
  // Stopped while the answer streamed in: what streamed stays in the thread, but the thread may
  // already belong to the next run, so this run writes nothing more.
  if ((await runFlags(deps.actor, run.threadId, run.runId)).abort) return { step: loop.step, next: 'finish', stopReason: 'aborted' };
  await saveContext(deps.store, run.threadId, context);
  deps.logger.info('model step', {
    runId: run.runId,
    step: loop.step,
    modelId: snapshot.modelId,
    stopReason: result.stopReason,
    attempts: result.attempts,
    durationMs: Date.now() - started,
    ...result.usage,
  });
  if (limit) {
    await thread.post(limit);
    return { ...decision, next: 'finish', stopReason: 'limit' };
  }
  if (decision.next === 'tool')
    await showStopCard(deps, run, thread).catch((error: unknown) => deps.logger.warn('could not post the stop card', { error }));
  return decision;
}

/** Between tool calls: a stop ends the run, a steer skips the remaining calls and goes back to the model. */
export async function checkFlagsBetweenTools(
  deps: FlagDeps & Pick<AgentDeps, 'store' | 'logger'>,
  run: RunInput,
  loop: LoopState,
  context: ContextEntry[],
): Promise<LoopState | undefined> {
  const flags = await runFlags(deps.actor, run.threadId, run.runId);
  if (flags.abort) return { step: loop.step, next: 'finish', stopReason: 'aborted' };
  if (flags.steer.length === 0) return undefined;
  const steer = await takeSteer(deps.actor, run.threadId, run.runId);
  if (steer.length === 0) return undefined;
  const skipped = applySteer(context, steer, { runId: run.runId, step: loop.step, at: new Date().toISOString() });
  await saveContext(deps.store, run.threadId, context);
  deps.logger.info('steered', { runId: run.runId, skippedTools: skipped });
  return { step: loop.step, next: 'model' };
}

/**
 * The agent-step side of a tool call: chat tools run here; for a sandbox tool, the thread's sandbox
 * is made ready (started, or replaced if it died) and the call is routed to the sandbox step.
 */
export async function toolStep(deps: AgentDeps, run: RunInput, loop: LoopState): Promise<LoopState> {
  const context = await loadContext(deps.store, run.threadId);
  const call = pendingToolCall(context);
  if (!call) return { step: loop.step, next: 'model' };
  const flagged = await checkFlagsBetweenTools(deps, run, loop, context);
  if (flagged) return flagged;
  const thread = deps.thread(run);
  await thread
    .startTyping(`Running ${call.name}…`)
    .catch((error: unknown) => deps.logger.warn('could not show the tool status', { error }));
  const meta = { runId: run.runId, step: loop.step, at: new Date().toISOString() };
  if (isSandboxTool(call.name)) {
    if (deps.sandbox) {
      try {
        await ensureSandbox(deps.sandbox, run.threadId);
        return { step: loop.step, next: 'sandbox' };
      } catch (error) {
        deps.logger.error('sandbox unavailable', { runId: run.runId, error });
        appendToolResult(context, call, { status: 'error', text: `The sandbox could not be started: ${(error as Error).message}` }, meta);
      }
    } else {
      appendToolResult(
        context,
        call,
        { status: 'error', text: 'This deployment has no sandbox, so files and commands are unavailable.' },
        meta,
      );
    }
  } else {
    const outcome = await runChatTool(
      { thread, s3: deps.store.s3, bucket: deps.store.bucket, layout: workspaceLayout(run.threadId) },
      call,
    );
    deps.logger.info('tool call', { runId: run.runId, tool: call.name, toolUseId: call.toolUseId, status: outcome.status });
    appendToolResult(context, call, outcome, meta);
  }
  await saveContext(deps.store, run.threadId, context);
  return routeAfterTool(context, loop.step, false);
}

function exchangeLog(run: RunInput, context: ContextEntry[], replies: Map<number, string>): LogEntry[] {
  const attachments = context.find((e) => e.meta.messageId === run.prompt.messageId)?.meta.attachments;
  const entries: LogEntry[] = [
    {
      date: run.prompt.postedAt,
      messageId: run.prompt.messageId,
      userId: run.prompt.author.userId,
      userName: run.prompt.author.userName,
      text: run.prompt.text,
      isBot: false,
      ...(attachments ? { attachments } : {}),
    },
  ];
  for (const entry of context) {
    if (entry.role !== 'assistant' || entry.meta.runId !== run.runId) continue;
    const text = textOf(entry.content);
    if (!text) continue;
    const step = entry.meta.step ?? 0;
    entries.push({
      date: entry.meta.at,
      messageId: replies.get(step) ?? `${run.runId}:${step}`,
      userId: 'self',
      userName: 'agent',
      text,
      isBot: true,
    });
  }
  return entries;
}

async function logExchange(deps: AgentDeps, run: RunInput, outcome: string, extra: Record<string, unknown> = {}): Promise<void> {
  const context = await loadContext(deps.store, run.threadId);
  const replies = new Map<number, string>();
  for (const entry of context) {
    if (entry.role !== 'assistant' || entry.meta.runId !== run.runId || entry.meta.step === undefined) continue;
    const record = await readRecord<ReplyRecord>(deps.ledger, run.runId, `reply#${entry.meta.step}`);
    if (record) replies.set(entry.meta.step, record.messageId);
  }
  const entries = exchangeLog(run, context, replies);
  await appendLog(deps.store, run.threadId, entries);
  deps.logger.info('exchange', {
    runId: run.runId,
    threadId: run.threadId,
    outcome,
    ...extra,
    prompt: { user: run.prompt.author.userId, text: run.prompt.text },
    replies: entries.filter((e) => e.isBot).map((e) => e.text),
  });
}

export async function finish(deps: AgentDeps, run: RunInput, loop: LoopState | undefined): Promise<Release> {
  await removeStopCard(deps, run);
  await logExchange(deps, run, loop?.stopReason === 'aborted' ? 'stopped' : 'completed', { steps: loop?.step ?? 0 });
  const release = await releaseLease(deps.actor, run.threadId, run.runId);
  deps.logger.info('run finished', { runId: run.runId, threadId: run.threadId, release: release.outcome });
  return release;
}

/**
 * Every failure path ends here (or, if this fails too, in the run-ended handler): a short human
 * message in the thread, once, then the lease goes to the next prompt so the thread stays usable.
 */
export async function fail(deps: AgentDeps, run: RunInput, error: StepEvent['state']['error']): Promise<Release> {
  const failure = parseStepFailure(error);
  deps.logger.error('run failed', { runId: run.runId, threadId: run.threadId, ...failure });
  await removeStopCard(deps, run);
  const modelId = (await loadSnapshot(deps, run).catch(() => undefined))?.modelId ?? deps.defaultModelId;
  if (!(await readRecord(deps.ledger, run.runId, 'error-reply'))) {
    try {
      const sent = await deps.thread(run).post(describeFailure(failure, modelId));
      await writeRecord(deps.ledger, run.runId, 'error-reply', { messageId: sent.id });
    } catch (postError) {
      deps.logger.error('could not post the error message', { runId: run.runId, error: postError });
    }
  }
  await logExchange(deps, run, 'failed', { error: failure.errorType }).catch((logError: unknown) =>
    deps.logger.error('could not log the exchange', { runId: run.runId, error: logError }),
  );
  return releaseLease(deps.actor, run.threadId, run.runId);
}

/**
 * Each execution counts its steps; well before Step Functions' 25,000-event history limit (a step
 * is about 7 events) the run continues in a fresh execution, which resumes where this one was.
 */
export function countStep(before: LoopState | undefined, after: LoopState, limit = 1000): LoopState {
  const work = (before?.work ?? 0) + 1;
  if (after.next !== 'finish' && after.next !== 'handoff' && work >= limit) return { ...after, work, next: 'handoff', resume: after.next };
  return { ...after, work };
}

/** Starts the run's next execution, resuming the loop there; this one then ends (HandedOff). */
export async function handoff(deps: AgentDeps, run: RunInput, loop: LoopState): Promise<LoopState> {
  const part = Number(/-(\d+)$/.exec(run.executionName ?? '')?.[1] ?? 1) + 1;
  const executionName = `${run.runId}-${part}`;
  // The actor names the execution first, so a stop from now on reaches the new one.
  await setExecution(deps.actor, run.threadId, run.runId, executionName);
  const resumed = { ...run, executionName, loop: { step: loop.step, next: loop.resume ?? 'model', work: 0 } };
  await deps.actor.startRun(resumed);
  deps.logger.info('run handed over to a fresh execution', { runId: run.runId, executionName, step: loop.step });
  return { ...loop, next: 'finish' };
}

export async function runStep(deps: AgentDeps, event: StepEvent): Promise<LoopState | { released: Release['outcome'] }> {
  const { loop, error, ...run } = event.state;
  const limit = deps.handoffAfterSteps;
  switch (event.action) {
    case 'prepare':
      return countStep(loop, await prepare(deps, run), limit);
    case 'model':
      return countStep(loop, await modelStep(deps, run, loop ?? { step: 0, next: 'model' }), limit);
    case 'tool':
      return countStep(loop, await toolStep(deps, run, loop ?? { step: 0, next: 'tool' }), limit);
    case 'handoff':
      return handoff(deps, run, loop ?? { step: 0, next: 'model' });
    case 'finish':
      return { released: (await finish(deps, run, loop)).outcome };
    case 'fail':
      return { released: (await fail(deps, run, error)).outcome };
  }
}
