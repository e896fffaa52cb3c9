// The gates' dependencies over the real stores: the actor table (DynamoDB), the data bucket (S3),
// the Step Functions runs and the chat.
import type { SerializedThread } from 'chat';
import type { StepChat } from '../platforms/chat.ts';
import { admitPrompt, getActor, startWaiting, type ActorItem } from '../run/actor.ts';
import { reclaimStaleLeaseOf, reclaimStaleSlots, steerWithPrompt, stopThread, type ControlDeps } from '../run/control.ts';
import { withPauseFlag } from '../policy/pause.ts';
import { actorKey } from '../table.ts';
import { spentBudget } from '../policy/budgets.ts';
import { renewForThread } from '../events/expiry.ts';
import type { StoreDeps } from '../context/store.ts';
import { listAgents } from '../agents/load.ts';
import type { JsonLogger } from '../observability/log.ts';
import type { MetricsSink } from '../observability/metrics.ts';
import { lazy } from '../support/lazy.ts';
import type { Prompt } from '../contracts.ts';
import type { Settings } from '../settings/schema.ts';
import { COMMANDS } from '../commands/answer.ts';
import { storePromptBody } from './prompt-body.ts';
import type { AdmissionDeps, ThreadReplies } from './context.ts';

export interface AdmissionStores {
  control: ControlDeps;
  store: StoreDeps;
  loadChat(): Promise<StepChat>;
  settings(): Promise<Settings>;
  settingsProblems(): Promise<{ problems: string[]; version?: string }>;
  logger: JsonLogger;
  metrics: MetricsSink;
}

/** The prompt's thread, made from the chat when the first answer goes out. */
function threadReplies(loadChat: () => Promise<StepChat>, prompt: Prompt): ThreadReplies {
  const thread = lazy(async () => (await loadChat()).thread(prompt.thread as SerializedThread));
  return {
    async tell(text) {
      const ephemeral = await (await thread()).postEphemeral(prompt.author.userId, text, { fallbackToDM: false });
      if (!ephemeral) await (await thread()).post(text);
    },
    async post(text) {
      await (await thread()).post(text);
    },
  };
}

export function admissionDeps({ control, store, loadChat, settings, settingsProblems, logger, metrics }: AdmissionStores): AdmissionDeps {
  const actor = control.actor;
  return {
    logger,
    metrics,
    settings,
    settingsProblems,
    replies: (prompt) => threadReplies(loadChat, prompt),
    chatState: async () => (await loadChat()).state,
    renewEventFiles: (threadId, days, now) => renewForThread(actor, threadId, days, now.getTime()),
    spentBudget: (applied) => spentBudget(actor, applied),
    storePromptBody: (prompt, runId) => storePromptBody(store, prompt, runId),
    commands: COMMANDS,
    commandDeps: { control, store, logger, agents: { list: (threadId) => listAgents(store, threadId) } },
    threads: {
      read: async (threadId) => {
        const { item, paused } = await withPauseFlag(actor, actorKey(threadId));
        return { actor: item as ActorItem | undefined, paused };
      },
      actor: (threadId) => getActor(actor, threadId),
      admit: (prompt, options) => admitPrompt(actor, prompt, options),
      startWaiting: async (threadId) => void (await startWaiting(actor, threadId)),
      stop: async (threadId, reason) => void (await stopThread(control, threadId, reason)),
      steer: (prompt, text, runId) => steerWithPrompt(control, prompt, text, runId),
      reclaimStaleLease: (read, arrivingMessageId) => reclaimStaleLeaseOf(control, read, arrivingMessageId),
      reclaimStaleSlots: (channel) => reclaimStaleSlots(control, channel),
    },
  };
}
