// Wiring for the Lambda handlers: configuration from the environment, clients from the standard
// chain, built once per container. Core logic receives these as arguments.
import { clients, requireEnv } from './aws.ts';
import { createAgentChat, threadFromJSON, type AgentChat } from './chat.ts';
import type { SerializedThread } from 'chat';
import type { AgentDeps } from './steps/deps.ts';
import type { LifecycleDeps, SandboxConfig } from './sandbox/lifecycle.ts';
import { createLogger, levelFromEnv, type JsonLogger } from './log.ts';
import { loadSlackCredentials } from './slack-credentials.ts';
import { executionStarter } from './runs.ts';
import type { ActorDeps } from './actor.ts';
import { DEFAULT_MODEL_ID } from './defaults.ts';

export function handlerLogger(component: string, env = process.env): JsonLogger {
  return createLogger({ level: levelFromEnv(env), component });
}

export function chatFromEnv(logger: JsonLogger, env = process.env): () => Promise<AgentChat> {
  let chat: Promise<AgentChat> | undefined;
  return () =>
    (chat ??= loadSlackCredentials(env, clients.secrets).then((credentials) =>
      createAgentChat({
        credentials,
        db: clients.db(),
        tableName: requireEnv('TABLE_NAME'),
        logger,
        userName: env.BOT_USER_NAME,
        streamUpdateIntervalMs: streamIntervalFromEnv(env),
      }),
    )).catch((error: unknown) => {
      chat = undefined; // let the next invocation try again (a secret being set up, say)
      throw error;
    });
}

export function actorFromEnv(logger: JsonLogger, env = process.env): ActorDeps {
  return {
    db: clients.db(),
    tableName: requireEnv('TABLE_NAME'),
    startRun: executionStarter(clients.sfn(), env.STATE_MACHINE_ARN ?? requireEnv('STATE_MACHINE_ARN'), logger),
  };
}

/** Everything the agent's steps need, for the agent-step and run-ended handlers. */
export async function agentFromEnv(logger: JsonLogger, loadChat: () => Promise<AgentChat>, env = process.env): Promise<AgentDeps> {
  const chat = await loadChat();
  const db = clients.db();
  const tableName = requireEnv('TABLE_NAME');
  return {
    store: { s3: clients.s3(), bucket: requireEnv('DATA_BUCKET') },
    actor: actorFromEnv(logger, env),
    ledger: { db, tableName },
    model: { bedrock: clients.bedrock(), retry: modelRetryFromEnv(env) },
    defaultModelId: env.BEDROCK_MODEL_ID || DEFAULT_MODEL_ID,
    thread: (run) => threadFromJSON(chat, run.prompt.thread as SerializedThread),
    // One workspace, one bot token: without the team id the adapter downloads with that token
    // (with it, it would look up a per-team installation, which a single-workspace app has none of).
    rehydrateAttachment: (attachment) =>
      chat.getAdapter('slack').rehydrateAttachment?.({
        ...attachment,
        fetchMetadata: attachment.fetchMetadata?.url ? { url: attachment.fetchMetadata.url } : undefined,
      }) ?? attachment,
    logger,
    now: Date.now,
    sandbox: sandboxFromEnv(env),
    handoffAfterSteps: handoffFromEnv(env),
  };
}

/** BEDROCK_RETRY_ATTEMPTS / BEDROCK_RETRY_BASE_MS tune the throttling retry (defaults in shared/model.ts). */
function modelRetryFromEnv(env: Record<string, string | undefined>) {
  const attempts = Number(env.BEDROCK_RETRY_ATTEMPTS);
  const baseDelayMs = Number(env.BEDROCK_RETRY_BASE_MS);
  return {
    attempts: Number.isInteger(attempts) && attempts > 0 ? attempts : undefined,
    baseDelayMs: Number.isFinite(baseDelayMs) && baseDelayMs >= 0 ? baseDelayMs : undefined,
  };
}

/** STREAM_UPDATE_INTERVAL_MS: how often a post-and-edit streamed reply is edited (Slack rate-limits chat.update). */
function streamIntervalFromEnv(env: Record<string, string | undefined>): number {
  const value = Number(env.STREAM_UPDATE_INTERVAL_MS);
  return Number.isInteger(value) && value >= 250 ? value : 1000;
}

const list = (value: string | undefined) =>
  (value ?? '')
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);

/** The sandbox task settings the stack passes to agent-step and the reaper (absent: no sandbox). */
export function sandboxConfigFromEnv(env: Record<string, string | undefined>): SandboxConfig | undefined {
  if (!env.SANDBOX_CLUSTER_ARN) return undefined;
  const idle = Number(env.SANDBOX_IDLE_MINUTES);
  return {
    cluster: env.SANDBOX_CLUSTER_ARN,
    taskDefinition: env.SANDBOX_TASK_DEFINITION_ARN ?? '',
    containerName: env.SANDBOX_CONTAINER_NAME ?? 'sandbox',
    subnets: list(env.SANDBOX_SUBNET_IDS),
    securityGroups: list(env.SANDBOX_SECURITY_GROUP_IDS),
    port: sandboxPortFromEnv(env),
    idleMinutes: Number.isFinite(idle) && idle > 0 ? idle : 5,
  };
}

export function sandboxPortFromEnv(env: Record<string, string | undefined>): number {
  const port = Number(env.SANDBOX_PORT);
  return Number.isInteger(port) && port > 0 ? port : 8080;
}

export function sandboxFromEnv(env: Record<string, string | undefined>): LifecycleDeps | undefined {
  const config = sandboxConfigFromEnv(env);
  if (!config) return undefined;
  return { ecs: clients.ecs(), db: clients.db(), tableName: requireEnv('TABLE_NAME'), config };
}

/** HANDOFF_AFTER_STEPS: steps per execution before a run continues in a fresh one (default 1000). */
export function handoffFromEnv(env: Record<string, string | undefined>): number | undefined {
  const value = Number(env.HANDOFF_AFTER_STEPS);
  return Number.isInteger(value) && value > 1 ? value : undefined;
}
