// Inbound Bot Framework authentication: every Teams request carries a JWT signed by the Bot Framework
// with a key published through its OpenID metadata. The token must verify against one of those keys,
// come from the metadata's issuer, be meant for this app (audience = app id), be current (with the
// usual five minutes of clock skew), and name the serviceUrl the activity says replies go to, so a
// token for one conversation cannot steer replies elsewhere. Single-tenant apps also refuse
// activities from other tenants. The same code runs on AWS and locally; only the metadata URL differs.
import { importJWK, jwtVerify, decodeProtectedHeader, type JWK, type JWTPayload } from 'jose';
import * as z from 'zod';
import { sameServiceUrl } from './service-url.ts';

export const CLOCK_SKEW_SECONDS = 5 * 60;
/** The metadata and keys rotate rarely; a key id never seen before refreshes them at most this often. */
const KEYS_MAX_AGE_MS = 24 * 60 * 60 * 1000;
const UNKNOWN_KEY_REFRESH_MS = 5 * 60 * 1000;

export interface BotFrameworkAuthConfig {
  appId: string;
  openIdMetadataUrl: string;
  /** Only activities from this tenant are accepted; absent: any tenant (a multi-tenant app). */
  tenantId?: string;
  fetch?: typeof fetch;
  now?: () => number;
}

export class TeamsAuthError extends Error {
  override name = 'TeamsAuthError';
}

const metadataSchema = z.object({ issuer: z.string().min(1), jwks_uri: z.string().url() });
const jwksSchema = z.object({ keys: z.array(z.looseObject({ kid: z.string().optional(), endorsements: z.array(z.string()).optional() })) });
const activitySchema = z.looseObject({
  serviceUrl: z.string().min(1),
  channelId: z.string().optional(),
  conversation: z.looseObject({ tenantId: z.string().optional() }).optional(),
  channelData: z.looseObject({ tenant: z.looseObject({ id: z.string().optional() }).optional() }).optional(),
});

interface KeySet {
  issuer: string;
  keys: (JWK & { endorsements?: string[] })[];
  fetchedAt: number;
}

/**
 * The Teams webhook's request check (receive.ts): resolves with the token's claims, or throws
 * TeamsAuthError saying why (the webhook answers 401 either way).
 */
export function botFrameworkVerifier(config: BotFrameworkAuthConfig): (request: Request, body: string) => Promise<JWTPayload> {
  const fetchFn = config.fetch ?? fetch;
  const now = config.now ?? Date.now;
  let keySet: Promise<KeySet> | undefined;

  const getJson = async (url: string) => {
    const response = await fetchFn(url, { headers: { accept: 'application/json' } });
    if (!response.ok) throw new Error(`GET ${url} answered ${response.status}`);
    return (await response.json()) as unknown;
  };
  const load = async (): Promise<KeySet> => {
    const metadata = metadataSchema.parse(await getJson(config.openIdMetadataUrl));
    const jwks = jwksSchema.parse(await getJson(metadata.jwks_uri));
    return { issuer: metadata.issuer, keys: jwks.keys as KeySet['keys'], fetchedAt: now() };
  };
  const current = async (refreshIfOlderThanMs: number): Promise<KeySet> => {
    const cached = keySet && (await keySet.catch(() => undefined));
    if (cached && now() - cached.fetchedAt < refreshIfOlderThanMs) return cached;
    keySet = load();
    keySet.catch(() => (keySet = undefined));
    return keySet;
  };

  return async (request, body) => {
    const header = request.headers.get('authorization') ?? '';
    const token = /^Bearer (\S+)$/i.exec(header)?.[1];
    if (!token) throw new TeamsAuthError('no bearer token');
    let activity: z.output<typeof activitySchema>;
    try {
      activity = activitySchema.parse(JSON.parse(body));
    } catch {
      throw new TeamsAuthError('the body is not an activity with a serviceUrl');
    }
    let kid: string | undefined;
    try {
      kid = decodeProtectedHeader(token).kid;
    } catch {
      throw new TeamsAuthError('the token is not a JWT');
    }
    if (!kid) throw new TeamsAuthError('the token names no key');
    let keys = await current(KEYS_MAX_AGE_MS);
    let jwk = keys.keys.find((k) => k.kid === kid);
    if (!jwk) {
      keys = await current(UNKNOWN_KEY_REFRESH_MS);
      jwk = keys.keys.find((k) => k.kid === kid);
    }
    if (!jwk) throw new TeamsAuthError('the token was signed with a key the metadata does not publish');
    // A key endorsed for some channels only signs activities of those channels.
    if (jwk.endorsements && activity.channelId && !jwk.endorsements.includes(activity.channelId)) {
      throw new TeamsAuthError(`the signing key is not endorsed for channel ${activity.channelId}`);
    }
    let payload: JWTPayload;
    try {
      const key = await importJWK({ ...jwk, alg: jwk.alg ?? 'RS256' });
      ({ payload } = await jwtVerify(token, key, {
        issuer: keys.issuer,
        audience: config.appId,
        clockTolerance: CLOCK_SKEW_SECONDS,
        currentDate: new Date(now()),
        requiredClaims: ['exp'],
      }));
    } catch (error) {
      throw new TeamsAuthError(`the token does not verify: ${(error as Error).message}`);
    }
    const serviceUrl = payload.serviceurl ?? payload.serviceUrl;
    if (typeof serviceUrl !== 'string' || !sameServiceUrl(serviceUrl, activity.serviceUrl)) {
      throw new TeamsAuthError("the token's serviceurl claim does not match the activity's serviceUrl");
    }
    if (config.tenantId) {
      const tenant = activity.conversation?.tenantId ?? activity.channelData?.tenant?.id;
      if (tenant?.toLowerCase() !== config.tenantId.toLowerCase()) {
        throw new TeamsAuthError(`the activity comes from tenant ${tenant ?? '(none)'}, not this app's tenant`);
      }
    }
    return payload;
  };
}
