// Microsoft's endpoints a Teams bot talks to by default; the local cloud's Teams stand-in sets its own.

/** Microsoft's OpenID metadata for tokens the Bot Framework channels sign. */
export const BOT_FRAMEWORK_OPENID_METADATA_URL = 'https://login.botframework.com/v1/.well-known/openidconfiguration';

/**
 * Microsoft's Bot Connector origins, where Teams conversations live (the serviceUrl of their
 * activities): the public cloud (regional paths such as /amer/ under one host), GCC, GCC High, DoD
 * and the cloud 21Vianet operates. A conversation no verified activity has named yet may only be
 * reached at one of these (see shared/platforms/teams/service-url.ts).
 */
export const BOT_CONNECTOR_ORIGINS: readonly string[] = [
  'https://smba.trafficmanager.net',
  'https://smba.infra.gcc.teams.microsoft.com',
  'https://smba.infra.gov.teams.microsoft.us',
  'https://smba.infra.dod.teams.microsoft.us',
  'https://msteams.botframework.azure.cn',
];
