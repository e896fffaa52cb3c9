// The prepare step, once per run: read settings fresh, and memory, skills and identity as fresh as
// shared/context/prompt-files.ts keeps them; decide the run's model and system prompt (the snapshot
// every later step uses), start the sandbox early, and add what the thread said while the agent was away, then the prompt, to the context.
import { priceOf } from '../../model/pricing.ts';
import { attachmentBlocks, saveAttachments } from '../../platforms/attachments.ts';
import { backfill, readThreadHistory, type ThreadHistory } from '../../context/backfill.ts';
import { secretPatternsWith } from '../../policy/secret-filter.ts';
import { contextText } from '../../context/context-text.ts';
import { channelKeyOf, dataKeys } from '../../ids.ts';
import { getItems } from '../../aws/dynamodb.ts';
import { type ActorItem, flagsOf } from '../actor.ts';
import { actorKey, sandboxKey, workspaceVersionKey } from '../../table.ts';
import { versionOf } from '../../sandbox/workspace-version.ts';
import { runReachOf } from '../../reach/run-reach.ts';
import { promptText } from '../../admission/prompt-body.ts';
import { type SandboxItem, warmSandbox } from '../../sandbox/lifecycle.ts';
import { workspaceLayout } from '../../sandbox/workspace.ts';
import type { LoopState, Prompt, RunInput } from '../../contracts.ts';
import type { Settings } from '../../settings/schema.ts';
import { formatSkillsForPrompt, selectSkills, type Skill } from '../../context/skills.ts';
import { readPromptFiles } from '../../context/prompt-files.ts';
import { toolPolicyFor, type ToolPolicy } from '../../tools/allowed-tools.ts';
import { type ContextEntry, type LoadedContext, loadContext, saveLoadedContext, contextIdOf } from '../../context/store.ts';
import { buildSystemPrompt } from '../../context/system-prompt.ts';
import { quarantineUnreadable } from '../../context/quarantine.ts';
import { agentForRun, agentIdentity, agentTools } from '../../agents/apply.ts';
import { withoutAgentRequest } from '../../agents/request.ts';
import type { AgentDeps } from './deps.ts';
import { childTaskEntry, depthOf, holderRunId } from '../subagents/child-run.ts';
import { stoppedAt } from './run-control.ts';
import { type RunSnapshot, saveSnapshot } from './snapshot.ts';
import { resolveApprovalRules } from '../../approvals/rules.ts';
import { hooksForRun } from '../../hooks/settings.ts';
import { hookContextText, type HookNote } from '../../hooks/run.ts';
import { noteHooks, runLambdaHooks } from '../../hooks/step-hooks.ts';
import { postedMessage, postOnce } from '../ledger.ts';
import { RUN_RECORD } from '../../table.ts';

function skillsSection(
  skills: Skill[],
  promptText: string,
  settings: Settings,
  toolNames: readonly string[],
): { text: string; toolPolicy?: ToolPolicy } {
  const { offered, manualRequested } = selectSkills(skills, promptText);
  const missing = manualRequested.length
    ? `The user asked for skill(s) ${manualRequested.map((n) => `"${n}"`).join(', ')}, which do not exist here: say so.`
    : '';
  const toolPolicy = toolPolicyFor(offered, toolNames);
  const limited = toolPolicy
    ? `The skills offered here allow only these tools: ${[...toolPolicy.tools, ...toolPolicy.bash.map((r) => `bash(${r.exact ?? `${r.prefix} …`})`)].join(', ') || 'none'}.`
    : '';
  const text = [formatSkillsForPrompt(offered, (key) => `/workspace/data/${key}`, settings.maxSkillBodyChars), limited, missing]
    .filter(Boolean)
    .join('\n\n');
  return { text, ...(toolPolicy ? { toolPolicy } : {}) };
}

function modelChoice(settings: Settings, run: RunInput, defaultModelId: string) {
  const channelModel = settings.channels[channelKeyOf(run.threadId)]?.model ?? {};
  return {
    modelId: channelModel.id ?? settings.model.id ?? defaultModelId,
    maxOutputTokens: channelModel.maxOutputTokens ?? settings.model.maxOutputTokens ?? 4096,
    temperature: channelModel.temperature ?? settings.model.temperature,
  };
}

/** One prompt as the context's user turn: its author's words and the files that came with it. */
async function promptEntry(deps: AgentDeps, run: RunInput, prompt: Prompt, text: string): Promise<ContextEntry> {
  const downloaded = await saveAttachments(
    { store: deps.store, rehydrate: (a) => deps.rehydrateAttachment?.(a, run.threadId) ?? a },
    { ...run, prompt },
  ).catch((error: unknown) => {
    deps.logger.warn('could not save the attachments', { runId: run.runId, messageId: prompt.messageId, error });
    return { saved: [], notes: ['the attached files could not be saved'] };
  });
  // Files a trigger or an upload stored before queueing the prompt.
  const stored = (prompt.files ?? []).map((f) => ({ ...f, local: `/workspace/data/${f.key}` }));
  const files = { saved: [...stored, ...downloaded.saved], notes: downloaded.notes };
  return {
    role: 'user',
    content: [{ text: contextText(prompt.author.userName, text) }, ...attachmentBlocks(deps.store, files.saved, files.notes)],
    meta: {
      runId: run.runId,
      messageId: prompt.messageId,
      at: prompt.postedAt,
      ...(files.saved.length ? { attachments: files.saved.map((a) => ({ original: a.original, local: a.local })) } : {}),
      ...(prompt.source ? { source: prompt.source } : {}),
    },
  };
}

/**
 * The prompt (after what was said while the agent was away), once: a retried prepare adds nothing.
 * In collect mode the prompts that came while the thread was busy follow it, each under its author's
 * name: the model reads them as one turn (consecutive user entries are merged before the call).
 */
async function addPrompt(
  deps: AgentDeps,
  run: RunInput,
  context: LoadedContext,
  text: string,
  settings: Settings,
  snapshot: RunSnapshot,
  history: Promise<ThreadHistory> | undefined,
  /** Starts the context's save (prepare's caller awaits it). */
  save: (context: LoadedContext) => void,
): Promise<{ blocked?: string }> {
  const added = context.entries.find((e) => e.meta.messageId === run.prompt.messageId);
  if (added) return added.meta.hookBlocked ? { blocked: added.meta.hookBlocked } : {};
  if (run.child) {
    // A subagent's context begins with its task: the thread's messages and the prompt's hooks are its root's.
    context.entries.push(childTaskEntry(run, run.child, deps.now()));
    save(context);
    return {};
  }
  const hooked = await promptHooks(deps, run, snapshot, text);
  if (hooked.blocked !== undefined) {
    // The prompt is not given to the model; the context says so, for later runs and the audit record.
    const entry: ContextEntry = {
      role: 'user',
      content: [{ text: `(a message from ${run.prompt.author.userName} was withheld: a hook blocked it)` }],
      meta: { runId: run.runId, messageId: run.prompt.messageId, at: run.prompt.postedAt, hookBlocked: hooked.blocked },
    };
    noteHooks(entry, hooked.notes);
    context.entries.push(entry);
    save(context);
    return { blocked: hooked.blocked };
  }
  const secrets = secretPatternsWith(settings.secretPatterns);
  const collected = run.collected ?? [];
  // At once: backfill adds earlier messages to the context; the prompts' texts and attachments are fetched.
  const [filled, entries] = await Promise.all([
    backfill(deps.store, deps.thread(run), run, context.entries, secrets, settings.access, history).catch((error: unknown) => {
      deps.logger.warn('could not backfill the thread', { runId: run.runId, error });
      return undefined;
    }),
    Promise.all(collected.map((prompt) => promptText(deps.store, prompt))).then((texts) =>
      Promise.all([run.prompt, ...collected].map((prompt, i) => promptEntry(deps, run, prompt, [text, ...texts][i]!))),
    ),
  ]);
  if (filled?.injected) deps.logger.info('backfilled', { runId: run.runId, logged: filled.logged, injected: filled.injected });
  // The run's finish appends its exchange over this version without reading log.jsonl again.
  if (filled) deps.logs?.set(run.threadId, filled.log);
  if (hooked.context) entries[0]!.content.push({ text: hooked.context });
  noteHooks(entries[0], hooked.notes);
  context.entries.push(...entries);
  save(context);
  return {};
}

/** SessionStart, then UserPromptSubmit: a block withholds the prompt; what they add goes beside it. */
async function promptHooks(
  deps: AgentDeps,
  run: RunInput,
  snapshot: RunSnapshot,
  text: string,
): Promise<{ blocked?: string; context?: string; notes: HookNote[] }> {
  const notes: HookNote[] = [];
  const contexts: string[] = [];
  for (const [event, fields] of [
    ['SessionStart', {}],
    ['UserPromptSubmit', { prompt: text }],
  ] as const) {
    const verdict = await runLambdaHooks(deps, run, snapshot, event, fields);
    if (!verdict) continue;
    notes.push(...verdict.notes);
    if (verdict.blocked !== undefined) return { blocked: verdict.blocked, notes };
    if (verdict.context) contexts.push(hookContextText(event, verdict.context));
  }
  return { ...(contexts.length ? { context: contexts.join('\n\n') } : {}), notes };
}

export interface PrepareOptions {
  /**
   * Takes the sandbox's early start instead of prepare waiting for it: the caller goes on into the
   * first model step and awaits the start before its invocation ends (on AWS, ECS RunTask answers in
   * hundreds of milliseconds, which the first token would otherwise wait for). The start's failure is
   * logged, never thrown.
   */
  alongside?: (work: Promise<unknown>) => void;
}

/** A run prepared for its first model step, which may begin before prepare's writes are answered. */
export interface PreparedRun {
  next: LoopState;
  /** The snapshot the run keeps (a retried prepare's is the one its earlier attempt stored). */
  snapshot: RunSnapshot;
  context: LoadedContext;
  /**
   * The run's snapshot and the context with the prompt, saved (the context's version then moved on).
   * In flight only when `next` is the model step: on AWS the step's first call goes out beside them.
   */
  written: Promise<unknown>;
}

export async function prepare(deps: AgentDeps, run: RunInput, options: PrepareOptions = {}): Promise<LoopState> {
  const { next, context, written } = await prepareRun(deps, run, options);
  await written;
  if (next.next !== 'model' || context.version === null) return next;
  // The first model step goes on from this context without reading it again (run-context.ts).
  deps.contexts?.keep(contextIdOf(run), context);
  return { ...next, contextVersion: context.version };
}

/** prepare, its writes left in flight when the run goes on to its first model step (PreparedRun). */
export async function prepareRun(deps: AgentDeps, run: RunInput, options: PrepareOptions = {}): Promise<PreparedRun> {
  const now = deps.now();
  const layout = workspaceLayout(run.threadId);
  // Memory is as fresh as the channel's workspace version says (another thread may have written it a
  // moment ago): shared/context/prompt-files.ts.
  // The thread's actor item (its stop flag), the channel's workspace version and the thread's
  // sandbox item (whether the sandbox must be started), in one read.
  const started = getItems(deps.actor, [
    actorKey(run.threadId),
    workspaceVersionKey(dataKeys(run.threadId).channelDir),
    sandboxKey(run.threadId),
  ]);
  // The thread's log and messages for the backfill, read with the rest: the platform's history call
  // is prepare's slowest read. (A subagent's context takes no backfill.)
  const history = run.child ? undefined : readThreadHistory(deps.store, deps.thread(run), run.threadId);
  // Awaited by the backfill; if no backfill comes (a stop, a hook's block), its failure is not left unhandled.
  history?.catch(() => undefined);
  const [agent, text, settings, files, context, [actor, , sandboxItem]] = await Promise.all([
    agentForRun({ store: deps.store, thread: deps.thread(run), logger: deps.logger }, run.threadId, run.runId, run.agent),
    run.child ? run.child.task : promptText(deps.store, run.prompt),
    // As it is now: the run keeps what it reads here, in its snapshot.
    deps.settings.get({ maxAgeMs: 0 }),
    started.then(([, version]) => readPromptFiles(deps.store, deps.promptFiles, run.threadId, versionOf(version))),
    loadContext(deps.store, contextIdOf(run)),
    started,
  ]);
  // Stopped before it began (a stop right after the prompt was admitted): it ends without working.
  // A stop after this read is the model step's to see (its first write checks the flag).
  const stopped = flagsOf(actor as ActorItem | undefined, holderRunId(run)).abort;
  await quarantineUnreadable({ store: deps.store, thread: deps.thread(run), logger: deps.logger }, run.threadId, run.runId, context);
  const { skills } = files;
  for (const problem of files.skillProblems) deps.logger.warn('skill skipped', { problem, runId: run.runId });
  for (const skill of skills.filter((s) => s.body.length > settings.maxSkillBodyChars)) {
    deps.logger.warn('skill instructions truncated', { skill: skill.key, chars: skill.body.length, limit: settings.maxSkillBodyChars });
  }
  const tools = agentTools(
    agent,
    deps.tools.tools.map((tool) => tool.name),
    deps.logger,
  );
  const offeredSkills = skillsSection(
    agent?.skills ? skills.filter((skill) => agent.skills!.includes(skill.name)) : skills,
    withoutAgentRequest(text),
    settings,
    tools ?? deps.tools.tools.map((tool) => tool.name),
  );
  const model = { ...modelChoice(settings, run, deps.defaultModelId), ...(agent?.model ? { modelId: agent.model } : {}) };
  const reach = runReachOf(settings, channelKeyOf(run.threadId));
  const price = priceOf(model.modelId, settings.prices);
  if (!price) {
    deps.logger.warn('no price for the model: its runs count tokens, not dollars (add it to "prices" in settings.json)', {
      runId: run.runId,
      modelId: model.modelId,
      ...(settings.budgets.length ? { budgets: 'not enforced for this run: a budget is in dollars' } : {}),
    });
  }
  const approvals = resolveApprovalRules(
    settings.approvals,
    settings.channels[channelKeyOf(run.threadId)]?.approvals,
    settings.access,
    run,
  );
  const hooks = hooksForRun(settings.hooks, settings.channels[channelKeyOf(run.threadId)]?.hooks);
  const snapshot: RunSnapshot = {
    ...model,
    maxModelSteps: Math.min(settings.maxModelSteps, agent?.maxModelSteps ?? settings.maxModelSteps, run.child?.maxModelSteps ?? Infinity),
    ...(agent ? { agent: agent.name } : {}),
    ...(tools ? { tools } : {}),
    maxToolCallsPerTurn: settings.maxToolCallsPerTurn,
    maxRunMinutes: settings.maxRunMinutes,
    startedAt: now,
    ...(run.child ? { deadlineAt: run.child.deadline } : {}),
    ...(depthOf(run) < settings.maxSubagentDepth ? { delegates: true } : {}),
    promptCaching: settings.promptCaching,
    ...(price ? { price } : {}),
    ...(settings.showCost ? { showCost: true } : {}),
    ...(settings.budgets.length ? { budgets: settings.budgets } : {}),
    compaction: settings.compaction,
    ...(offeredSkills.toolPolicy ? { toolPolicy: offeredSkills.toolPolicy } : {}),
    ...(settings.secretPatterns.length ? { secretPatterns: settings.secretPatterns } : {}),
    maxRunningSandboxes: settings.limits.maxRunningSandboxes,
    sandbox: settings.sandbox,
    // A subagent starts no events: its root's person asked for the work, not for what a child schedules.
    maxEventFilesPerRun: run.child ? 0 : settings.maxEventFilesPerRun,
    ...(reach ? { reach } : {}),
    ...(approvals.length ? { approvals } : {}),
    ...(hooks.length ? { hooks, hookApprovers: [...settings.access.admins] } : {}),
    system: buildSystemPrompt({
      identity: agent ? agentIdentity(agent) : files.identity,
      systemNotes: files.systemNotes,
      threadId: run.threadId,
      runId: run.runId,
      now: new Date(now),
      workspace: layout,
      memory: files.memory,
      skills: offeredSkills.text,
      cache: settings.promptCaching,
      ...(run.child ? { subagent: true } : {}),
    }),
  };
  const sandbox = deps.sandbox;
  // Started now, so a first tool call rarely waits: beside the first model call when the caller
  // takes it, else beside the snapshot and the prompt.
  const warming =
    sandbox && settings.sandbox.startEarly && !stopped
      ? warmSandbox(sandbox, run.threadId, async () => settings.limits.maxRunningSandboxes, {
          item: sandboxItem as SandboxItem | undefined,
        }).catch((error: unknown) => deps.logger.warn('could not start the sandbox early', { runId: run.runId, error }))
      : undefined;
  if (warming && options.alongside) options.alongside(warming);
  // A retried prepare (its prompt is in the context: an earlier attempt saved it, and may have called
  // the model with its snapshot) goes on with the snapshot that attempt stored. Otherwise no model
  // call has used an earlier attempt's, if there is one: this one is written over it.
  const again = context.entries.some((e) => e.meta.messageId === run.prompt.messageId);
  const kept = again ? await saveSnapshot(deps, run, snapshot, { keepStored: true }) : snapshot;
  // The snapshot and the prompt are independent: at once. The prompt's save is the context's last
  // write here; both are left in flight when the model step follows.
  const saves: Promise<unknown>[] = again ? [] : [saveSnapshot(deps, run, snapshot)];
  const save = (loaded: LoadedContext) => void saves.push(saveLoadedContext(deps.store, contextIdOf(run), loaded));
  // Awaited below; until then (the prompt's hooks and backfill can take a while) a failure is not an unhandled one.
  for (const each of saves) each.catch(() => undefined);
  let added: { blocked?: string } | undefined;
  try {
    [, added] = await Promise.all([
      options.alongside ? undefined : warming,
      stopped ? undefined : addPrompt(deps, run, context, withoutAgentRequest(text), settings, kept, history, save),
    ]);
  } catch (error) {
    // The invocation fails; not with a write still in flight.
    await Promise.allSettled(saves);
    throw error;
  }
  const written = Promise.all(saves);
  const prepared = (next: LoopState): PreparedRun => ({ next, snapshot: kept, context, written });
  if (stopped || added?.blocked !== undefined) {
    // Wait for them (the run ends without a model step); nothing else of the run is in flight.
    await written;
  }
  if (stopped) return prepared(stoppedAt(0));
  if (added?.blocked !== undefined) {
    const reason = added.blocked;
    await postOnce(deps.ledger, run.runId, RUN_RECORD.hookBlocked, () =>
      deps.thread(run).post(`Your message was not given to the agent: a hook blocked it. ${reason}`).then(postedMessage),
    );
    return prepared({ step: 0, next: 'finish', stopReason: 'hook' });
  }
  // Awaited by the model step; a failure before that is not left unhandled.
  written.catch(() => undefined);
  deps.logger.info('run prepared', {
    runId: run.runId,
    threadId: run.threadId,
    modelId: snapshot.modelId,
    contextMessages: context.entries.length,
  });
  return prepared({ step: 0, next: 'model' });
}
