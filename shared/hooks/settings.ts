// settings.json `hooks`: the operator's own policy at points of a run. Each hook names an event, for a
// tool event optionally a tool (a name or a glob, as in `approvals`), and one target: a `command` run in
// the thread's sandbox, or a `lambda`, an operator function (its ARN declared in cdk.json context
// `hookFunctions`). What a hook may answer is shared/hooks/answer.ts.
import * as z from 'zod';
import { toolGlobPattern, toolGlobSchema } from '../approvals/rules.ts';

export const HOOK_EVENTS = ['UserPromptSubmit', 'PreToolUse', 'PostToolUse', 'Stop', 'SessionStart', 'SessionEnd'] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];

/** The events about one tool call: the only ones a `tool` narrows, and the only ones a `command` hook serves. */
export const TOOL_EVENTS: readonly HookEvent[] = ['PreToolUse', 'PostToolUse'];

export const DEFAULT_HOOK_TIMEOUT_SECONDS = 10;
export const MAX_HOOK_TIMEOUT_SECONDS = 60;
export const MAX_HOOKS = 20;

/** A Lambda function's ARN, unqualified or with a version or alias. */
export const HOOK_FUNCTION_ARN = /^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]{1,64}(:[A-Za-z0-9$_-]{1,128})?$/;

export const hookSchema = z
  .object({
    event: z.enum(HOOK_EVENTS, { error: `must be one of ${HOOK_EVENTS.join(', ')}` }),
    /** Absent: every tool. */
    tool: toolGlobSchema.optional(),
    command: z.string().min(1).max(2000).optional(),
    lambda: z
      .string()
      .regex(HOOK_FUNCTION_ARN, 'must be a Lambda function ARN, such as arn:aws:lambda:us-east-1:123456789012:function:org-policy')
      .optional(),
    timeoutSeconds: z.number().min(1).max(MAX_HOOK_TIMEOUT_SECONDS).default(DEFAULT_HOOK_TIMEOUT_SECONDS),
    /** A hook that fails (an exit other than 0 and 2, a timeout, a bad answer) blocks instead of being passed over. */
    failClosed: z.boolean().default(false),
  })
  .strict()
  .superRefine((hook, ctx) => {
    if ((hook.command === undefined) === (hook.lambda === undefined)) {
      ctx.addIssue({ code: 'custom', message: 'a hook has exactly one target: "command" or "lambda"' });
    }
    if (hook.tool !== undefined && !TOOL_EVENTS.includes(hook.event)) {
      ctx.addIssue({ code: 'custom', path: ['tool'], message: `"tool" narrows PreToolUse and PostToolUse hooks only, not ${hook.event}` });
    }
    if (hook.command !== undefined && !TOOL_EVENTS.includes(hook.event)) {
      ctx.addIssue({
        code: 'custom',
        path: ['command'],
        message: `a command hook runs in the sandbox beside a sandbox tool call (PreToolUse, PostToolUse); a ${hook.event} hook must be a "lambda"`,
      });
    }
  });
export type Hook = z.infer<typeof hookSchema>;

export const hooksSchema = z.array(hookSchema).max(MAX_HOOKS);

/** The hooks in force for a run: the deployment's, then its channel's (a channel adds to them, it cannot drop one). */
export const hooksForRun = (deployment: readonly Hook[], channel: readonly Hook[] | undefined): Hook[] => [
  ...deployment,
  ...(channel ?? []),
];

/** The hooks of `event` (for a tool event, those whose `tool` matches `tool`), in order, of the given kind. */
export function hooksFor(
  hooks: readonly Hook[] | undefined,
  event: HookEvent,
  options: { tool?: string; kind?: 'command' | 'lambda' } = {},
): Hook[] {
  return (hooks ?? []).filter(
    (hook) =>
      hook.event === event &&
      (hook.tool === undefined || (options.tool !== undefined && toolGlobPattern(hook.tool).test(options.tool))) &&
      (options.kind === undefined || (options.kind === 'command' ? hook.command !== undefined : hook.lambda !== undefined)),
  );
}

export const hookTarget = (hook: Hook): string => hook.lambda ?? `command: ${hook.command!.slice(0, 100)}`;

/** Whether any hook runs in the sandbox (then the sandbox gets the hook files). */
export const hasCommandHooks = (hooks: readonly Hook[] | undefined): boolean => (hooks ?? []).some((hook) => hook.command !== undefined);
