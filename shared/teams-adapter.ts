// The Chat SDK Teams adapter as this project configures it: inbound requests verified by our Bot
// Framework token check (shared/teams-auth.ts), outbound tokens from our cached client-credentials
// grant (shared/teams-token.ts), replies paced for Teams (shared/teams-pacing.ts). Imported only
// where Teams is configured: the adapter and the Teams SDK under it take seconds to load.
import { createTeamsAdapter } from '@chat-adapter/teams';
import type { Logger } from 'chat';
import type { TeamsAdapter } from './chat.ts';
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

export function teamsAdapter(config: TeamsConfig, logger: Logger, userName: string | undefined): TeamsAdapter {
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
