// The Chat SDK instance every function uses: the adapters of the platforms this deployment serves
// (Slack, Teams or both) over our DynamoDB state adapter. concurrency 'concurrent': the SDK must never
// drop or serialise messages itself; the FIFO inbox and the actor lease do the ordering.
import { Chat, type Adapter, type Logger, type SerializedThread, type Thread, ThreadImpl } from 'chat';
import { createSlackAdapter } from '@chat-adapter/slack';
import { createTeamsAdapter } from '@chat-adapter/teams';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDynamoDbStateAdapter } from './chat-state.ts';
import type { SlackCredentials } from './slack-credentials.ts';
import type { TeamsCredentials } from './teams-credentials.ts';
import { botFrameworkVerifier } from './teams-auth.ts';
import { clientCredentialsTokens, defaultTokenUrl } from './teams-token.ts';
import { paceTeamsReplies } from './teams-pacing.ts';

export interface TeamsConfig {
  credentials: TeamsCredentials;
  /** Accept activities from any tenant (the app is registered multi-tenant). */
  multiTenant: boolean;
  /** Where the keys that sign inbound activities are published. */
  openIdMetadataUrl: string;
  /** The client-credentials endpoint for outbound tokens; default: Microsoft's for the tenant. */
  tokenUrl?: string;
}

export interface ChatDeps {
  /** The platforms served: at least one. */
  slack?: SlackCredentials;
  teams?: TeamsConfig;
  db: DynamoDBDocumentClient;
  tableName: string;
  logger: Logger;
  userName?: string;
  /** Base URL of the Slack Web API; defaults to SLACK_API_URL, then slack.com. */
  slackApiUrl?: string;
  streamUpdateIntervalMs?: number;
}

export type SlackAdapter = ReturnType<typeof createSlackAdapter>;
export type TeamsAdapter = ReturnType<typeof createTeamsAdapter>;
/** Only the configured platforms' adapters exist: ask `hasPlatform` before using one by name. */
export type AgentChat = Chat<{ slack: SlackAdapter; teams: TeamsAdapter }>;
export type Platform = 'slack' | 'teams';

export function hasPlatform(chat: AgentChat, platform: Platform): boolean {
  return Boolean((chat.getAdapter as (name: string) => Adapter | undefined)(platform));
}

function teamsAdapter(config: TeamsConfig, logger: Logger, userName: string | undefined): TeamsAdapter {
  const { appId, appPassword, tenantId } = config.credentials;
  const verify = botFrameworkVerifier({
    appId,
    openIdMetadataUrl: config.openIdMetadataUrl,
    tenantId: config.multiTenant ? undefined : tenantId,
  });
  const adapter = createTeamsAdapter({
    appId,
    appTenantId: tenantId || undefined,
    appType: config.multiTenant ? 'MultiTenant' : 'SingleTenant',
    token: clientCredentialsTokens({
      appId,
      appPassword,
      tokenUrl: config.tokenUrl ?? defaultTokenUrl(config.multiTenant ? undefined : tenantId),
    }),
    // The adapter answers 401 to any refusal; the reason goes to the log (never the token).
    webhookVerifier: async (request, body) => {
      try {
        return await verify(request, body);
      } catch (error) {
        logger.warn('Teams request refused', { reason: (error as Error).message });
        throw error;
      }
    },
    logger: logger.child('teams'),
    userName,
  });
  return paceTeamsReplies(adapter);
}

export function createAgentChat(deps: ChatDeps): AgentChat {
  if (!deps.slack && !deps.teams) throw new Error('No chat platform configured: set up Slack, Teams or both');
  const adapters: Partial<{ slack: SlackAdapter; teams: TeamsAdapter }> = {};
  if (deps.slack) {
    adapters.slack = createSlackAdapter({
      botToken: deps.slack.botToken,
      signingSecret: deps.slack.signingSecret,
      apiUrl: deps.slackApiUrl,
      logger: deps.logger.child('slack'),
    });
  }
  if (deps.teams) adapters.teams = teamsAdapter(deps.teams, deps.logger, deps.userName);
  const chat = new Chat({
    adapters: adapters as { slack: SlackAdapter; teams: TeamsAdapter },
    state: createDynamoDbStateAdapter({ client: deps.db, tableName: deps.tableName }),
    userName: deps.userName ?? 'agent',
    concurrency: 'concurrent',
    logger: deps.logger.child('chat'),
    streamingUpdateIntervalMs: deps.streamUpdateIntervalMs,
  });
  // Threads travel through the inbox and Step Functions as JSON; rebuilding them needs the singleton.
  chat.registerSingleton();
  return chat;
}

/** The adapter of a thread's platform, or an error naming a platform this deployment does not serve. */
export function adapterFor(chat: AgentChat, adapterName: string): Adapter {
  const adapter = (chat.getAdapter as (name: string) => Adapter | undefined)(adapterName);
  if (!adapter) throw new Error(`This deployment does not serve ${adapterName}: its credentials are not configured`);
  return adapter;
}

/** A thread serialized by `thread.toJSON()` in another process, bound to this process's chat. */
export function threadFromJSON(chat: AgentChat, json: SerializedThread): Thread {
  return ThreadImpl.fromJSON(json, adapterFor(chat, json.adapterName), chat as never);
}
