// The Chat SDK Teams adapter as this project configures it: inbound requests verified by our Bot
// Framework token check (shared/teams-auth.ts), outbound tokens from our cached client-credentials
// grant (shared/teams-token.ts), replies paced for Teams (shared/teams-pacing.ts). Imported only
// where Teams is configured: the adapter and the Teams SDK under it take seconds to load. The
// verifier and the token source are built by the caller, so this lazily loaded module shares no
// module with the rest of the bundle that the bundler could no longer tree-shake (zod).
import { createTeamsAdapter } from '@chat-adapter/teams';
import type { Logger } from 'chat';
import type { TeamsAdapter } from './chat.ts';
import { paceTeamsReplies } from './teams-pacing.ts';

export interface TeamsAdapterParts {
  appId: string;
  tenantId: string;
  multiTenant: boolean;
  /** shared/teams-auth.ts's verifier for this app. */
  verify(request: Request, body: string): Promise<unknown>;
  /** shared/teams-token.ts's cached client-credentials tokens for this app. */
  tokens(scope: string | string[]): Promise<string>;
}

export function teamsAdapter(parts: TeamsAdapterParts, logger: Logger, userName: string | undefined): TeamsAdapter {
  const { appId, tenantId, multiTenant, verify } = parts;
  const adapter = createTeamsAdapter({
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
    userName,
  });
  return paceTeamsReplies(adapter);
}
