// Which handler module each function of the stack runs, relative to the repository root. The
// stack's `functions` property uses the same keys, so a local runner can map either way.
// Every module exports `handler`.
export const FUNCTION_ENTRIES = {
  webhook: 'functions/ingress/webhook.ts',
  teamsWebhook: 'functions/ingress/teams-webhook.ts',
  dispatch: 'functions/ingress/dispatch.ts',
  runEnded: 'functions/agent-step/run-ended.ts',
  agentStep: 'functions/agent-step/handler.ts',
  sandboxStep: 'functions/agent-step/sandbox-step.ts',
  sandboxReaper: 'functions/agent-step/sandbox-reaper.ts',
  scheduler: 'functions/scheduler/handler.ts',
} as const;

export type FunctionRole = keyof typeof FUNCTION_ENTRIES;
