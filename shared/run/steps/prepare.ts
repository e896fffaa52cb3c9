// The prepare step, once per run: read settings, memory, skills and identity fresh, decide the
// run's model and system prompt (the snapshot every later step uses), start the sandbox early,
// and add what the thread said while the agent was away, then the prompt, to the context.
import { priceOf } from '../../model/pricing.ts';
import { attachmentBlocks, saveAttachments } from '../../platforms/attachments.ts';
import { backfill } from '../../context/backfill.ts';
import { secretPatternsWith } from '../../policy/secret-filter.ts';
import { contextText } from '../../context/context-text.ts';
import { channelKeyOf, ROOT_KEYS } from '../../ids.ts';
import { runReachOf } from '../../reach/run-reach.ts';
import { promptText } from '../../admission/prompt-body.ts';
import { warmSandbox } from '../../sandbox/lifecycle.ts';
import { workspaceLayout } from '../../sandbox/workspace.ts';
import type { LoopState, Prompt, RunInput } from '../../contracts.ts';
import type { Settings } from '../../settings/schema.ts';
import { formatSkillsForPrompt, loadSkills, selectSkills, type Skill } from '../../context/skills.ts';
import { toolPolicyFor, type ToolPolicy } from '../../tools/allowed-tools.ts';
import { type ContextEntry, type LoadedContext, loadContext, readText, saveLoadedContext } from '../../context/store.ts';
import { buildSystemPrompt } from '../../context/system-prompt.ts';
import { quarantineUnreadable } from '../../context/quarantine.ts';
import { agentForRun, agentIdentity, agentTools } from '../../agents/apply.ts';
import { withoutAgentRequest } from '../../agents/request.ts';
import type { AgentDeps } from './deps.ts';
import { isStopped, stoppedAt } from './run-control.ts';
import { type RunSnapshot, saveSnapshot } from './snapshot.ts';

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
async function addPrompt(deps: AgentDeps, run: RunInput, context: LoadedContext, text: string, settings: Settings): Promise<void> {
  if (context.entries.some((e) => e.meta.messageId === run.prompt.messageId)) return;
  const secrets = secretPatternsWith(settings.secretPatterns);
  const filled = await backfill(deps.store, deps.thread(run), run, context.entries, secrets, settings.access).catch((error: unknown) => {
    deps.logger.warn('could not backfill the thread', { runId: run.runId, error });
    return undefined;
  });
  if (filled?.injected) deps.logger.info('backfilled', { runId: run.runId, ...filled });
  const collected = run.collected ?? [];
  const texts = [text, ...(await Promise.all(collected.map((prompt) => promptText(deps.store, prompt))))];
  const entries = await Promise.all([run.prompt, ...collected].map((prompt, i) => promptEntry(deps, run, prompt, texts[i]!)));
  context.entries.push(...entries);
  await saveLoadedContext(deps.store, run.threadId, context);
}

export async function prepare(deps: AgentDeps, run: RunInput): Promise<LoopState> {
  const now = deps.now();
  const layout = workspaceLayout(run.threadId);
  const agent = await agentForRun({ store: deps.store, thread: deps.thread(run), logger: deps.logger }, run.threadId, run.runId, run.agent);
  // Memory is read fresh for every run: another thread may have written it a moment ago.
  const skillProblems: string[] = [];
  const [text, settings, skills, identity, systemNotes, context, ...memory] = await Promise.all([
    promptText(deps.store, run.prompt),
    // As it is now: the run keeps what it reads here, in its snapshot.
    deps.settings.get({ maxAgeMs: 0 }),
    loadSkills(deps.store, run.threadId, (problem) => skillProblems.push(problem)),
    readText(deps.store, ROOT_KEYS.identity),
    readText(deps.store, ROOT_KEYS.system),
    loadContext(deps.store, run.threadId),
    ...layout.memoryKeys.map((key) => readText(deps.store, key)),
  ]);
  await quarantineUnreadable({ store: deps.store, thread: deps.thread(run), logger: deps.logger }, run.threadId, run.runId, context);
  for (const problem of skillProblems) deps.logger.warn('skill skipped', { problem, runId: run.runId });
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
  const snapshot: RunSnapshot = {
    ...model,
    maxModelSteps: Math.min(settings.maxModelSteps, agent?.maxModelSteps ?? settings.maxModelSteps),
    ...(agent ? { agent: agent.name } : {}),
    ...(tools ? { tools } : {}),
    maxToolCallsPerTurn: settings.maxToolCallsPerTurn,
    maxRunMinutes: settings.maxRunMinutes,
    startedAt: now,
    promptCaching: settings.promptCaching,
    ...(price ? { price } : {}),
    ...(settings.showCost ? { showCost: true } : {}),
    ...(settings.budgets.length ? { budgets: settings.budgets } : {}),
    compaction: settings.compaction,
    ...(offeredSkills.toolPolicy ? { toolPolicy: offeredSkills.toolPolicy } : {}),
    ...(settings.secretPatterns.length ? { secretPatterns: settings.secretPatterns } : {}),
    maxRunningSandboxes: settings.limits.maxRunningSandboxes,
    sandbox: settings.sandbox,
    maxEventFilesPerRun: settings.maxEventFilesPerRun,
    ...(reach ? { reach } : {}),
    system: buildSystemPrompt({
      identity: agent ? agentIdentity(agent) : identity,
      systemNotes,
      threadId: run.threadId,
      runId: run.runId,
      now: new Date(now),
      workspace: layout,
      memory: { global: memory[0], transport: memory[1], channel: memory[2] },
      skills: offeredSkills.text,
      cache: settings.promptCaching,
    }),
  };
  if (deps.sandbox && settings.sandbox.startEarly) {
    // Start the sandbox now, in parallel with the first model call, so a first tool call rarely waits.
    await warmSandbox(deps.sandbox, run.threadId, async () => settings.limits.maxRunningSandboxes).catch((error: unknown) =>
      deps.logger.warn('could not start the sandbox early', { runId: run.runId, error }),
    );
  }
  await saveSnapshot(deps, run, snapshot);
  // Stopped before it began (a stop right after the prompt was admitted): end without working.
  if (await isStopped(deps, run)) return stoppedAt(0);
  await addPrompt(deps, run, context, withoutAgentRequest(text), settings);
  deps.logger.info('run prepared', {
    runId: run.runId,
    threadId: run.threadId,
    modelId: snapshot.modelId,
    contextMessages: context.entries.length,
  });
  // The first model step goes on from this context without reading it again (run-context.ts).
  if (context.version === null) return { step: 0, next: 'model' };
  deps.contexts?.keep(run.threadId, context);
  return { step: 0, next: 'model', contextVersion: context.version };
}
