// One prompt's admission: what is known of it, computed once before the first gate (settings, the
// person, the thread's replies, the channel), and what a gate decides: end the admission here (the
// prompt was refused, answered, or admitted to its thread) or pass it on with what it found.
import type { StateAdapter } from 'chat';
import type { Admission, ActorItem, AdmitOptions, NOT_NEW } from '../run/actor.ts';
import type { SteerOutcome } from '../run/control.ts';
import { controlPolicy, type ControlPolicy, type Person } from '../policy/access.ts';
import type { AppliedBudget } from '../policy/budgets.ts';
import type { Command, CommandDeps } from '../commands/command.ts';
import type { JsonLogger } from '../observability/log.ts';
import type { MetricsSink } from '../observability/metrics.ts';
import { channelKeyOf, opensThread, runIdFor } from '../ids.ts';
import type { Prompt } from '../contracts.ts';
import type { Settings } from '../settings/schema.ts';
import type { QueueMode } from '../settings/groups/queue.ts';
import { personOf } from './person.ts';

/** Where a prompt's answers go. */
export interface ThreadReplies {
  /** Tells the prompt's author: ephemerally where the platform can, else in the thread. */
  tell(text: string): Promise<void>;
  /** Says it to the whole thread. */
  post(text: string): Promise<void>;
}

export interface AdmissionContext {
  /** The prompt as it goes on (a long text moved to the data bucket once `storeLongText` ran). */
  prompt: Prompt;
  /** The prompt as the inbox carried it. */
  received: Prompt;
  /** settings.json, read once for the whole admission. */
  settings: Settings;
  /** Who sent it; none for an event file's or a trigger's prompt. */
  person: Person | undefined;
  /** `adapter:channel` */
  channel: string;
  thread: ThreadReplies;
  runId: string;
  now: Date;
  /** Who may stop or steer the thread's runs (settings.json `access`), kept in the thread's actor item. */
  control: ControlPolicy | undefined;
  /** The channel's queue mode; `interrupt` and `steer` turn to `queue` for someone who may not stop or steer the running run. */
  mode: QueueMode;
  /** The thread's actor item, as `readThread` found it (read with the pause flag); none before that gate or for a new thread. */
  actor: ActorItem | undefined;
  /** The deployment is paused: the prompt waits in its thread's queue and starts nothing. */
  paused: boolean;
  /**
   * The prompt is the first message of its thread (its platform says so): the thread is taken to be
   * new, with no actor item and the deployment not paused, without reading either; its admission
   * takes the lease only if that holds, and otherwise the gates run again from `readThread`.
   */
  opensThread: boolean;
  /** The agent the run works as (`chooseAgent`); `keepAgent`: the prompt chose it, and the thread keeps it. */
  agent?: string;
  keepAgent?: boolean;
}

/** What a gate may find out for the gates after it. */
export type Found = Partial<Pick<AdmissionContext, 'prompt' | 'mode' | 'actor' | 'paused' | 'agent' | 'keepAgent' | 'opensThread'>>;

/** How an admission ended: refused (its author told why), answered without a run (a command), or the thread's admission. */
/** `steered`: in steer mode, the prompt became a steer of its thread's running run. */
export type Ending = 'refused' | 'answered' | 'steered' | Admission;

/**
 * `alongside`: work the gate started that no later gate needs (a write of its own); it goes on while
 * they run, and the admission ends only once it has (its failure is the admission's).
 * `again`: what a gate took for granted was not so; the gates from `from` on run again, over the
 * context as it was when `from` first ran and what was `found` since (once per admission).
 */
export type Outcome = { next: Found; alongside?: Promise<unknown> } | { end: Ending } | { again: { from: Gate; found: Found } };

export const next = (found: Found = {}): Outcome => ({ next: found });
export const end = (ending: Ending): Outcome => ({ end: ending });

/** The chat's state, as the gates use it: who was told of a refusal, which threads the bot follows. */
export type ChatState = Pick<StateAdapter, 'setIfNotExists' | 'delete' | 'unsubscribe'>;

/** A thread's actor and runs, as admission uses them (shared/run/actor.ts, shared/run/control.ts). */
export interface Threads {
  /** The thread's actor item and the deployment's pause flag, read together. */
  read(threadId: string): Promise<{ actor: ActorItem | undefined; paused: boolean }>;
  actor(threadId: string): Promise<ActorItem | undefined>;
  /** With `newThread`, NOT_NEW when the thread has an actor item or the deployment is paused (nothing written). */
  admit(prompt: Prompt, options: AdmitOptions): Promise<Admission | typeof NOT_NEW>;
  /** Starts the first of the thread's waiting prompts, if it is idle. */
  startWaiting(threadId: string): Promise<void>;
  stop(threadId: string, reason: string): Promise<void>;
  /** Steer mode: `text` (the prompt's, under its author's name) steers the running `runId`, once per message. */
  steer(prompt: Prompt, text: string, runId: string): Promise<SteerOutcome | 'duplicate'>;
  /** Releases the lease of the thread whose actor item is `actor` when its run has ended and the release was lost; true when it did. */
  reclaimStaleLease(actor: ActorItem | undefined, arrivingMessageId: string): Promise<boolean>;
  /** The same for every slot holder of the channel (or, without one, the deployment); how many were freed. */
  reclaimStaleSlots(channel: string | undefined): Promise<number>;
}

/** What the gates use: each an interface, so a test gives plain in-memory fakes. */
export interface AdmissionDeps {
  logger: JsonLogger;
  metrics: MetricsSink;
  settings(): Promise<Settings>;
  /** Why settings.json (as `settings` read it) is not used as written, and which version of the file that is. */
  settingsProblems(): Promise<{ problems: string[]; version?: string }>;
  replies(prompt: Prompt): ThreadReplies;
  chatState(): Promise<ChatState>;
  /** The agent's periodic event files the thread belongs to, renewed while people use it; the ones renewed. */
  renewEventFiles(threadId: string, days: number, now: Date): Promise<string[]>;
  /** The first of `applied` that is spent, with what was spent. */
  spentBudget(applied: readonly AppliedBudget[]): Promise<{ refused: AppliedBudget; spentUsd: number } | undefined>;
  /** The prompt as it may wait and run: a long text moved to the data bucket, under the run's key. */
  storePromptBody(prompt: Prompt, runId: string): Promise<Prompt>;
  commands: readonly Command[];
  /** What the commands answered at dispatch use, besides the admission's settings. */
  commandDeps: Omit<CommandDeps, 'settings'>;
  threads: Threads;
}

export type Gate = (ctx: AdmissionContext, deps: AdmissionDeps) => Promise<Outcome>;

/** What admission knows of `prompt` before its first gate. */
export async function admissionContext(
  prompt: Prompt,
  deps: Pick<AdmissionDeps, 'settings' | 'replies'>,
  now = new Date(),
): Promise<AdmissionContext> {
  const settings = await deps.settings();
  const channel = channelKeyOf(prompt.threadId);
  return {
    prompt,
    received: prompt,
    settings,
    person: personOf(prompt),
    channel,
    thread: deps.replies(prompt),
    runId: runIdFor(prompt.threadId, prompt.messageId),
    now,
    control: controlPolicy(settings.access, channel),
    mode: settings.channels[channel]?.queueMode ?? settings.queueMode,
    actor: undefined,
    paused: false,
    opensThread: opensThread(prompt.threadId, prompt.messageId),
  };
}
