// The OAuth authorization code flow with PKCE against an MCP server's authorization server, through
// the MCP SDK's `auth()` (discovery from the server's protected-resource metadata, dynamic client
// registration where no client is configured, the code exchange and refresh). The SDK drives a
// provider; ours keeps everything in one session object the caller loads and stores, since each step
// of the flow runs in a different Lambda invocation.
import { auth, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import * as z from 'zod';
import { SECRET_REFERENCE } from '../../settings/groups/reach.ts';
import { expiresAtOf, loadConnection, saveConnection, type Connection, type TokenStoreDeps } from './tokens.ts';
import { finishState, startState, stateToStart } from './states.ts';
import type { ConnectBinding } from './records.ts';

interface Session {
  client?: OAuthClientInformationMixed;
  tokens?: OAuthTokens;
  codeVerifier?: string;
  authorizationUrl?: URL;
}

class SessionProvider implements OAuthClientProvider {
  constructor(
    readonly session: Session,
    readonly redirectUrl: string,
    private readonly stateValue?: string,
  ) {}
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Threadwork',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    };
  }
  state = () => this.stateValue ?? '';
  clientInformation = () => this.session.client;
  saveClientInformation = (client: OAuthClientInformationMixed) => void (this.session.client = client);
  tokens = () => this.session.tokens;
  saveTokens = (tokens: OAuthTokens) =>
    // A refresh that sends no new refresh token leaves the old one in force.
    void (this.session.tokens = { ...tokens, refresh_token: tokens.refresh_token ?? this.session.tokens?.refresh_token });
  redirectToAuthorization = (url: URL) => void (this.session.authorizationUrl = url);
  saveCodeVerifier = (verifier: string) => void (this.session.codeVerifier = verifier);
  codeVerifier = () => {
    if (!this.session.codeVerifier) throw new Error('no PKCE verifier for this flow');
    return this.session.codeVerifier;
  };
  invalidateCredentials = (scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery') => {
    if (scope === 'all' || scope === 'tokens') delete this.session.tokens;
    if (scope === 'all' || scope === 'client') delete this.session.client;
    if (scope === 'all' || scope === 'verifier') delete this.session.codeVerifier;
  };
}

export interface OAuthFlowDeps extends TokenStoreDeps {
  /** The value of the secret `<stack>/mcp/NAME` (a server's `oauthClient`). */
  readSecret(name: string): Promise<string>;
  /** For the discovery, registration and token requests (tests: the platform's). */
  fetch?: FetchLike;
  /** Epoch ms. */
  now: () => number;
}

/** Starting or finishing a Connect flow: the stack's GET /oauth/callback URL (the redirect URI) is known. */
export interface ConnectFlowDeps extends OAuthFlowDeps {
  redirectUrl: string;
}

const fetchOption = (deps: OAuthFlowDeps) => (deps.fetch ? { fetchFn: deps.fetch } : {});

/** The operator's client (`oauthClient: "${secret:NAME}"`, JSON with client_id and perhaps client_secret), or undefined: registration. */
async function operatorClient(deps: OAuthFlowDeps, reference: string | undefined): Promise<OAuthClientInformationMixed | undefined> {
  const name = reference?.match(new RegExp(SECRET_REFERENCE.source))?.[1];
  if (!name) return undefined;
  const value = await deps.readSecret(name);
  const parsed = z
    .string()
    .transform((text, ctx) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        ctx.addIssue({ code: 'custom', message: 'not JSON' });
        return z.NEVER;
      }
    })
    .pipe(z.object({ client_id: z.string().min(1), client_secret: z.string().min(1).optional() }))
    .safeParse(value);
  if (!parsed.success) throw new Error(`the secret ${name} (oauthClient) must hold JSON with client_id and perhaps client_secret`);
  return parsed.data;
}

/** GET /oauth/start: takes the `state` and gives the provider's authorization URL to send the browser to. */
export async function beginConnect(deps: ConnectFlowDeps, state: string): Promise<URL> {
  const binding = await stateToStart(deps, state, deps.now());
  const client = await operatorClient(deps, binding.oauthClient);
  const session: Session = client ? { client } : {};
  const provider = new SessionProvider(session, deps.redirectUrl, state);
  const result = await auth(provider, { serverUrl: binding.serverUrl, ...fetchOption(deps) });
  if (result !== 'REDIRECT' || !session.authorizationUrl || !session.codeVerifier || !session.client) {
    throw new Error(`the ${binding.server} server's authorization server did not start an authorization`);
  }
  await startState(deps, state, binding, { codeVerifier: session.codeVerifier, client: session.client }, deps.now());
  return session.authorizationUrl;
}

/** GET /oauth/callback: ends the `state`, exchanges the code (with the kept verifier) and stores the person's tokens. */
export async function finishConnect(deps: ConnectFlowDeps, state: string, code: string): Promise<ConnectBinding> {
  const { binding, secrets } = await finishState(deps, state, deps.now());
  const session: Session = { client: secrets.client, codeVerifier: secrets.codeVerifier };
  const obtainedAt = deps.now();
  const provider = new SessionProvider(session, deps.redirectUrl);
  await auth(provider, { serverUrl: binding.serverUrl, authorizationCode: code, ...fetchOption(deps) });
  if (!session.tokens || !session.client) throw new Error(`the ${binding.server} server's authorization server gave no tokens`);
  await saveConnection(deps, binding, { tokens: session.tokens, obtainedAt, client: session.client, redirectUrl: deps.redirectUrl });
  return binding;
}

/** An access token this long from expiry is refreshed before use. */
export const REFRESH_BEFORE_MS = 5 * 60 * 1000;

/**
 * The person's access token for the server, refreshed first when it expires within five minutes;
 * undefined when they have not connected (or their connection can no longer be refreshed).
 */
export async function accessTokenFor(
  deps: OAuthFlowDeps,
  at: { person: string; server: string; serverUrl: string },
): Promise<string | undefined> {
  const connection = await loadConnection(deps, at);
  if (!connection) return undefined;
  const expiresAt = expiresAtOf(connection);
  if (expiresAt === undefined || expiresAt - deps.now() > REFRESH_BEFORE_MS) return connection.tokens.access_token;
  if (!connection.tokens.refresh_token) return undefined;
  const session: Session = { client: connection.client, tokens: connection.tokens };
  const obtainedAt = deps.now();
  // The redirect URI the client was registered with: a refresh sends none, but the SDK takes a client without one for a non-interactive flow.
  const provider = new SessionProvider(session, connection.redirectUrl);
  const result = await auth(provider, { serverUrl: at.serverUrl, ...fetchOption(deps) });
  // REDIRECT: the refresh was refused; the person connects again.
  if (result !== 'AUTHORIZED' || !session.tokens || session.tokens === connection.tokens) return undefined;
  const refreshed: Connection = { ...connection, tokens: session.tokens, obtainedAt, client: session.client ?? connection.client };
  await saveConnection(deps, at, refreshed);
  return refreshed.tokens.access_token;
}
