// The Chat SDK Teams adapter as the Teams webhook configures it: inbound requests verified by our
// Bot Framework token check (shared/platforms/teams/auth.ts), outbound tokens from our cached
// client-credentials grant (shared/platforms/teams/token.ts). Only the Teams webhook function imports this
// module: the adapter brings the Teams SDK (over 2 MB bundled). Every other function answers Teams
// threads through shared/platforms/teams/connector.ts.
import { createTeamsAdapter } from '@chat-adapter/teams';
import type { PlatformContext } from '../platform.ts';
import { botFrameworkVerifier } from './auth.ts';
import type { TeamsCredentials, TeamsEnv } from './descriptor.ts';
import { teamsAdapterParts, type TeamsAdapter } from './platform.ts';

/** The adapter that also receives: the Teams webhook passes it in place of the platform's Connector adapter. */
export function teamsReceivingAdapter(credentials: TeamsCredentials, context: PlatformContext<TeamsEnv>): TeamsAdapter {
  const parts = teamsAdapterParts(credentials, context);
  const { appId, tenantId, multiTenant, openIdMetadataUrl } = parts;
  const { logger } = context;
  // Only the webhook verifies tokens: the verifier (and jose under it) stays out of the other bundles.
  const verify = botFrameworkVerifier({ appId, openIdMetadataUrl, tenantId: multiTenant ? undefined : tenantId });
  return createTeamsAdapter({
    appId,
    appTenantId: tenantId || undefined,
    appType: multiTenant ? 'MultiTenant' : 'SingleTenant',
    token: (scope) => parts.tokens(scope),
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
    userName: context.userName,
  });
}
