// Admission's dependencies as plain in-memory data, for tests of the gates and of the batch around
// them (no emulator): what each was asked and told is recorded.
import type { AdmissionDeps, ChatState } from '../../shared/admission/context.ts';
import type { Command } from '../../shared/commands/command.ts';
import { createLogger } from '../../shared/observability/log.ts';
import type { AppliedBudget } from '../../shared/policy/budgets.ts';
import type { Admission, ActorItem, AdmitOptions, NOT_NEW } from '../../shared/run/actor.ts';
import type { ControlDeps, SteerOutcome } from '../../shared/run/control.ts';
import type { Prompt } from '../../shared/contracts.ts';
import type { Settings } from '../../shared/settings/schema.ts';

/** Stands in for a dependency a test's gate must not touch. */
export function untouched<T extends object>(what: string): T {
  return new Proxy({} as T, {
    get: (_target, key) => {
      throw new Error(`${what}.${String(key)} used`);
    },
  });
}

export interface Fakes {
  deps: AdmissionDeps;
  told: string[];
  posted: string[];
  logs: { message: string; level: string }[];
  metrics: { name: string; dimensions: unknown }[];
  state: Map<string, unknown>;
  unsubscribed: string[];
  renewed: { threadId: string; days: number }[];
  calls: string[];
  admitted: AdmitOptions[];
  settingsReads: number;
}

/** Every dependency as plain data; `admissions` are what the thread's actor answers, in turn. */
export function fakes(
  settings: Settings,
  options: {
    admissions?: (Admission | typeof NOT_NEW)[];
    spent?: { refused: AppliedBudget; spentUsd: number };
    paused?: boolean;
    actor?: ActorItem;
    freedSlots?: number;
    /** The stale lease check releases the thread, which is then `actorAfterReclaim`. */
    reclaims?: boolean;
    actorAfterReclaim?: ActorItem;
    commands?: readonly Command[];
    failTell?: boolean;
    /** What steering the running run answers (steer mode); default 'queued'. */
    steered?: SteerOutcome | 'duplicate';
    /** Awaited inside each thread admission, after it is recorded: to hold it or make it fail. */
    onAdmit?: (prompt: Prompt) => Promise<void>;
    /** What settings.json's check found (default: nothing wrong). */
    settingsProblems?: { problems: string[]; version?: string };
  } = {},
): Fakes {
  const f: Fakes = {
    told: [],
    posted: [],
    logs: [],
    metrics: [],
    state: new Map(),
    unsubscribed: [],
    renewed: [],
    calls: [],
    admitted: [],
    settingsReads: 0,
    deps: undefined as unknown as AdmissionDeps,
  };
  const admissions = [...(options.admissions ?? ['started'])];
  const chatState: ChatState = {
    setIfNotExists: async (key, value) => {
      if (f.state.has(key)) return false;
      f.state.set(key, value);
      return true;
    },
    delete: async (key) => void f.state.delete(key),
    unsubscribe: async (threadId) => void f.unsubscribed.push(threadId),
  };
  const logger = createLogger({ level: 'info', write: (line) => f.logs.push(JSON.parse(line) as { message: string; level: string }) });
  f.deps = {
    logger,
    metrics: { put: (name, _value, dimensions) => void f.metrics.push({ name, dimensions }) },
    settings: async () => {
      f.settingsReads++;
      return settings;
    },
    settingsProblems: async () => options.settingsProblems ?? { problems: [] },
    replies: () => ({
      tell: async (text) => {
        if (options.failTell) throw new Error('the chat is down');
        f.told.push(text);
      },
      post: async (text) => void f.posted.push(text),
    }),
    chatState: async () => chatState,
    renewEventFiles: async (threadId, days) => {
      f.renewed.push({ threadId, days });
      return ['events/slack/C1/daily.json'];
    },
    spentBudget: async () => options.spent,
    storePromptBody: async (prompt, runId) => ({ ...prompt, text: 'stored', textKey: `prompts/${runId}.txt` }),
    commands: options.commands ?? [],
    commandDeps: { control: untouched<ControlDeps>('control'), logger },
    threads: {
      read: async (threadId) => {
        f.calls.push(`read ${threadId}`);
        return { actor: options.actor, paused: options.paused ?? false };
      },
      actor: async (threadId) => {
        f.calls.push(`actor ${threadId}`);
        return options.reclaims ? options.actorAfterReclaim : options.actor;
      },
      admit: async (prompt, admitOptions) => {
        f.calls.push(`admit ${prompt.text}`);
        f.admitted.push(admitOptions);
        await options.onAdmit?.(prompt);
        return admissions.shift() ?? 'started';
      },
      startWaiting: async (threadId) => void f.calls.push(`startWaiting ${threadId}`),
      stop: async (threadId, reason) => void f.calls.push(`stop ${threadId}: ${reason}`),
      steer: async (prompt, text, runId) => {
        f.calls.push(`steer ${runId}: ${text}`);
        return options.steered ?? 'queued';
      },
      reclaimStaleLease: async (actor, messageId) => {
        f.calls.push(`reclaimStaleLease ${actor?.current?.runId ?? 'no run'} ${messageId}`);
        return options.reclaims ?? false;
      },
      reclaimStaleSlots: async (channel) => {
        f.calls.push(`reclaimStaleSlots ${channel ?? 'deployment'}`);
        return options.freedSlots ?? 0;
      },
    },
  };
  return f;
}
