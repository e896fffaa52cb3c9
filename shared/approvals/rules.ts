// Which tool calls wait for a person: settings.json `approvals`. A rule names a tool (or a glob of
// tool names), optionally a pattern over the call's input as JSON (run by the secret filter's
// bounded engine, so a rule cannot stall a step), who may decide, and how long the call may wait.
// Prepare resolves the rules into the run's snapshot, with each rule's approvers as `adapter:id`,
// so the step that gates a call and the webhook that takes a click read no settings.json.
import * as z from 'zod';
import { customPatternProblem, matchesBounded } from '../policy/secret-filter.ts';
import { EVENT_AUTHOR_ID, type Access } from '../policy/access.ts';
import { parseThreadId } from '../ids.ts';
import type { RunInput } from '../contracts.ts';
import type { ToolCall } from '../tools/tool.ts';

export const DEFAULT_APPROVAL_TIMEOUT_MINUTES = 60;
/** A day, the longest maxRunMinutes: a wait ends by the run's time limit anyway (shared/approvals/gate.ts). */
export const MAX_APPROVAL_TIMEOUT_MINUTES = 24 * 60;

const userId = z.string().min(1).max(100).regex(/^\S+$/, 'must be a user id, e.g. U0123ABCD or slack:U0123ABCD');

/** `slack:U0123`, `teams:29:1abc`: an id that names its platform (a Teams id itself holds a colon). */
const QUALIFIED = /^[a-z][a-z0-9-]*:/;

/** A tool name, or a glob: `*` any characters, `?` one (an `approvals` rule's, a hook's `tool`). */
export const toolGlobSchema = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9_.*?-]+$/, 'must be a tool name or a glob of one (letters, digits, _ . - and the wildcards * ?)');

export const approvalRuleSchema = z
  .object({
    tool: toolGlobSchema,
    match: z
      .string()
      .optional()
      .superRefine((regex, ctx) => {
        const problem = regex === undefined ? undefined : customPatternProblem(regex);
        if (problem) ctx.addIssue({ code: 'custom', message: `/${regex}/ ${problem}` });
      }),
    approvers: z.union([z.enum(['admins', 'requester']), z.array(userId).min(1).max(50)]),
    /** May be a fraction (0.5: 30 seconds). */
    timeoutMinutes: z.number().min(0.1).max(MAX_APPROVAL_TIMEOUT_MINUTES).default(DEFAULT_APPROVAL_TIMEOUT_MINUTES),
  })
  .strict();
export type ApprovalRuleSetting = z.infer<typeof approvalRuleSchema>;

export const approvalRulesSchema = z.array(approvalRuleSchema).max(50);

/** A rule as a run's snapshot holds it: its approvers resolved to `adapter:id`. */
export interface ApprovalRule {
  tool: string;
  match?: string;
  /** What the rule said (shown in the approval message). */
  approversSetting: 'admins' | 'requester' | 'listed';
  approvers: string[];
  timeoutMinutes: number;
}

/**
 * The rules in force for a run: the deployment's, then its channel's. `admins` are settings.json's
 * admins; `requester` is the prompt's author (for an event's prompt: the person whose run wrote the
 * event, else the admins); a bare id in a list is taken on the run's own platform.
 */
export function resolveApprovalRules(
  deployment: readonly ApprovalRuleSetting[],
  channel: readonly ApprovalRuleSetting[] | undefined,
  access: Pick<Access, 'admins'>,
  run: RunInput,
): ApprovalRule[] {
  const { adapter } = parseThreadId(run.threadId);
  const author = run.prompt.author.userId;
  const requester =
    author !== EVENT_AUTHOR_ID ? [`${adapter}:${author}`] : run.prompt.causedBy ? [run.prompt.causedBy] : [...access.admins];
  return [...deployment, ...(channel ?? [])].map((rule) => ({
    tool: rule.tool,
    ...(rule.match !== undefined ? { match: rule.match } : {}),
    approversSetting: Array.isArray(rule.approvers) ? 'listed' : rule.approvers,
    approvers:
      rule.approvers === 'admins'
        ? [...access.admins]
        : rule.approvers === 'requester'
          ? requester
          : rule.approvers.map((id) => (QUALIFIED.test(id) ? id : `${adapter}:${id}`)),
    timeoutMinutes: rule.timeoutMinutes,
  }));
}

/** A tool glob (`*` any characters, `?` one) as a whole-name pattern; hooks use it too (shared/hooks/settings.ts). */
export const toolGlobPattern = (glob: string) =>
  new RegExp(
    `^${glob
      .replace(/[.+^${}()|[\]\\-]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
  );

/** The first rule that makes `call` wait for a person, if any. */
export function approvalRuleFor(
  rules: readonly ApprovalRule[] | undefined,
  call: Pick<ToolCall, 'name' | 'input'>,
): ApprovalRule | undefined {
  if (!rules?.length) return undefined;
  let input: string | undefined;
  return rules.find((rule) => {
    if (!toolGlobPattern(rule.tool).test(call.name)) return false;
    if (rule.match === undefined) return true;
    input ??= JSON.stringify(call.input ?? {});
    return matchesBounded(rule.match, input);
  });
}
