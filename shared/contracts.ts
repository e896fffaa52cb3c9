// The typed contracts between components: what the inbox carries, what a run is, what a step gets.
// settings.json's schema is shared/settings/schema.ts.
import * as z from 'zod';
import { agentNameSchema } from './agents/name.ts';
import { CONTINUING_STEPS, NEXT_VALUES, STEP_ACTIONS } from './run/step-contract.ts';

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

/** `adapter:userId`, as budgets and access lists name a person (the person an event's run works for). */
export const causedBySchema = z
  .string()
  .max(300)
  .regex(/^[a-z][a-z0-9-]*:\S+$/);

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

const runIdSchema = z.string().regex(/^[A-Za-z0-9_-]{1,80}$/);

/** Longest task a subagent call may give (UTF-8 bytes), and longest context with it: they travel in the child's execution input. */
export const MAX_SUBAGENT_TASK_BYTES = 16 * 1024;
export const MAX_SUBAGENT_CONTEXT_BYTES = 32 * 1024;

const boundedText = (max: number) => z.string().refine((text) => utf8Bytes(text) <= max, `longer than ${max / 1024} KB (UTF-8)`);

/**
 * A child run, started by a run's `subagent` tool call (shared/run/subagents/): it works in the
 * thread's sandbox on a context of its own, under the run that holds the thread (the root).
 */
export const childRunSchema = z.object({
  parentRunId: runIdSchema,
  /** The run holding the thread's lease: its stop flag is the child's too. */
  rootRunId: runIdSchema,
  /** The parent's call this child answers. */
  toolUseId: z.string().min(1).max(200),
  /** The parent's wait this child belongs to: the id of its first call (shared/run/subagents/batch.ts). */
  batch: z.string().min(1).max(200),
  /** 1 for a child of the root run, 2 for its child, ... */
  depth: z.number().int().min(1).max(5),
  task: boundedText(MAX_SUBAGENT_TASK_BYTES),
  context: boundedText(MAX_SUBAGENT_CONTEXT_BYTES).optional(),
  /** Epoch milliseconds: the root run's time limit, which its children share. */
  deadline: z.number().int().positive(),
  /** Model calls left of the parent's maxModelSteps when it started the child. */
  maxModelSteps: z.number().int().positive(),
});
export type ChildRun = z.infer<typeof childRunSchema>;

export const runInputSchema = z.object({
  runId: runIdSchema,
  threadId: z.string(),
  prompt: promptSchema,
  /** The agent definition the run works as (shared/agents/); absent: the deployment's identity and tools. */
  agent: agentNameSchema.optional(),
  /** Admitted in collect mode: when it waited behind a run, the collect prompts queued after it go with it (`collected`). */
  collect: z.literal(true).optional(),
  /** Collect mode: the prompts that arrived after `prompt` while the thread was busy, answered by this run too. */
  collected: z.array(promptSchema).max(20).optional(),
  /** The execution running the run now, when it was handed over from the first one (named runId). */
  executionName: runIdSchema.optional(),
  /** Present when the run is a subagent's, started by another run's tool call. */
  child: childRunSchema.optional(),
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
  /** The thread's context.jsonl version (ETag) as the step left it (shared/run/steps/run-context.ts). */
  contextVersion: z.string().max(200).optional(),
  /** `next: approval`: the approval record the run waits on, and how long it may still wait (AwaitApproval's timeout). */
  approval: z.object({ id: z.string().max(300), timeoutSeconds: z.number().int().min(1) }).optional(),
  /** `next: subagents`: the wait for the children a run's subagent calls started, and how long it may still wait (AwaitSubagents' timeout). */
  subagents: z.object({ batch: z.string().max(200), timeoutSeconds: z.number().int().min(1) }).optional(),
  /** `next: sandbox`: the call a person approved, which the sandbox step may run although a rule holds it. */
  approvedToolUseId: z.string().max(200).optional(),
});
export type LoopState = z.infer<typeof loopStateSchema>;

export const stepEventSchema = z.object({
  action: z.enum(STEP_ACTIONS),
  state: runInputSchema.extend({
    loop: loopStateSchema.optional(),
    /** Set by the state machine's Catch: `{ Error, Cause }`. */
    error: z.object({ Error: z.string().optional(), Cause: z.string().optional() }).optional(),
  }),
  /** AwaitApproval's `$$.Task.Token`: the run goes on when a decision is sent with it. */
  taskToken: z.string().max(1024).optional(),
});
export type StepEvent = z.infer<typeof stepEventSchema>;
