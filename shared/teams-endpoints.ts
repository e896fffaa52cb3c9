// Microsoft's endpoints a Teams bot talks to by default; the local cloud's Teams stand-in sets its own.

/** Microsoft's OpenID metadata for tokens the Bot Framework channels sign. */
export const BOT_FRAMEWORK_OPENID_METADATA_URL = 'https://login.botframework.com/v1/.well-known/openidconfiguration';
