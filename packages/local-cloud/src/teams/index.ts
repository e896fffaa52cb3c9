// A local stand-in for Microsoft Teams and the Bot Framework: OpenID metadata and signing keys (so the
// bot verifies inbound tokens exactly as it does against Microsoft's), a client-credentials token
// endpoint, the Bot Connector API subset the Teams adapter calls on a conversation's serviceUrl, and
// signed delivery of user activities to the bot's messaging endpoint. Activities carry the
// stand-in's own URL as serviceUrl, so the bot's replies come back here.
//
// Point the bot at it with TEAMS_OPENID_METADATA_URL = `openIdMetadataUrl`, TEAMS_TOKEN_URL =
// `tokenUrl` and TEAMS_CONNECTOR_ORIGINS = `url` (where a conversation not yet seen may be sent to:
// the stand-in plays Microsoft's Bot Connector hosts). Everything lives in memory. `GET /` is a page of the conversations; `GET /_local/
// conversations` is the same as JSON; `POST /_local/post` lets another process (the chat CLI) post
// as a user.
import { randomBytes } from 'node:crypto';
import { SignJWT } from 'jose';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pollerFor } from '../wait-for.ts';
import { foreignRequestRefusal, listenLocally, readRequestBytes } from '../http-server.ts';
import { createActivitySource, type UserMessageInput } from './activities.ts';
import { createConnector } from './connector.ts';
import { createSigningKey, signActivityToken } from './keys.ts';
import { renderTeamsPage } from './page.ts';
import { createTeamsState, DEFAULT_TENANT_ID, randomId } from './state.ts';

export { createSigningKey, signActivityToken } from './keys.ts';
export type { SigningKey } from './keys.ts';
export type { StoredActivity, ConversationType, TeamsUser } from './state.ts';
export { cardButtonsOf, type CardButton } from './cards.ts';
export { DEFAULT_TENANT_ID, DEFAULT_TEAMS_USER } from './state.ts';

export interface TeamsStandInOptions {
  port?: number;
  appId: string;
  appPassword: string;
  botName?: string;
  /** The tenant of the stand-in's users (default DEFAULT_TENANT_ID). */
  tenantId?: string;
  /** Lifetime of the tokens the token endpoint issues (default an hour). */
  tokenLifetimeSeconds?: number;
}

export type TeamsStandIn = Awaited<ReturnType<typeof startTeamsStandIn>>;

const sendJson = (res: ServerResponse, status: number, body: unknown) =>
  void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

export async function startTeamsStandIn(options: TeamsStandInOptions) {
  const state = createTeamsState();
  const key = await createSigningKey();
  const bot = { appId: options.appId, name: options.botName ?? 'Threadwork', tenantId: options.tenantId ?? DEFAULT_TENANT_ID };
  let baseUrl = '';
  const activities = createActivitySource(state, key, bot, () => baseUrl);
  const connector = createConnector(state);

  async function token(res: ServerResponse, body: Buffer): Promise<void> {
    const form = new URLSearchParams(body.toString('utf8'));
    if (form.get('grant_type') !== 'client_credentials') return sendJson(res, 400, { error: 'unsupported_grant_type' });
    if (form.get('client_id') !== options.appId || form.get('client_secret') !== options.appPassword) {
      return sendJson(res, 401, { error: 'invalid_client', error_description: 'AADSTS7000215: Invalid client secret provided.' });
    }
    // A JWT like Entra's (the Teams SDK decodes it to read its expiry), for the scope's resource.
    const lifetime = options.tokenLifetimeSeconds ?? 3600;
    const accessToken = await new SignJWT({ appid: options.appId, jti: randomBytes(8).toString('hex') })
      .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT' })
      .setIssuer(baseUrl)
      .setAudience((form.get('scope') ?? '').replace(/\/\.default$/, ''))
      .setIssuedAt()
      .setExpirationTime(Math.floor(Date.now() / 1000) + lifetime)
      .sign(key.privateKey);
    state.issuedTokens.add(accessToken);
    state.tokenRequests.push({ clientId: options.appId, scope: form.get('scope') ?? '' });
    sendJson(res, 200, { token_type: 'Bearer', expires_in: lifetime, access_token: accessToken });
  }

  /** A user's attached file, as the Connector serves it: only with a bot token the stand-in issued. */
  function file(req: IncomingMessage, res: ServerResponse, id: string): void {
    const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    const authorized = Boolean(token && state.issuedTokens.has(token));
    state.fileDownloads.push({ id, authorized });
    if (!authorized) return sendJson(res, 401, { error: { code: 'Unauthorized', message: 'no valid bot token' } });
    const stored = state.files.get(id);
    if (!stored) return sendJson(res, 404, { error: { code: 'NotFound' } });
    res.writeHead(200, { 'content-type': stored.contentType, 'content-length': stored.data.length }).end(stored.data);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', baseUrl);
    const path = url.pathname;
    // The page and the /_local/ endpoints are for this machine's tools, never for a page elsewhere.
    if (path === '/' || path.startsWith('/_local/')) {
      const refused = foreignRequestRefusal(req, Number(new URL(baseUrl).port), req.method === 'POST');
      if (refused) return void res.writeHead(refused.status, { 'content-type': 'text/plain' }).end(refused.why);
    }
    const body = await readRequestBytes(req);
    if (path.startsWith('/v3/conversations/')) return connector.handle(req, res, path, url.searchParams, body);
    const attachment = /^\/v3\/attachments\/([^/]+)\/views\/original$/.exec(path);
    if (req.method === 'GET' && attachment) return file(req, res, attachment[1]!);
    if (req.method === 'GET' && path === '/.well-known/openidconfiguration') {
      return sendJson(res, 200, { issuer: baseUrl, jwks_uri: `${baseUrl}/keys`, id_token_signing_alg_values_supported: ['RS256'] });
    }
    if (req.method === 'GET' && path === '/keys') return sendJson(res, 200, { keys: [key.publicJwk] });
    if (req.method === 'POST' && path === '/oauth2/v2.0/token') return token(res, body);
    if (req.method === 'POST' && path === '/_local/post') {
      const input = JSON.parse(body.toString('utf8') || '{}') as UserMessageInput;
      if (typeof input.text !== 'string') return sendJson(res, 400, { ok: false, error: 'text is required' });
      const sent = await activities.sendUserMessage(input);
      return sendJson(res, 200, {
        ok: true,
        conversationId: sent.conversationId,
        activityId: sent.activityId,
        status: sent.delivery.status,
      });
    }
    if (req.method === 'GET' && path === '/_local/conversations') {
      const id = url.searchParams.get('id');
      const all = Object.fromEntries([...state.activities].filter(([cid]) => !id || cid === id));
      return sendJson(res, 200, { ok: true, appId: bot.appId, botName: bot.name, conversations: all });
    }
    if (req.method === 'GET' && path === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(renderTeamsPage(state, activities.messagingEndpoint()));
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found');
  }

  const server = await listenLocally(
    (req, res) =>
      void handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) sendJson(res, 500, { error: 'internal_error', detail: String(error) });
        else res.end();
      }),
    { port: options.port },
  );
  baseUrl = server.url;

  return {
    url: baseUrl,
    serviceUrl: activities.serviceUrl(),
    openIdMetadataUrl: `${baseUrl}/.well-known/openidconfiguration`,
    tokenUrl: `${baseUrl}/oauth2/v2.0/token`,
    appId: bot.appId,
    tenantId: bot.tenantId,
    botName: bot.name,
    botAccountId: `28:${bot.appId}`,
    state,
    /** The bot's messages in a conversation (not the users'), oldest first. */
    botMessages: (conversationId: string) =>
      state.messages(conversationId).filter((a) => a.from.id !== state.users.values().next().value?.id && !state.users.has(a.from.id)),
    deliveries: activities.deliveries,
    /** Mutable: set rateLimits.update = { limit, windowMs } to answer activity updates with 429. */
    rateLimits: connector.rateLimits,
    throttled: connector.throttled,
    updates: connector.updates,
    sendUserMessage: activities.sendUserMessage,
    /** A user's press on a card's Action.Submit button, delivered to the bot. */
    pressCardButton: activities.pressCardButton,
    userNamed: activities.userNamed,
    userActivity: activities.userActivity,
    deliver: activities.deliver,
    /** A token as the stand-in would sign it, with claims overridden (for refusal tests). */
    signToken: (claims: Partial<Parameters<typeof signActivityToken>[1]> & { serviceUrl: string }, signingKey = key) =>
      signActivityToken(signingKey, { issuer: baseUrl, audience: bot.appId, ...claims }),
    setMessagingEndpoint: activities.setMessagingEndpoint,
    newConversationId: randomId,
    waitFor: pollerFor('Teams'),
    close: server.close,
  };
}
