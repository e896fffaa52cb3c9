// The Teams webhook's adapter: the Connector adapter every function sends with, which here also
// receives (receive.ts): each request's Bot Framework token is checked by our verifier (auth.ts)
// before anything is read. Only the Teams webhook function imports this module, so the verifier
// (and jose under it) and the receiving code stay out of the other bundles; none loads the Teams SDK.
import type { PlatformContext } from '../platform.ts';
import { botFrameworkVerifier } from './auth.ts';
import type { TeamsCredentials, TeamsEnv } from './descriptor.ts';
import { teamsAdapterParts, teamsConnectorAdapter, type TeamsAdapter } from './platform.ts';
import { receiveTeamsRequest } from './receive.ts';

/** The adapter that also receives: the Teams webhook passes it in place of the platform's own. */
export function teamsReceivingAdapter(credentials: TeamsCredentials, context: PlatformContext<TeamsEnv>): TeamsAdapter {
  const { appId, tenantId, multiTenant, openIdMetadataUrl } = teamsAdapterParts(credentials, context);
  const verify = botFrameworkVerifier({ appId, openIdMetadataUrl, tenantId: multiTenant ? undefined : tenantId });
  const receiving = { appId, verify, logger: context.logger.child('teams') };
  // Graph contexts this instance wrote, so an unchanged one is not written again.
  const written = new Map<string, string>();
  return teamsConnectorAdapter(credentials, context, (adapter, chat, request, options) =>
    receiveTeamsRequest(adapter, chat, receiving, request, options, written),
  );
}
