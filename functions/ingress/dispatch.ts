// The inbox consumer: admit each prompt to its thread's actor (take the lease and start a run, or
// queue behind the running one, or refuse it as busy past the queue depth). Powertools' SQS FIFO
// batch processor runs the records in order; with skipGroupOnError a failure fails the rest of that
// message group's records in the batch too, so a retry never reorders a thread's prompts, while
// other threads' prompts go on.
import { processPartialResponse, SqsFifoPartialProcessorAsync } from '@aws-lambda-powertools/batch';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type { SerializedThread } from 'chat';
import { controlPolicy } from '../../shared/policy/access.ts';
import { mayInterrupt, personOf, refusedByAccess } from '../../shared/admission/access-gate.ts';
import { renewForThread } from '../../shared/events/expiry.ts';
import { refusedByBudget } from '../../shared/admission/budget-gate.ts';
import { admitPrompt, getActor, startWaiting } from '../../shared/run/actor.ts';
import { isPaused } from '../../shared/policy/pause.ts';
import { answerOpsCommand, parseOpsCommand } from '../../shared/commands/ops.ts';
import { s3Client } from '../../shared/aws/s3.ts';
import { threadFromJSON, type AgentChat } from '../../shared/platforms/chat.ts';
import { reclaimStaleLease, reclaimStaleSlots, stopThread, type ControlDeps } from '../../shared/run/control.ts';
import { dispatchEnv, readEnv } from '../../shared/env.ts';
import { chatFromEnv, settingsSecretPatterns } from '../../shared/handler-context/chat.ts';
import { controlFromEnv } from '../../shared/handler-context/control.ts';
import { handlerLogger } from '../../shared/handler-context/logger.ts';
import { handlerMetrics, publishingMetrics } from '../../shared/handler-context/metrics.ts';
import { channelKeyOf, runIdFor } from '../../shared/ids.ts';
import { lazy } from '../../shared/support/lazy.ts';
import { MAX_QUEUED_PROMPT_BYTES, queuedPromptBytes, storePromptBody } from '../../shared/admission/prompt-body.ts';
import { promptSchema, type Prompt } from '../../shared/contracts.ts';
import { type Settings } from '../../shared/settings/schema.ts';
import type { StoreDeps } from '../../shared/context/store.ts';
import { settingsFromEnv } from '../../shared/handler-context/settings.ts';
import type { SettingsSource } from '../../shared/settings/source.ts';
import { adapterOf, countBudgetRefusal } from '../../shared/observability/run-metrics.ts';
import { answerSettingsCommand, parseSettingsCommand } from '../../shared/commands/settings.ts';
import { isUsageCommand, threadUsageReport } from '../../shared/commands/usage.ts';
import { formatIssues } from '../../shared/support/validation.ts';

interface DispatchDeps {
  control: ControlDeps;
  store: StoreDeps;
  loadChat(): Promise<AgentChat>;
  settings: SettingsSource;
}

const logger = handlerLogger('dispatch');
const metrics = handlerMetrics();
const init = lazy((): DispatchDeps => {
  const env = readEnv(dispatchEnv);
  const store = { s3: s3Client(), bucket: env.DATA_BUCKET };
  const settings = settingsFromEnv(env, logger);
  return {
    control: controlFromEnv(logger, env, metrics),
    store,
    loadChat: chatFromEnv(logger, env, { secretPatterns: settingsSecretPatterns(settings, logger) }),
    settings,
  };
});

/** Tell the prompt's author (ephemerally where the platform can) why it will not run. */
async function replyRefused(deps: DispatchDeps, prompt: Prompt, text: string): Promise<void> {
  const thread = threadFromJSON(await deps.loadChat(), prompt.thread as SerializedThread);
  const ephemeral = await thread.postEphemeral(prompt.author.userId, text, { fallbackToDM: false });
  if (!ephemeral) await thread.post(text);
}

/** A new thread's prompt past a concurrent-run limit: the author is told how many run, and which limit. */
function fullText(admission: 'channel-full' | 'deployment-full', limits: Settings['limits']): string {
  const channel = admission === 'channel-full';
  const max = channel ? limits.maxConcurrentRunsPerChannel : limits.maxConcurrentRuns;
  const runs = `${max} run${max === 1 ? ' is' : 's are'} already running`;
  return channel
    ? `${runs} in this channel (the limit, maxConcurrentRunsPerChannel), so I did not start this one. Please send it again when one of them has finished.`
    : `${runs} across this deployment (the limit, maxConcurrentRuns), so I did not start this one. Please send it again in a few minutes.`;
}

const PAUSED_TEXT = 'Paused by an operator: your message will run when resumed.';

const busyText = (depth: number) =>
  `I'm busy in this thread with ${depth} more message${depth === 1 ? '' : 's'} waiting, so I dropped this one. Please send it again once I've caught up.`;

async function admit(deps: DispatchDeps, received: Prompt): Promise<void> {
  const config = await deps.settings.get();
  const gate = {
    state: async () => (await deps.loadChat()).getState(),
    reply: (p: Prompt, text: string) => replyRefused(deps, p, text),
    logger,
  };
  if (await refusedByAccess(gate, config.access, received)) return;
  // A person is here: the agent's periodic event files this thread belongs to keep running.
  if (personOf(received)) {
    const renewed = await renewForThread(deps.control.actor, received.threadId, config.agentPeriodicEventDays, Date.now());
    if (renewed.length) logger.info('periodic event files renewed', { threadId: received.threadId, files: renewed });
  }
  // With admins named, `settings …` is a command for them, never a prompt.
  const command = config.access.admins.length > 0 ? parseSettingsCommand(received.text) : undefined;
  if (command) return answerSettingsCommand({ store: deps.store, reply: gate.reply, logger }, config, received, command);
  const ops = config.access.admins.length > 0 ? parseOpsCommand(received.text) : undefined;
  if (ops) return answerOpsCommand({ control: deps.control, store: deps.store, reply: gate.reply, logger }, config, received, ops);
  if (isUsageCommand(received.text))
    return gate.reply(received, await threadUsageReport(deps.control.actor, config.budgets, received, new Date()));
  // A prompt under a spent budget is answered now, without a run (the model step checks again).
  if (await refusedByBudget({ ...gate, budgets: deps.control.actor }, config.budgets, received)) {
    countBudgetRefusal(metrics, received);
    return;
  }
  const prompt = await storePromptBody(deps.store, received, runIdFor(received.threadId, received.messageId));
  const bytes = queuedPromptBytes(prompt);
  if (bytes > MAX_QUEUED_PROMPT_BYTES) {
    // Only a message with an extraordinary number of attachments gets here; its text is in the log.
    logger.error('prompt refused: too large to queue', { threadId: prompt.threadId, messageId: prompt.messageId, bytes, prompt: received });
    await replyRefused(
      deps,
      prompt,
      `That message carries too much to queue (${Math.ceil(bytes / 1024)} KB of message data, over the ${MAX_QUEUED_PROMPT_BYTES / 1024} KB limit). Please send fewer attachments per message.`,
    );
    return;
  }
  const control = controlPolicy(config.access, channelKeyOf(prompt.threadId));
  let mode = config.channels[channelKeyOf(prompt.threadId)]?.queueMode ?? config.queueMode;
  await reclaimStaleLease(deps.control, prompt.threadId, prompt.messageId);
  if (mode === 'interrupt' && control && !mayInterrupt(control, await getActor(deps.control.actor, prompt.threadId), prompt))
    mode = 'queue';
  // Paused by an operator: the prompt waits in its thread's queue, and starts nothing.
  const paused = await isPaused(deps.control.actor);
  const options = {
    maxQueueDepth: config.maxQueueDepth,
    mode,
    control,
    hold: paused,
    caps: { perChannel: config.limits.maxConcurrentRunsPerChannel, perDeployment: config.limits.maxConcurrentRuns },
  };
  let admission = await admitPrompt(deps.control.actor, prompt, options);
  if (admission === 'channel-full' || admission === 'deployment-full') {
    const scope = admission === 'channel-full' ? channelKeyOf(prompt.threadId) : undefined;
    if (await reclaimStaleSlots(deps.control, scope)) admission = await admitPrompt(deps.control.actor, prompt, options);
  }
  const log = logger.with({ threadId: prompt.threadId, messageId: prompt.messageId });
  log.info('prompt admitted', { admission, mode });
  if (admission === 'busy') {
    // Not lost silently: the prompt is in the logs, and its author is told.
    log.warn('prompt refused: queue full', { user: prompt.author.userId, text: prompt.text });
    metrics.put('BusyReplies', 1, { adapter: adapterOf(prompt.threadId) });
    await replyRefused(deps, prompt, busyText(config.maxQueueDepth));
  } else if (admission === 'channel-full' || admission === 'deployment-full') {
    log.warn('prompt refused: concurrent run limit', { limit: admission, user: prompt.author.userId, text: prompt.text });
    await replyRefused(deps, prompt, fullText(admission, config.limits));
  } else if (admission === 'queued' && paused) {
    log.info('prompt held: paused', { user: prompt.author.userId, channel: channelKeyOf(prompt.threadId) });
    await threadFromJSON(await deps.loadChat(), prompt.thread as SerializedThread).post(PAUSED_TEXT);
  } else if (admission === 'queued' && mode === 'interrupt') {
    await stopThread(deps.control, prompt.threadId, 'interrupted by a newer message');
  } else if (admission === 'queued') {
    // Queued behind prompts held by a pause whose resume did not start them: start them now.
    await startWaiting(deps.control.actor, prompt.threadId);
  }
}

function promptOf(record: SQSRecord): Prompt | undefined {
  let body: unknown;
  try {
    body = JSON.parse(record.body);
  } catch {
    body = undefined;
  }
  const parsed = promptSchema.safeParse(body);
  if (parsed.success) return parsed.data;
  // It can never succeed; retrying would only hold the thread's queue. Keep it in the logs.
  logger.error('inbox message rejected', {
    messageId: record.messageId,
    issues: formatIssues(parsed.error),
    body: record.body.slice(0, 2000),
  });
  return undefined;
}

export async function handler(event: SQSEvent): Promise<SQSBatchResponse> {
  const deps = await init();
  const admitRecord = async (record: SQSRecord) => {
    const prompt = promptOf(record);
    if (!prompt) return;
    try {
      await admit(deps, prompt);
    } catch (error) {
      logger.error('admission failed; will retry', { threadId: prompt.threadId, messageId: prompt.messageId, error });
      throw error;
    }
  };
  // A processor per invocation: it holds the batch's state. A batch that failed whole is reported
  // like a partial one (every record listed), not thrown.
  return publishingMetrics(metrics, () =>
    processPartialResponse(event, admitRecord, new SqsFifoPartialProcessorAsync(), {
      skipGroupOnError: true,
      throwOnFullBatchFailure: false,
    }),
  );
}
