import { dbClient } from '../aws/dynamodb.ts';
import { secretsClient } from '../aws/secrets.ts';
import { createAgentChat, type AgentChat, type TeamsAdapter } from '../platforms/chat.ts';
import { slackConfigured, teamsConfigured, type ChatEnv } from '../env.ts';
import type { JsonLogger } from '../observability/log.ts';
import type { SettingsSource } from '../settings/source.ts';
import type { CredentialReader } from '../platforms/secret-credentials.ts';
import type { CustomSecretPattern } from '../policy/secret-filter.ts';
import { slackCredentials } from '../platforms/slack/credentials.ts';
import { TeamsConnectorAdapter } from '../platforms/teams/connector.ts';
import { teamsCredentials, type TeamsCredentials } from '../platforms/teams/credentials.ts';
import { paceTeamsReplies } from '../platforms/teams/pacing.ts';
import { teamsConversation } from '../platforms/teams/conversations.ts';
import type { ServiceUrlTrust } from '../platforms/teams/service-url.ts';
import { clientCredentialsTokens, defaultTokenUrl } from '../platforms/teams/token.ts';

/** The chat of the current credentials; `rereadCredentials` after a request failed verification. */
export interface ChatLoader {
  (): Promise<AgentChat>;
  /** Re-reads the chat secrets (rate-limited): true when the credentials changed, so a retry may verify. */
  rereadCredentials(): Promise<boolean>;
}

/** What the Teams adapters are built from: the app, where inbound token keys are published, and outbound tokens. */
export interface TeamsAdapterParts {
  appId: string;
  tenantId: string;
  multiTenant: boolean;
  openIdMetadataUrl: string;
  /** shared/platforms/teams/token.ts's cached client-credentials tokens for this app. */
  tokens(scope: string | string[]): Promise<string>;
  /** Which serviceUrls the bot's token may go to. */
  serviceUrls: ServiceUrlTrust;
}

/**
 * Builds the Teams adapter. By default the Connector adapter, which only sends (shared/platforms/teams/connector.ts);
 * the Teams webhook passes the Chat SDK's full adapter, which also receives.
 */
export type TeamsAdapterFactory = (parts: TeamsAdapterParts, logger: JsonLogger, userName: string | undefined) => TeamsAdapter;

const connectorAdapter: TeamsAdapterFactory = (parts, logger, userName) =>
  paceTeamsReplies(
    new TeamsConnectorAdapter({
      appId: parts.appId,
      tokens: (scope) => parts.tokens(scope),
      serviceUrls: parts.serviceUrls,
      logger,
      userName,
    }),
  );

/** The serviceUrls the bot's token may go to: each conversation's stored one, else the configured Connector origins. */
export function serviceUrlTrustFromEnv(env: Pick<ChatEnv, 'TABLE_NAME' | 'TEAMS_CONNECTOR_ORIGINS'>): ServiceUrlTrust {
  const store = { db: dbClient(), tableName: env.TABLE_NAME };
  return { reference: (channelId) => teamsConversation(store, channelId), connectorOrigins: env.TEAMS_CONNECTOR_ORIGINS };
}

/** The Teams app's parts, against Microsoft's URLs or the configured ones. */
function teamsAdapterParts(credentials: TeamsCredentials, env: ChatEnv): TeamsAdapterParts {
  const { appId, appPassword, tenantId } = credentials;
  const multiTenant = env.TEAMS_MULTI_TENANT;
  if (!multiTenant && !tenantId) {
    throw new Error('The Teams app is single-tenant but no tenant id is set (tenantId in the Teams secret, or TEAMS_MULTI_TENANT=true)');
  }
  return {
    appId,
    tenantId,
    multiTenant,
    openIdMetadataUrl: env.TEAMS_OPENID_METADATA_URL,
    tokens: clientCredentialsTokens({
      appId,
      appPassword,
      tokenUrl: env.TEAMS_TOKEN_URL ?? defaultTokenUrl(multiTenant ? undefined : tenantId),
    }),
    serviceUrls: serviceUrlTrustFromEnv(env),
  };
}

export interface ChatOptions {
  /** Wires each new instance (the webhooks add their handlers). */
  setup?: (chat: AgentChat) => void;
  teamsAdapter?: TeamsAdapterFactory;
  /** The deployment's own secret patterns, redacted in every message with the built-in ones (see settingsSecretPatterns). */
  secretPatterns?: () => Promise<readonly CustomSecretPattern[]>;
}

/**
 * The secretPatterns of settings.json, for the chat's redaction. While settings.json cannot be read,
 * messages still go out with the built-in patterns (logged): a failure message must not wait on S3.
 */
export function settingsSecretPatterns(settings: SettingsSource, logger: JsonLogger): () => Promise<readonly CustomSecretPattern[]> {
  return async () => {
    try {
      return (await settings.get()).secretPatterns;
    } catch (error) {
      logger.warn('settings.json unreadable: this message is redacted with the built-in secret patterns only', { error });
      return [];
    }
  };
}

/**
 * The Chat SDK instance for the current credentials of each platform the function serves: a rotated
 * secret gets a new instance, so it is used without a cold start.
 */
export function chatFromEnv(logger: JsonLogger, env: ChatEnv, options: ChatOptions = {}): ChatLoader {
  const { setup, teamsAdapter = connectorAdapter, secretPatterns } = options;
  const slack = slackConfigured(env)
    ? slackCredentials(
        env.SLACK_SECRET_ARN
          ? {
              secretArn: env.SLACK_SECRET_ARN,
              maxAgeSeconds: env.SLACK_SECRET_MAX_AGE_SECONDS,
              rereadSeconds: env.SLACK_SECRET_REREAD_SECONDS,
            }
          : // Both set: slackConfigured requires them without a secret.
            { credentials: { signingSecret: env.SLACK_SIGNING_SECRET!, botToken: env.SLACK_BOT_TOKEN! } },
        secretsClient,
      )
    : undefined;
  const teams = teamsConfigured(env)
    ? teamsCredentials(
        env.TEAMS_SECRET_ARN
          ? {
              secretArn: env.TEAMS_SECRET_ARN,
              maxAgeSeconds: env.TEAMS_SECRET_MAX_AGE_SECONDS,
              rereadSeconds: env.TEAMS_SECRET_REREAD_SECONDS,
            }
          : { credentials: { appId: env.TEAMS_APP_ID!, appPassword: env.TEAMS_APP_PASSWORD!, tenantId: env.TEAMS_APP_TENANT_ID ?? '' } },
        secretsClient,
      )
    : undefined;
  const readers: CredentialReader<unknown>[] = [slack, teams].filter((r) => r !== undefined);
  let current: { key: string; chat: AgentChat } | undefined;
  const load = async () => {
    const [slackLatest, teamsLatest] = await Promise.all([slack?.current(), teams?.current()]);
    const key = JSON.stringify([slackLatest, teamsLatest]);
    if (current?.key !== key) {
      if (current) logger.info('chat credentials changed: a new chat instance uses them');
      const chat = createAgentChat({
        slack: slackLatest,
        teams: teamsLatest && teamsAdapter(teamsAdapterParts(teamsLatest, env), logger, env.BOT_USER_NAME),
        db: dbClient(),
        tableName: env.TABLE_NAME,
        logger,
        userName: env.BOT_USER_NAME,
        streamUpdateIntervalMs: env.STREAM_UPDATE_INTERVAL_MS,
        secretPatterns,
      });
      setup?.(chat);
      current = { key, chat };
    }
    return current.chat;
  };
  return Object.assign(load, {
    async rereadCredentials() {
      try {
        const changed = await Promise.all(readers.map((reader) => reader.reread()));
        return changed.some(Boolean);
      } catch (error) {
        logger.warn('could not re-read the chat secrets', { error });
        return false;
      }
    },
  });
}
