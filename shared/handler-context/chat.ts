import { dbClient } from '../aws/dynamodb.ts';
import { secretsClient } from '../aws/secrets.ts';
import { createAgentChat, type AgentChat } from '../chat.ts';
import type { ChatEnv } from '../env.ts';
import type { JsonLogger } from '../log.ts';
import { sameCredentials, slackCredentials, type SlackCredentials } from '../slack-credentials.ts';

/** The chat of the current Slack credentials; `rereadCredentials` after a signature failed. */
export interface ChatLoader {
  (): Promise<AgentChat>;
  /** Re-reads the Slack secret (rate-limited): true when the credentials changed, so a retry may verify. */
  rereadCredentials(): Promise<boolean>;
}

/**
 * The Chat SDK instance for the current Slack credentials: a rotated secret gets a new instance, so
 * it is used without a cold start. `setup` wires each new instance (the webhook adds its handlers).
 */
export function chatFromEnv(logger: JsonLogger, env: ChatEnv, setup?: (chat: AgentChat) => void): ChatLoader {
  const credentials = slackCredentials(
    env.SLACK_SECRET_ARN
      ? {
          secretArn: env.SLACK_SECRET_ARN,
          maxAgeSeconds: env.SLACK_SECRET_MAX_AGE_SECONDS,
          rereadSeconds: env.SLACK_SECRET_REREAD_SECONDS,
        }
      : // Both set: the environment schema requires them without a secret.
        { credentials: { signingSecret: env.SLACK_SIGNING_SECRET!, botToken: env.SLACK_BOT_TOKEN! } },
    secretsClient,
  );
  let current: { credentials: SlackCredentials; chat: AgentChat } | undefined;
  const load = async () => {
    const latest = await credentials.current();
    if (!current || !sameCredentials(current.credentials, latest)) {
      if (current) logger.info('Slack credentials changed: a new chat instance uses them');
      const chat = createAgentChat({
        credentials: latest,
        db: dbClient(),
        tableName: env.TABLE_NAME,
        logger,
        userName: env.BOT_USER_NAME,
        streamUpdateIntervalMs: env.STREAM_UPDATE_INTERVAL_MS,
      });
      setup?.(chat);
      current = { credentials: latest, chat };
    }
    return current.chat;
  };
  return Object.assign(load, {
    async rereadCredentials() {
      try {
        return await credentials.reread();
      } catch (error) {
        logger.warn('could not re-read the Slack secret', { error });
        return false;
      }
    },
  });
}
