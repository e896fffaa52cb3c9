// Wiring for the Lambda handlers: configuration from the handler's environment schema (shared/env.ts),
// clients from the standard chain. Core logic receives these as arguments.
import type { SerializedThread } from 'chat';
import { clients } from './aws.ts';
import { adapterFor, createAgentChat, threadFromJSON, type AgentChat } from './chat.ts';
import type { AgentDeps } from './steps/deps.ts';
import type { LifecycleDeps, SandboxConfig } from './sandbox/lifecycle.ts';
import { createLogger, levelFromEnv, type JsonLogger } from './log.ts';
import { slackCredentials } from './slack-credentials.ts';
import { teamsCredentials } from './teams-credentials.ts';
import { slackConfigured, teamsConfigured } from './env.ts';
import { executionStarter } from './runs.ts';
import type { ActorDeps } from './actor.ts';
import type { ControlDeps } from './control.ts';
import type { AgentEnv, ChatEnv, SandboxLaunchEnv } from './env.ts';
import { parseThreadId } from './ids.ts';

export function handlerLogger(component: string, env = process.env): JsonLogger {
  return createLogger({ level: levelFromEnv(env), component });
}

/**
 * The Chat SDK instance for the current credentials of each platform the deployment serves: a
 * rotated secret gets a new instance, so it is used without a cold start. `setup` wires each new
 * instance (the webhook adds its handlers).
 */
export function chatFromEnv(logger: JsonLogger, env: ChatEnv, setup?: (chat: AgentChat) => void): () => Promise<AgentChat> {
  const slack = slackConfigured(env)
    ? slackCredentials(
        env.SLACK_SECRET_ARN
          ? { secretArn: env.SLACK_SECRET_ARN, maxAgeSeconds: env.SLACK_SECRET_MAX_AGE_SECONDS }
          : // Both set: slackConfigured requires them without a secret.
            { credentials: { signingSecret: env.SLACK_SIGNING_SECRET!, botToken: env.SLACK_BOT_TOKEN! } },
        clients.secrets,
      )
    : undefined;
  const teams = teamsConfigured(env)
    ? teamsCredentials(
        env.TEAMS_SECRET_ARN
          ? { secretArn: env.TEAMS_SECRET_ARN, maxAgeSeconds: env.TEAMS_SECRET_MAX_AGE_SECONDS }
          : { credentials: { appId: env.TEAMS_APP_ID!, appPassword: env.TEAMS_APP_PASSWORD!, tenantId: env.TEAMS_APP_TENANT_ID ?? '' } },
        clients.secrets,
      )
    : undefined;
  let current: { key: string; chat: AgentChat } | undefined;
  return async () => {
    const [slackLatest, teamsLatest] = await Promise.all([slack?.(), teams?.()]);
    if (teamsLatest && !env.TEAMS_MULTI_TENANT && !teamsLatest.tenantId) {
      throw new Error('The Teams app is single-tenant but no tenant id is set (tenantId in the Teams secret, or TEAMS_MULTI_TENANT=true)');
    }
    const key = JSON.stringify([slackLatest, teamsLatest]);
    if (current?.key !== key) {
      if (current) logger.info('chat credentials changed: a new chat instance uses them');
      const chat = createAgentChat({
        slack: slackLatest,
        teams: teamsLatest && {
          credentials: teamsLatest,
          multiTenant: env.TEAMS_MULTI_TENANT,
          openIdMetadataUrl: env.TEAMS_OPENID_METADATA_URL,
          tokenUrl: env.TEAMS_TOKEN_URL,
        },
        db: clients.db(),
        tableName: env.TABLE_NAME,
        logger,
        userName: env.BOT_USER_NAME,
        streamUpdateIntervalMs: env.STREAM_UPDATE_INTERVAL_MS,
      });
      setup?.(chat);
      current = { key, chat };
    }
    return current.chat;
  };
}

export function actorFromEnv(logger: JsonLogger, env: { TABLE_NAME: string; STATE_MACHINE_ARN: string }): ActorDeps {
  return { db: clients.db(), tableName: env.TABLE_NAME, startRun: executionStarter(clients.sfn(), env.STATE_MACHINE_ARN, logger) };
}

export function controlFromEnv(logger: JsonLogger, env: { TABLE_NAME: string; STATE_MACHINE_ARN: string }): ControlDeps {
  return { actor: actorFromEnv(logger, env), sfn: clients.sfn(), stateMachineArn: env.STATE_MACHINE_ARN, logger };
}

/**
 * Everything the agent's steps need, for the agent-step and run-ended handlers: `deps(logger)` for
 * one invocation, with the chat of the current Slack credentials and that invocation's logger.
 */
export function agentFromEnv(logger: JsonLogger, env: AgentEnv): { deps(logger: JsonLogger): Promise<AgentDeps> } {
  const loadChat = chatFromEnv(logger, env);
  const db = clients.db();
  const base = {
    store: { s3: clients.s3(), bucket: env.DATA_BUCKET },
    actor: actorFromEnv(logger, env),
    ledger: { db, tableName: env.TABLE_NAME },
    model: { bedrock: clients.bedrock(), retry: { attempts: env.BEDROCK_RETRY_ATTEMPTS, baseDelayMs: env.BEDROCK_RETRY_BASE_MS } },
    defaultModelId: env.BEDROCK_MODEL_ID,
    sandbox: sandboxFromEnv(env),
    handoffAfterSteps: env.HANDOFF_AFTER_STEPS,
  };
  return {
    async deps(invocationLogger) {
      const chat = await loadChat();
      return {
        ...base,
        thread: (run) => threadFromJSON(chat, run.prompt.thread as SerializedThread),
        rehydrateAttachment: (attachment, threadId) => {
          const { adapter } = parseThreadId(threadId);
          // One workspace, one bot token: without the team id the Slack adapter downloads with that token
          // (with it, it would look up a per-team installation, which a single-workspace app has none of).
          const slim =
            adapter === 'slack'
              ? { ...attachment, fetchMetadata: attachment.fetchMetadata?.url ? { url: attachment.fetchMetadata.url } : undefined }
              : attachment;
          return adapterFor(chat, adapter).rehydrateAttachment?.(slim) ?? attachment;
        },
        logger: invocationLogger,
        now: Date.now,
      };
    },
  };
}

/** The sandbox task settings the stack passes to agent-step and the reaper (absent: no sandbox). */
export function sandboxConfigFromEnv(env: SandboxLaunchEnv): SandboxConfig | undefined {
  if (!env.SANDBOX_CLUSTER_ARN) return undefined;
  return {
    cluster: env.SANDBOX_CLUSTER_ARN,
    taskDefinition: env.SANDBOX_TASK_DEFINITION_ARN,
    containerName: env.SANDBOX_CONTAINER_NAME,
    subnets: env.SANDBOX_SUBNET_IDS,
    securityGroups: env.SANDBOX_SECURITY_GROUP_IDS,
    port: env.SANDBOX_PORT,
    idleMinutes: env.SANDBOX_IDLE_MINUTES,
  };
}

function sandboxFromEnv(env: SandboxLaunchEnv & { TABLE_NAME: string }): LifecycleDeps | undefined {
  const config = sandboxConfigFromEnv(env);
  if (!config) return undefined;
  return { ecs: clients.ecs(), db: clients.db(), tableName: env.TABLE_NAME, config };
}
