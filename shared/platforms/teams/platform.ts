// Teams as the chat functions use it. They send through the Connector adapter (connector.ts), a few
// KB, without the Teams SDK; the Teams webhook's (adapter.ts) also receives (receive.ts).
// Both take the same parts: the app, where inbound token keys are published, cached outbound tokens,
// and which serviceUrls the bot's token may go to (service-url.ts), which also decides the threads
// an event may name. Teams shows only images inline, reads history through Microsoft Graph, and
// tells a bot where a channel lives only in the activities it sends (conversations.ts).
import type { Adapter, Attachment } from 'chat';
import type { ChannelPoster, ChatPlatform, PlatformContext, PlatformStore } from '../platform.ts';
import { TeamsConnectorAdapter, type TeamsConnectorConfig } from './connector.ts';
import { chatChannelIdOf, rememberTeamsConversation, teamsConversation, threadIdOfPost } from './conversations.ts';
import { teamsDescriptor, type TeamsCredentials, type TeamsEnv } from './descriptor.ts';
import { paceTeamsReplies } from './pacing.ts';
import { serviceUrlProblem, type ServiceUrlTrust } from './service-url.ts';
import { clientCredentialsTokens, defaultTokenUrl } from './token.ts';

/**
 * Either Teams adapter: they share thread ids and the name `teams`. The Connector adapter checks a
 * file's download against the conversation of the thread it was posted in.
 */
export type TeamsAdapter = Adapter & { rehydrateAttachment?(attachment: Attachment, threadId?: string): Attachment };

/** What the Teams adapters are built from: the app, where inbound token keys are published, and outbound tokens. */
export interface TeamsAdapterParts {
  appId: string;
  tenantId: string;
  multiTenant: boolean;
  openIdMetadataUrl: string;
  /** token.ts's cached client-credentials tokens for this app. */
  tokens(scope: string | string[]): Promise<string>;
  /** Which serviceUrls the bot's token may go to. */
  serviceUrls: ServiceUrlTrust;
}

type TeamsContext = PlatformContext<TeamsEnv>;

/** The serviceUrls the bot's token may go to: each conversation's stored one, else the configured Connector origins. */
export function serviceUrlTrust(env: Pick<TeamsEnv, 'TEAMS_CONNECTOR_ORIGINS'>, store: PlatformStore): ServiceUrlTrust {
  return { reference: (channelId) => teamsConversation(store, channelId), connectorOrigins: env.TEAMS_CONNECTOR_ORIGINS };
}

/** The Teams app's parts, against Microsoft's URLs or the configured ones. */
export function teamsAdapterParts(credentials: TeamsCredentials, { env, store }: TeamsContext): TeamsAdapterParts {
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
    serviceUrls: serviceUrlTrust(env, store),
  };
}

/** The adapter every function but the Teams webhook sends with: the Connector adapter, its edits paced. */
export function teamsConnectorAdapter(
  credentials: TeamsCredentials,
  context: TeamsContext,
  receive?: TeamsConnectorConfig['receive'],
): TeamsAdapter {
  const parts = teamsAdapterParts(credentials, context);
  return paceTeamsReplies(
    new TeamsConnectorAdapter({
      appId: parts.appId,
      tokens: (scope) => parts.tokens(scope),
      serviceUrls: parts.serviceUrls,
      logger: context.logger,
      userName: context.userName,
      receive,
    }),
  );
}

export const teams = {
  ...teamsDescriptor,
  adapter: teamsConnectorAdapter,
  /** The bot's token goes only to the Connector of the thread's own conversation. */
  rehydrateAttachment: (adapter: TeamsAdapter, attachment: Attachment, threadId: string): Attachment =>
    adapter.rehydrateAttachment?.(attachment, threadId) ?? attachment,
  /** A Teams channel is reached through the serviceUrl its activities named (stored per channel). */
  async openThread(chat: ChannelPoster, store: PlatformStore, channelId: string, text: string) {
    const reference = await teamsConversation(store, channelId);
    if (!reference) {
      throw new Error(
        `No Teams conversation ${JSON.stringify(channelId)} is known: mention the bot there once first (Teams tells a bot where a channel lives only when someone writes to it)`,
      );
    }
    const sent = await chat.channel(chatChannelIdOf(reference)).post(text);
    return { threadId: threadIdOfPost(reference, sent.id), messageId: sent.id };
  },
  /** A Teams thread id carries a serviceUrl, where the bot's token would go: only the conversation's own. */
  threadProblem: (context: TeamsContext, threadId: string) => serviceUrlProblem(serviceUrlTrust(context.env, context.store), threadId),
  /** A verified activity says where its conversation lives: the only place the bot's replies there may go. */
  received: (store: PlatformStore, threadId: string) => rememberTeamsConversation(store, threadId),
} satisfies ChatPlatform;
