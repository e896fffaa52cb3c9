// Outbound Bot Framework (and Graph) calls carry an OAuth token from the client-credentials grant
// with the app id and password. A token is reused until shortly before it expires: one token request
// per scope per hour or so, not one per reply. Concurrent callers share one request in flight.
import * as z from 'zod';

/** Default token endpoint: the app's tenant, or Microsoft's Bot Framework tenant for a multi-tenant app. */
export function defaultTokenUrl(tenantId: string | undefined): string {
  return `https://login.microsoftonline.com/${encodeURIComponent(tenantId || 'botframework.com')}/oauth2/v2.0/token`;
}

/** A token is renewed this long before it expires, so no request goes out with one about to lapse. */
export const TOKEN_RENEW_BEFORE_MS = 5 * 60 * 1000;

export interface ClientCredentialsConfig {
  tokenUrl: string;
  appId: string;
  appPassword: string;
  fetch?: typeof fetch;
  now?: () => number;
}

const tokenResponse = z.object({ access_token: z.string().min(1), expires_in: z.coerce.number().positive() });

export function clientCredentialsTokens(config: ClientCredentialsConfig): (scope: string | string[]) => Promise<string> {
  const fetchFn = config.fetch ?? fetch;
  const now = config.now ?? Date.now;
  const cache = new Map<string, Promise<{ token: string; renewAt: number }>>();

  const request = async (scope: string) => {
    const response = await fetchFn(config.tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: config.appId, client_secret: config.appPassword, scope }),
    });
    // The body of a refusal names the reason (wrong secret, unknown app) and never the secret itself.
    if (!response.ok)
      throw new Error(`The Teams token endpoint refused the app's credentials (${response.status}): ${await response.text()}`);
    const parsed = tokenResponse.parse(await response.json());
    return { token: parsed.access_token, renewAt: now() + parsed.expires_in * 1000 - TOKEN_RENEW_BEFORE_MS };
  };

  return async (scopes) => {
    const scope = [scopes].flat().join(' ');
    const cached = cache.get(scope);
    if (cached) {
      const entry = await cached.catch(() => undefined);
      if (entry && now() < entry.renewAt) return entry.token;
      if (cache.get(scope) !== cached) return (await cache.get(scope)!).token;
    }
    const pending = request(scope);
    cache.set(scope, pending);
    pending.catch(() => cache.get(scope) === pending && cache.delete(scope));
    return (await pending).token;
  };
}
