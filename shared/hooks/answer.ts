// What a hook is given and what it may answer: one contract for command and lambda hooks.
//
// A command hook gets the event as JSON on stdin and answers by exit code: 0 allows (stdout may be
// an answer object, below), 2 blocks with stderr as the reason, anything else (or a timeout) is a
// hook error. A lambda hook gets the same JSON as its event and returns the answer object (a
// `"decision": "block"` with a `reason` blocks); a function error or a timeout is a hook error.
// A hook error is logged and audited and passed over, unless the hook says `failClosed`: then it blocks.
import * as z from 'zod';
import type { HookEvent } from './settings.ts';

/** The event a hook is given. Only the fields of its event are set. */
export interface HookInput {
  event: HookEvent;
  runId: string;
  threadId: string;
  /** `adapter:channel` */
  channel: string;
  user: { id: string; name: string };
  /** UserPromptSubmit: the prompt's text. */
  prompt?: string;
  /** PreToolUse, PostToolUse: the call. */
  tool?: { name: string; toolUseId: string; input: unknown };
  /** PostToolUse: what the call returned. */
  result?: { status: 'success' | 'error'; text: string };
  /** Stop: the answer the model ended its turn with. */
  answer?: string;
  /** SessionEnd: how the run ended. */
  outcome?: string;
}

/** Longest text a hook may add (context, a reason, a result, a message): it reaches the model. */
export const MAX_HOOK_TEXT_CHARS = 8000;

const text = z.string().max(MAX_HOOK_TEXT_CHARS, `must be at most ${MAX_HOOK_TEXT_CHARS} characters`);

/** The answer object: stdout of a command hook that exits 0, or a lambda hook's response payload. */
export const hookAnswerSchema = z
  .object({
    /** PreToolUse: the call runs with this input instead (checked by the tool like any input). */
    input: z.record(z.string(), z.unknown()).optional(),
    /** UserPromptSubmit, SessionStart, PreToolUse: text the model is given beside the prompt or the call's result. */
    context: text.optional(),
    /** PostToolUse: the result the model sees instead of the call's own. */
    result: text.optional(),
    /** Stop: the model takes one more turn with this message. */
    continue: text.min(1).optional(),
    /** `block` refuses (with `reason`); `approve` (PreToolUse) makes the call wait for a person, as an `approvals` rule would. */
    decision: z.enum(['allow', 'block', 'approve']).optional(),
    reason: text.optional(),
  })
  .strict();
export type HookAnswerObject = z.infer<typeof hookAnswerSchema>;

/** What a hook decided. */
export type HookAnswer =
  | ({ kind: 'allow' } & Omit<HookAnswerObject, 'decision' | 'reason'> & { approve?: true })
  | { kind: 'block'; reason: string }
  | { kind: 'error'; problem: string; timedOut?: true };

const NO_REASON = 'a hook blocked it (no reason given)';

function fromObject(raw: unknown): HookAnswer {
  const parsed = hookAnswerSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { kind: 'error', problem: `its answer is not a hook answer: ${issue.path.join('.') || 'answer'} ${issue.message}` };
  }
  const { decision, reason, ...rest } = parsed.data;
  if (decision === 'block') return { kind: 'block', reason: reason?.trim() || NO_REASON };
  return { kind: 'allow', ...rest, ...(decision === 'approve' ? { approve: true as const } : {}) };
}

/** A command hook's answer from how its process ended. */
export function commandAnswer(ended: { exitCode: number | null; timedOut: boolean; stdout: string; stderr: string }): HookAnswer {
  if (ended.timedOut) return { kind: 'error', problem: 'it timed out', timedOut: true };
  if (ended.exitCode === 2) return { kind: 'block', reason: ended.stderr.trim() || NO_REASON };
  if (ended.exitCode !== 0) {
    const said = ended.stderr.trim().split('\n').at(-1)?.slice(0, 300);
    return { kind: 'error', problem: `it exited with ${ended.exitCode ?? 'a signal'}${said ? `: ${said}` : ''}` };
  }
  return fromText(ended.stdout, 'it exited 0 with output that is not a JSON answer object');
}

/** An answer object written as JSON (nothing, or `null`: allow). */
function fromText(text: string | undefined, notJson: string): HookAnswer {
  const body = text?.trim();
  if (!body || body === 'null') return { kind: 'allow' };
  try {
    return fromObject(JSON.parse(body));
  } catch {
    return { kind: 'error', problem: notJson };
  }
}

/** A lambda hook's answer from its response payload (null or empty: allow). */
export function lambdaAnswer(payload: string | undefined, functionError: string | undefined): HookAnswer {
  if (functionError) return { kind: 'error', problem: `the function failed (${functionError})` };
  return fromText(payload, 'its response is not JSON');
}
