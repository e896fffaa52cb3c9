// Which handler module each function of the stack runs, relative to the repository root. The
// stack's `functions` property uses the same keys, so a local runner can map either way.
// Every module exports `handler`. Each chat platform's webhook function is its descriptor's
// (shared/platforms/<name>/descriptor.ts).
import { fileURLToPath } from 'node:url';
import { PLATFORM_DESCRIPTORS } from '../shared/platforms/descriptors.ts';

/** The repository root: entries, package.json and the lock file are resolved from here, not from the cwd. */
export const PROJECT_ROOT = fileURLToPath(new URL('../', import.meta.url));

/** The roles of the platforms' webhook functions. */
export type WebhookRole = (typeof PLATFORM_DESCRIPTORS)[number]['deployment']['webhook']['role'];
/** The webhook functions that exist only where their platform is served (`webhook` also answers GET /health). */
export type PlatformWebhookRole = Exclude<WebhookRole, 'webhook'>;

const webhookEntries = Object.fromEntries(
  PLATFORM_DESCRIPTORS.map(({ deployment: { webhook } }) => [webhook.role, webhook.entry]),
) as Record<WebhookRole, string>;

export const FUNCTION_ENTRIES = {
  ...webhookEntries,
  dispatch: 'functions/ingress/dispatch.ts',
  runEnded: 'functions/agent-step/run-ended.ts',
  agentStep: 'functions/agent-step/handler.ts',
  sandboxStep: 'functions/agent-step/sandbox-step.ts',
  reachStep: 'functions/agent-step/reach-step.ts',
  sandboxReaper: 'functions/agent-step/sandbox-reaper.ts',
  scheduler: 'functions/scheduler/handler.ts',
  mcpOAuth: 'functions/ingress/mcp-oauth.ts',
} as const;

export type FunctionRole = keyof typeof FUNCTION_ENTRIES;
