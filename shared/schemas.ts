// The typed contracts between components: what the inbox carries, what a run is, what a step gets.
import * as z from 'zod';
import {
  DEFAULT_CAPACITY_LIMITS,
  DEFAULT_COMPACTION_SETTINGS,
  DEFAULT_EVENT_LIMITS,
  DEFAULT_MAX_SKILL_BODY_CHARS,
  DEFAULT_MIN_EVENT_INTERVAL_MINUTES,
  DEFAULT_SANDBOX_SYNC_LIMITS,
} from './defaults.ts';
import { customPatternProblem } from './policy/secret-filter.ts';
import { CONTINUING_STEPS, NEXT_VALUES, STEP_ACTIONS } from './run/step-contract.ts';
import { budgetSchema } from './policy/budgets.ts';
import { priceSchema } from './model/pricing.ts';
import { accessSchema, OPEN_ACCESS, type Access } from './policy/access.ts';
import { causedBySchema } from './events/chain.ts';

/**
 * Longest prompt text, in UTF-8 bytes (a character is 1 to 4 of them): every 40,000-character Slack
 * message of Latin or CJK text fits, and the inbox message (256 KB) keeps room for the rest.
 */
export const MAX_PROMPT_BYTES = 128 * 1024;

export const utf8Bytes = (text: string): number => Buffer.byteLength(text, 'utf8');

/** Why `text` cannot be a prompt, naming the limit; undefined when it can. */
export function promptTextProblem(text: string, what = 'That message'): string | undefined {
  const bytes = utf8Bytes(text);
  if (bytes <= MAX_PROMPT_BYTES) return undefined;
  return `${what} is ${kib(bytes)} KB; the limit is ${kib(MAX_PROMPT_BYTES)} KB (UTF-8).`;
}

/** A prompt's (or an event's) text, bounded by MAX_PROMPT_BYTES. */
export const promptTextSchema = z.string().superRefine((text, ctx) => {
  const problem = promptTextProblem(text, 'The text');
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

const kib = (bytes: number) => (Math.ceil((bytes / 1024) * 10) / 10).toLocaleString('en-US');

export const serializedThreadSchema = z
  .object({
    _type: z.literal('chat:Thread'),
    id: z.string(),
    adapterName: z.string(),
    channelId: z.string(),
    isDM: z.boolean(),
  })
  .passthrough();

/** A file already stored in the thread's attachments/ (by a trigger or an upload) for the prompt. */
export const promptFileSchema = z.object({
  original: z.string().min(1),
  key: z.string().min(1),
  mimeType: z.string().min(1),
  size: z.number().int().nonnegative(),
});
export type PromptFile = z.infer<typeof promptFileSchema>;

/** Where a prompt that no person wrote came from (a declared trigger or an upload). */
export const promptSourceSchema = z.object({
  trigger: z.string().min(1).optional(),
  eventId: z.string().min(1).optional(),
  objectKey: z.string().min(1).optional(),
});

export const promptSchema = z.object({
  threadId: z.string().min(1),
  messageId: z.string().min(1),
  /** The prompt's text; its beginning only when `textKey` is set. */
  text: promptTextSchema,
  /** Where a long text was stored in the data bucket (see shared/admission/prompt-body.ts). */
  textKey: z.string().optional(),
  author: z.object({ userId: z.string(), userName: z.string() }),
  postedAt: z.string(),
  /** `thread.toJSON()` with the triggering message, so a step can rebuild the thread and stream natively. */
  thread: serializedThreadSchema,
  /** A heartbeat's prompt: its answer is posted only if there is something to say (not HEARTBEAT_OK). */
  heartbeat: z.boolean().optional(),
  /** Started by an event that a run wrote, this many events deep (absent: a person or an operator). */
  eventDepth: z.number().int().min(1).optional(),
  /** An event's prompt: the person (`adapter:userId`) whose run wrote its file, whose budgets it spends. */
  causedBy: causedBySchema.optional(),
  /** Files stored for this prompt before it was queued. */
  files: z.array(promptFileSchema).max(10).optional(),
  source: promptSourceSchema.optional(),
});
export type Prompt = z.infer<typeof promptSchema>;

export const runInputSchema = z.object({
  runId: z.string().regex(/^[A-Za-z0-9_-]{1,80}$/),
  threadId: z.string(),
  prompt: promptSchema,
  /** The execution running the run now, when it was handed over from the first one (named runId). */
  executionName: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,80}$/)
    .optional(),
});
export type RunInput = z.infer<typeof runInputSchema>;

export const loopStateSchema = z.object({
  step: z.number().int().nonnegative(),
  next: z.enum(NEXT_VALUES),
  stopReason: z.string().optional(),
  /** Steps taken in this execution; past a bound the run hands over to a fresh execution. */
  work: z.number().int().nonnegative().optional(),
  /** Where a handed-over run resumes. */
  resume: z.enum(CONTINUING_STEPS).optional(),
});
export type LoopState = z.infer<typeof loopStateSchema>;

export const stepEventSchema = z.object({
  action: z.enum(STEP_ACTIONS),
  state: runInputSchema.extend({
    loop: loopStateSchema.optional(),
    /** Set by the state machine's Catch: `{ Error, Cause }`. */
    error: z.object({ Error: z.string().optional(), Cause: z.string().optional() }).optional(),
  }),
});
export type StepEvent = z.infer<typeof stepEventSchema>;

const modelSettingsSchema = z.object({
  id: z.string().min(1).optional(),
  maxOutputTokens: z.number().int().positive().max(128_000).optional(),
  temperature: z.number().min(0).max(1).optional(),
});

const DEFAULT_UPLOAD_PROMPT = 'A file was uploaded for you. Read it and summarise what it holds and anything that needs attention.';

export const settingsSchema = z.object({
  model: modelSettingsSchema.default({}),
  /** Upper bound on model calls in one run, far below Step Functions' 25,000-event history limit. */
  maxModelSteps: z.number().int().positive().max(200).default(40),
  /** Tool calls one model response may make; the rest get an error result. */
  maxToolCallsPerTurn: z.number().int().positive().max(100).default(20),
  /** Longest one run may work before it stops with a message. */
  maxRunMinutes: z
    .number()
    .positive()
    .max(24 * 60)
    .default(30),
  /** Prompts that may wait behind a running one; more get a "busy" reply. At most 20: they share the thread's actor item (DynamoDB's 400 KB). */
  maxQueueDepth: z.number().int().min(0).max(20).default(5),
  /** queue: prompts wait their turn; interrupt: a new prompt stops the running one and runs next. */
  queueMode: z.enum(['queue', 'interrupt']).default('queue'),
  /** When the context is summarised (token estimates; defaults and reasons in shared/defaults.ts, logic in shared/context/compaction.ts). */
  compaction: z
    .object({
      contextWindowTokens: z.number().int().positive().default(DEFAULT_COMPACTION_SETTINGS.contextWindowTokens),
      reservedOutputTokens: z.number().int().nonnegative().default(DEFAULT_COMPACTION_SETTINGS.reservedOutputTokens),
      keepRecentTokens: z.number().int().positive().default(DEFAULT_COMPACTION_SETTINGS.keepRecentTokens),
      thresholdRatio: z.number().positive().max(1).default(DEFAULT_COMPACTION_SETTINGS.thresholdRatio),
    })
    .default({ ...DEFAULT_COMPACTION_SETTINGS }),
  /** USD per million tokens by model or inference profile id, over the built-in list (shared/model/pricing.ts). */
  prices: z.record(z.string(), priceSchema).default({}),
  /** Post the run's tokens and cost in the thread when it finishes. */
  showCost: z.boolean().default(false),
  /** Spending limits, checked before every model call (shared/policy/budgets.ts). */
  budgets: z.array(budgetSchema).max(50).default([]),
  /** Bedrock prompt caching (cachePoint blocks); turn off for models without it. */
  promptCaching: z.boolean().default(true),
  sandbox: z
    .object({
      /** Start the thread's sandbox when a run begins (in parallel with the first model call). */
      startEarly: z.boolean().default(true),
      /** Files under /workspace/data kept in S3 per sandbox; below the command server's listing limit. */
      maxSyncedFiles: z.number().int().positive().max(9_000).default(DEFAULT_SANDBOX_SYNC_LIMITS.maxSyncedFiles),
      /** Their total size, in MiB. */
      maxSyncedMegabytes: z.number().int().positive().max(10_240).default(DEFAULT_SANDBOX_SYNC_LIMITS.maxSyncedMegabytes),
    })
    .default({ startEarly: true, ...DEFAULT_SANDBOX_SYNC_LIMITS }),
  /** A skill's instructions longer than this are cut in the system prompt, with a note naming the file. */
  maxSkillBodyChars: z.number().int().min(500).max(200_000).default(DEFAULT_MAX_SKILL_BODY_CHARS),
  /** Events written by runs that events started stop being run past this depth (0: runs never start runs). */
  maxEventChainDepth: z.number().int().min(0).max(20).default(DEFAULT_EVENT_LIMITS.maxEventChainDepth),
  /** Event files one channel's folder may hold (error files aside); more are refused. */
  maxEventFilesPerChannel: z.number().int().positive().max(1_000).default(DEFAULT_EVENT_LIMITS.maxEventFilesPerChannel),
  /** Event files one run may save from its sandbox (each save counts); more get an error file instead. */
  maxEventFilesPerRun: z.number().int().min(0).max(100).default(DEFAULT_EVENT_LIMITS.maxEventFilesPerRun),
  /** Periodic event files the agent may keep in one channel's folder (operators' files aside). */
  maxAgentPeriodicEventsPerChannel: z.number().int().min(0).max(100).default(DEFAULT_EVENT_LIMITS.maxAgentPeriodicEventsPerChannel),
  /** Days an agent's periodic event file keeps firing after it was saved or a person last replied in one of its threads. */
  agentPeriodicEventDays: z.number().int().min(1).max(365).default(DEFAULT_EVENT_LIMITS.agentPeriodicEventDays),
  /** Periodic event files whose cron fires closer together than this are refused (1 to 60 minutes). */
  minEventIntervalMinutes: z.number().int().min(1).max(60).default(DEFAULT_MIN_EVENT_INTERVAL_MINUTES),
  /** Files put under uploads/{adapter}/{channel}/ in the data bucket: each starts a thread in that channel. */
  uploads: z
    .object({
      /** What the agent is asked to do with an upload that has no NAME.prompt.txt beside it. */
      prompt: z.string().min(1).max(4000).default(DEFAULT_UPLOAD_PROMPT),
      /** Larger uploads are announced but not copied into the thread. */
      maxMegabytes: z.number().positive().max(50).default(20),
    })
    .default({ prompt: DEFAULT_UPLOAD_PROMPT, maxMegabytes: 20 }),
  // --- Bounds on work across threads and secrets in what is posted and logged (capacity.ts, secret-filter.ts).
  limits: z
    .object({
      /** Runs holding a lease at once in one channel; a new thread's prompt past it is refused with a reply. */
      maxConcurrentRunsPerChannel: z.number().int().positive().max(1_000).default(DEFAULT_CAPACITY_LIMITS.maxConcurrentRunsPerChannel),
      /** Runs holding a lease at once in the deployment. */
      maxConcurrentRuns: z.number().int().positive().max(10_000).default(DEFAULT_CAPACITY_LIMITS.maxConcurrentRuns),
      /** Sandbox tasks at once; a tool call that would start one more gets an error result. */
      maxRunningSandboxes: z.number().int().positive().max(5_000).default(DEFAULT_CAPACITY_LIMITS.maxRunningSandboxes),
    })
    .default({ ...DEFAULT_CAPACITY_LIMITS }),
  /** A deployment's own secret formats, redacted like the built-in ones (shared/policy/secret-filter.ts). */
  secretPatterns: z
    .array(
      z
        .object({ name: z.string().min(1).max(60), regex: z.string() })
        .strict()
        .superRefine(({ name, regex }, ctx) => {
          const problem = customPatternProblem(regex);
          // Named in full: the log line is all an operator sees of a refused pattern.
          if (problem) ctx.addIssue({ code: 'custom', path: ['regex'], message: `${JSON.stringify(name)} (/${regex}/) ${problem}` });
        }),
    )
    .max(50)
    .default([]),
  // --- end of the bounds block.
  /** Per-channel overrides, keyed `adapter:channel` (e.g. `slack:C0123`). */
  channels: z
    .record(
      z.string(),
      z.object({
        model: modelSettingsSchema.optional(),
        queueMode: z.enum(['queue', 'interrupt']).optional(),
        uploadPrompt: z.string().min(1).max(4000).optional(),
      }),
    )
    .default({}),

  // Access: who may use the agent, who may stop or steer its runs (shared/policy/access.ts).
  access: accessSchema.default({ ...OPEN_ACCESS }),
});
/** `access` may also be locked: see loadSettings. */
export type Settings = Omit<z.infer<typeof settingsSchema>, 'access'> & { access: Access };
