// The contract between the agent run's state machine (infra/constructs/agent-run-definition.ts) and
// the step handlers: the `action` each task sends, and the `next` a step returns under $.loop.

/** What a task asks agent-step (or sandbox-step and reach-step, for 'tool'; reach-step, for 'connect') to do. */
export const STEP_ACTIONS = ['prepare', 'model', 'tool', 'approval', 'subagents', 'connect', 'handoff', 'finish', 'fail'] as const;
export type StepAction = (typeof STEP_ACTIONS)[number];

/** `next` values that lead to another step; a handed-over run resumes at one of these. */
export const CONTINUING_STEPS = ['model', 'tool', 'sandbox', 'reach', 'connect'] as const;
export type ContinuingStep = (typeof CONTINUING_STEPS)[number];

/**
 * Every `next` a step may return: another step, a wait for a person's decision on a tool call or for
 * the run's subagents (never handed over: each wait is one state), a hand-over to a fresh execution,
 * or the end.
 */
export const NEXT_VALUES = [...CONTINUING_STEPS, 'approval', 'subagents', 'handoff', 'finish'] as const;
export type NextValue = (typeof NEXT_VALUES)[number];

/** The error AwaitApproval's Catch sends back to the Tool state: the approval it would wait on no longer waits. */
export const APPROVAL_NOT_WAITING = 'ApprovalNotWaiting';
