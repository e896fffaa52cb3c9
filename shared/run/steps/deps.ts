// What the agent's steps need from the world, injected by the handlers (and by tests).
import type { Attachment, Thread } from 'chat';
import type { ActorDeps } from '../actor.ts';
import type { LedgerDeps } from '../ledger.ts';
import type { JsonLogger } from '../../observability/log.ts';
import type { ModelDeps } from '../../model/converse.ts';
import type { MetricsSink } from '../../observability/metrics.ts';
import type { LifecycleDeps } from '../../sandbox/lifecycle.ts';
import type { RunInput } from '../../contracts.ts';
import type { CustomSecretPattern } from '../../policy/secret-filter.ts';
import type { PromptFilesCache } from '../../context/prompt-files.ts';
import type { SettingsSource } from '../../settings/source.ts';
import type { ToolRegistry } from '../../tools/registry.ts';
import type { RunContextDeps } from './run-context.ts';
import type { LogVersion } from '../../context/store.ts';
import type { Recent } from '../../support/recent.ts';
import type { RunToolsDeps } from './run-tools.ts';
import type { HookRunner } from '../../hooks/run.ts';
import type { ChildExecutions } from '../subagents/executions.ts';

/** `store`, `snapshots` and `contexts`: the data bucket, and the run snapshots and thread contexts this container has read or written. */
export interface AgentDeps extends RunToolsDeps, RunContextDeps {
  /** settings.json: prepare reads it as it is now; the later steps use the run's snapshot. */
  settings: SettingsSource;
  actor: ActorDeps;
  ledger: LedgerDeps;
  model: ModelDeps;
  defaultModelId: string;
  /** Rebuilds the run's thread (with its triggering message) so replies stream into it. */
  thread(run: RunInput): Thread;
  logger: JsonLogger;
  /** Epoch milliseconds. */
  now: () => number;
  /** log.jsonl as this container's prepare left it, by thread: the run's finish writes over that version (absent: it reads the file). */
  logs?: Recent<LogVersion>;
  /** Shared prompt files (memory, skills, identity) this container keeps between runs; absent: read for every run. */
  promptFiles?: PromptFilesCache;
  /** The built-in tools; a run may add web_fetch and its MCP servers' tools (run-tools.ts). */
  tools: ToolRegistry;
  /** The per-thread sandbox (absent when the deployment has none: then only agent tools run). */
  sandbox?: LifecycleDeps;
  /** Restores a serialized attachment's download through the chat adapter (platform auth). */
  rehydrateAttachment?: (attachment: Attachment, threadId: string) => Attachment;
  /** Where the steps' metrics go (absent: none are published). */
  metrics?: MetricsSink;
  /**
   * The run's own secret patterns (its snapshot's), for the chat to redact this invocation's messages
   * with instead of reading settings.json (absent: the chat reads settings.json as it is configured to).
   */
  useSecretPatterns?: (patterns: readonly CustomSecretPattern[]) => void;
  /** Invokes settings.json's lambda hooks (absent: no hook functions are declared; a lambda hook is then an error). */
  lambdaHooks?: HookRunner;
  /** Steps one execution takes before the run continues in a fresh one (default 1000). */
  handoffAfterSteps?: number;
  /** Resumes a run that waits for its subagents, and stops a child nobody waits for (absent: no subagent can be waited for). */
  children?: ChildExecutions;
  /** The stack API's GET /oauth/start, where a person's Connect link for an OAuth MCP server goes. */
  oauthStartUrl?: string;
}

/** Bookkeeping every context entry of a step carries. */
export function stepMeta(now: () => number, run: RunInput, step: number) {
  return { runId: run.runId, step, at: new Date(now()).toISOString() };
}
