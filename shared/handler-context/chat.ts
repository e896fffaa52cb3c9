import { secretsClient } from '../aws/secrets.ts';
import { dbClient } from '../aws/dynamodb.ts';
import { createAgentChat, type AgentChat } from '../chat.ts';
import { slackConfigured, teamsConfigured, type ChatEnv } from '../env.ts';
import type { JsonLogger } from '../log.ts';
import { slackCredentials } from '../slack-credentials.ts';
import { teamsCredentials, type TeamsCredentials } from '../teams-credentials.ts';
import { botFrameworkVerifier } from '../teams-auth.ts';
import { clientCredentialsTokens, defaultTokenUrl } from '../teams-token.ts';
import type { TeamsAdapterParts } from '../teams-adapter.ts';

/** Inbound verification and outbound tokens for the Teams app, against Microsoft's URLs or the configured ones. */
function teamsAdapterParts(credentials: TeamsCredentials, env: ChatEnv): TeamsAdapterParts {
  const { appId, appPassword, tenantId } = credentials;
  const multiTenant = env.TEAMS_MULTI_TENANT;
  return {
    appId,
    tenantId,
    multiTenant,
    verify: botFrameworkVerifier({ appId, openIdMetadataUrl: env.TEAMS_OPENID_METADATA_URL, tenantId: multiTenant ? undefined : tenantId }),
    tokens: clientCredentialsTokens({
      appId,
      appPassword,
      tokenUrl: env.TEAMS_TOKEN_URL ?? defaultTokenUrl(multiTenant ? undefined : tenantId),
    }),
  };
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
        secretsClient,
      )
    : undefined;
  const teams = teamsConfigured(env)
    ? teamsCredentials(
        env.TEAMS_SECRET_ARN
          ? { secretArn: env.TEAMS_SECRET_ARN, maxAgeSeconds: env.TEAMS_SECRET_MAX_AGE_SECONDS }
          : { credentials: { appId: env.TEAMS_APP_ID!, appPassword: env.TEAMS_APP_PASSWORD!, tenantId: env.TEAMS_APP_TENANT_ID ?? '' } },
        secretsClient,
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
      const teamsParts = teamsLatest && teamsAdapterParts(teamsLatest, env);
      // Loaded only when Teams is configured: a Slack-only function does not pay for the Teams SDK.
      const teamsAdapter = teamsParts && (await import('../teams-adapter.ts')).teamsAdapter(teamsParts, logger, env.BOT_USER_NAME);
      const chat = createAgentChat({
        slack: slackLatest,
        teams: teamsAdapter,
        db: dbClient(),
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
