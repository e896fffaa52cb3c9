// Which handler module each function of the stack runs, relative to the repository root. The
// stack's `functions` property uses the same keys, so a local runner can map either way.
// Every module exports `handler`.
import { fileURLToPath } from 'node:url';

/** The repository root: entries, package.json and the lock file are resolved from here, not from the cwd. */
export const PROJECT_ROOT = fileURLToPath(new URL('../', import.meta.url));

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
