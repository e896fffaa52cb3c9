import { AsyncLocalStorage } from 'node:async_hooks';
import type { SerializedThread } from 'chat';
import { bedrockClient } from '../aws/bedrock.ts';
import { dbClient } from '../aws/dynamodb.ts';
import { s3Client } from '../aws/s3.ts';
import { platformOf } from '../platforms/platforms.ts';
import { parseThreadId } from '../ids.ts';
import type { AgentEnv } from '../env.ts';
import type { JsonLogger } from '../observability/log.ts';
import type { MetricsSink } from '../observability/metrics.ts';
import type { CustomSecretPattern } from '../policy/secret-filter.ts';
import type { AgentDeps } from '../run/steps/deps.ts';
import type { KeptScope } from '../context/prompt-files.ts';
import type { LogVersion } from '../context/store.ts';
import { recentlyUsed } from '../support/recent.ts';
import { recentContexts } from '../run/steps/run-context.ts';
import { recentByRun, recentSnapshots } from '../run/steps/snapshot.ts';
import type { McpListing } from '../reach/mcp-tools.ts';
import type { ToolRegistry } from '../tools/registry.ts';
import type { HookRunner } from '../hooks/run.ts';
import { settingsSecretPatterns, stepChatFromEnv } from './chat.ts';
import { actorFromEnv } from './control.ts';
import { sandboxFromEnv } from './sandbox.ts';
import { settingsFromEnv } from './settings.ts';
import { sfnClient } from '../aws/sfn.ts';
import { childExecutions } from '../run/subagents/executions.ts';
/** Prompt file scopes a container keeps: the global one, a few platforms, the channels it serves most. */
const PROMPT_SCOPES_KEPT = 100;
/** Threads whose log.jsonl version a container keeps from prepare to finish (a container steps a few runs at a time). */
const LOGS_KEPT = 20;

/**
 * Everything the agent's steps need, for the agent-step and run-ended handlers: `deps(logger)` for
 * one invocation, with the chat of the current chat credentials and that invocation's logger. The
 * tools come from the handler, so a function that runs none does not bundle them. `invoke` runs one
 * invocation: within it, once a step names its run's secret patterns (the snapshot's), the chat
 * redacts with those instead of reading settings.json; the container's chat is shared by the runs
 * it steps at once, so the patterns are the invocation's own (AsyncLocalStorage), not a global.
 */
export function agentFromEnv(
  logger: JsonLogger,
  env: AgentEnv,
  tools: ToolRegistry,
  metrics?: MetricsSink,
  /** Lambda hooks (agent-step only: run-ended runs no hook). */
  lambdaHooks?: HookRunner,
): { deps(logger: JsonLogger): Promise<AgentDeps>; invoke<T>(invocation: () => Promise<T>): Promise<T> } {
  const store = { s3: s3Client(), bucket: env.DATA_BUCKET };
  const settings = settingsFromEnv(env, logger);
  const runSecrets = new AsyncLocalStorage<{ patterns?: readonly CustomSecretPattern[] }>();
  const fromSettings = settingsSecretPatterns(settings, logger);
  const loadChat = stepChatFromEnv(logger, env, {
    secretPatterns: async () => runSecrets.getStore()?.patterns ?? fromSettings(),
  });
  const base = {
    store,
    settings,
    snapshots: recentSnapshots(),
    listings: recentByRun<McpListing>(),
    contexts: recentContexts(),
    logs: recentlyUsed<LogVersion>(LOGS_KEPT),
    actor: actorFromEnv(logger, env, metrics),
    ledger: { db: dbClient(), tableName: env.TABLE_NAME },
    model: { bedrock: bedrockClient(), retry: { attempts: env.BEDROCK_RETRY_ATTEMPTS, baseDelayMs: env.BEDROCK_RETRY_BASE_MS } },
    defaultModelId: env.BEDROCK_MODEL_ID,
    promptFiles: {
      kept: recentlyUsed<KeptScope>(PROMPT_SCOPES_KEPT),
      maxAgeMs: env.PROMPT_FILES_CACHE_SECONDS * 1000,
      now: Date.now,
    },
    tools,
    sandbox: sandboxFromEnv(env),
    handoffAfterSteps: env.HANDOFF_AFTER_STEPS,
    ...(lambdaHooks ? { lambdaHooks } : {}),
    metrics,
    ...(env.OAUTH_START_URL ? { oauthStartUrl: env.OAUTH_START_URL } : {}),
    children: childExecutions(sfnClient(), env.STATE_MACHINE_ARN),
  };
  return {
    invoke: (invocation) => runSecrets.run({}, invocation),
    async deps(invocationLogger) {
      const chat = await loadChat();
      return {
        ...base,
        thread: (run) => chat.thread(run.prompt.thread as SerializedThread),
        rehydrateAttachment: (attachment, threadId) => {
          const { adapter } = parseThreadId(threadId);
          return platformOf(adapter).rehydrateAttachment(chat.adapter(adapter), attachment, threadId);
        },
        logger: invocationLogger,
        now: Date.now,
        useSecretPatterns: (patterns) => {
          const invocation = runSecrets.getStore();
          if (invocation) invocation.patterns = patterns;
        },
      };
    },
  };
}
