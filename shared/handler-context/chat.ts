import { dbClient } from '../aws/dynamodb.ts';
import { secretsClient } from '../aws/secrets.ts';
import { createAgentChat, createStepChat, type AgentChat, type ChatDeps, type PlatformAdapters, type StepChat } from '../platforms/chat.ts';
import type { ChatEnv } from '../env.ts';
import type { JsonLogger } from '../observability/log.ts';
import type { SettingsSource } from '../settings/source.ts';
import { secretCredentials } from '../platforms/secret-credentials.ts';
import type { CustomSecretPattern } from '../policy/secret-filter.ts';
import { PLATFORMS } from '../platforms/platforms.ts';
import type { ChatPlatform, PlatformContext } from '../platforms/platform.ts';

/** The chat of the current credentials; `rereadCredentials` after a request failed verification. */
export interface ChatLoader<C = AgentChat> {
  (): Promise<C>;
  /** Re-reads the chat secrets (rate-limited): true when the credentials changed, so a retry may verify. */
  rereadCredentials(): Promise<boolean>;
}

/** A platform's adapter from its credentials: its own `adapter`, or one its webhook passes instead. */
export type AdapterFactory = (credentials: never, context: PlatformContext<never>) => PlatformAdapters[keyof PlatformAdapters];

export interface ChatOptions<C = AgentChat> {
  /** Wires each new instance (the webhooks add their handlers). */
  setup?: (chat: C) => void;
  /** Adapters to build in place of a platform's own, by platform name: the Teams webhook's receiving one. */
  adapters?: Partial<Record<keyof PlatformAdapters, AdapterFactory>>;
  /** The deployment's own secret patterns, redacted in every message with the built-in ones (see settingsSecretPatterns). */
  secretPatterns?: () => Promise<readonly CustomSecretPattern[]>;
  /** The webhooks' narrower Chat SDK state (shared/platforms/webhook-state.ts). */
  state?: ChatDeps['state'];
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
export const chatFromEnv = (logger: JsonLogger, env: ChatEnv, options: ChatOptions = {}): ChatLoader =>
  loaderOf(logger, env, options, createAgentChat);

/** The same for a run's steps, which post and never receive: the adapters and threads without the Chat class. */
export const stepChatFromEnv = (logger: JsonLogger, env: ChatEnv, options: ChatOptions<StepChat> = {}): ChatLoader<StepChat> =>
  loaderOf(logger, env, options, createStepChat);

function loaderOf<C>(logger: JsonLogger, env: ChatEnv, options: ChatOptions<C>, create: (deps: ChatDeps) => C): ChatLoader<C> {
  const { setup, adapters: instead = {}, secretPatterns, state } = options;
  const served = (PLATFORMS as readonly ChatPlatform[]).flatMap((platform) => {
    const source = platform.env.credentials(env);
    return source ? [{ platform, reader: secretCredentials(source, secretsClient, (raw) => platform.secret.parse(raw)) }] : [];
  });
  let current: { key: string; chat: C } | undefined;
  const load = async () => {
    const latest = await Promise.all(served.map(({ reader }) => reader.current()));
    const key = JSON.stringify(latest);
    if (current?.key !== key) {
      if (current) logger.info('chat credentials changed: a new chat instance uses them');
      const context: PlatformContext = { env, store: { db: dbClient(), tableName: env.TABLE_NAME }, logger, userName: env.BOT_USER_NAME };
      const adapters = Object.fromEntries(
        served.map(({ platform }, i) => {
          const build = (instead[platform.name as keyof PlatformAdapters] ?? platform.adapter) as ChatPlatform['adapter'];
          return [platform.name, build(latest[i], context)];
        }),
      );
      const chat = create({
        adapters,
        db: dbClient(),
        tableName: env.TABLE_NAME,
        logger,
        userName: env.BOT_USER_NAME,
        streamUpdateIntervalMs: env.STREAM_UPDATE_INTERVAL_MS,
        secretPatterns,
        state,
      });
      setup?.(chat);
      current = { key, chat };
    }
    return current.chat;
  };
  return Object.assign(load, {
    async rereadCredentials() {
      try {
        const changed = await Promise.all(served.map(({ reader }) => reader.reread()));
        return changed.some(Boolean);
      } catch (error) {
        logger.warn('could not re-read the chat secrets', { error });
        return false;
      }
    },
  });
}
