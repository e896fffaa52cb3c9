// A small OAuth 2.1 authorization server for tests, standing in front of a test MCP server the way a
// hosted MCP server's is: metadata (RFC 8414), dynamic client registration (RFC 7591), an authorize
// endpoint that approves at once as whoever the test says is signed in, and a token endpoint that
// checks the client, the redirect URI and the PKCE verifier (S256), and refreshes. Access tokens name
// their person, so the MCP server can say whom it was called as.
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

interface Grant {
  user: string;
  clientId: string;
  redirectUri: string;
  challenge: string;
}

export interface TestOAuthServer {
  /** The issuer (and base URL). */
  url: string;
  /** Who the browser is signed in as at the authorize endpoint. */
  signedInAs: string;
  /** `expires_in` of the tokens it issues next. */
  expiresIn: number;
  /** The person an access token was issued to, or undefined for a token it did not issue. */
  userOf(accessToken: string): string | undefined;
  readonly counts: { registrations: number; authorizations: number; codeExchanges: number; refreshes: number };
  close(): Promise<void>;
}

async function formOf(request: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

async function jsonOf(request: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
}

const json = (response: ServerResponse, status: number, body: unknown) =>
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

export async function startTestOAuthServer(): Promise<TestOAuthServer> {
  const clients = new Map<string, { secret: string; redirectUris: string[] }>();
  const codes = new Map<string, Grant>();
  const accessTokens = new Map<string, string>();
  const refreshTokens = new Map<string, { user: string; clientId: string }>();
  const counts = { registrations: 0, authorizations: 0, codeExchanges: 0, refreshes: 0 };
  let base = '';
  const issue = (user: string, clientId: string) => {
    const access = `at_${user}_${randomBytes(8).toString('hex')}`;
    const refresh = `rt_${randomBytes(12).toString('hex')}`;
    accessTokens.set(access, user);
    refreshTokens.set(refresh, { user, clientId });
    return { access_token: access, token_type: 'Bearer', expires_in: self.expiresIn, refresh_token: refresh };
  };
  /** The client the request authenticates as (Basic or in the form), or undefined. */
  const clientOf = (request: IncomingMessage, form: URLSearchParams): string | undefined => {
    const basic = request.headers.authorization?.match(/^Basic (.+)$/)?.[1];
    const [id, secret] = basic
      ? Buffer.from(basic, 'base64').toString('utf8').split(':').map(decodeURIComponent)
      : [form.get('client_id') ?? '', form.get('client_secret') ?? ''];
    return id && clients.get(id)?.secret === secret ? id : undefined;
  };

  const http: Server = createServer((request, response) => {
    void (async () => {
      const url = new URL(request.url!, base);
      if (url.pathname === '/.well-known/oauth-authorization-server') {
        return json(response, 200, {
          issuer: base,
          authorization_endpoint: `${base}/authorize`,
          token_endpoint: `${base}/token`,
          registration_endpoint: `${base}/register`,
          response_types_supported: ['code'],
          grant_types_supported: ['authorization_code', 'refresh_token'],
          code_challenge_methods_supported: ['S256'],
          token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
        });
      }
      if (url.pathname === '/register' && request.method === 'POST') {
        const metadata = await jsonOf(request);
        const clientId = `client_${randomBytes(6).toString('hex')}`;
        const secret = randomBytes(16).toString('hex');
        clients.set(clientId, { secret, redirectUris: (metadata.redirect_uris as string[]) ?? [] });
        counts.registrations++;
        return json(response, 201, {
          ...metadata,
          client_id: clientId,
          client_secret: secret,
          client_id_issued_at: Math.floor(Date.now() / 1000),
        });
      }
      if (url.pathname === '/authorize') {
        const q = url.searchParams;
        const client = clients.get(q.get('client_id') ?? '');
        const redirectUri = q.get('redirect_uri') ?? '';
        if (!client || !client.redirectUris.includes(redirectUri)) return json(response, 400, { error: 'invalid_request' });
        if (q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge')) return json(response, 400, { error: 'invalid_request' });
        const code = randomBytes(12).toString('hex');
        codes.set(code, { user: self.signedInAs, clientId: q.get('client_id')!, redirectUri, challenge: q.get('code_challenge')! });
        counts.authorizations++;
        const back = new URL(redirectUri);
        back.searchParams.set('code', code);
        if (q.get('state') !== null) back.searchParams.set('state', q.get('state')!);
        response.writeHead(302, { location: back.href }).end();
        return;
      }
      if (url.pathname === '/token' && request.method === 'POST') {
        const form = await formOf(request);
        const clientId = clientOf(request, form);
        if (!clientId) return json(response, 401, { error: 'invalid_client' });
        if (form.get('grant_type') === 'authorization_code') {
          const grant = codes.get(form.get('code') ?? '');
          codes.delete(form.get('code') ?? '');
          const verifier = form.get('code_verifier') ?? '';
          const challenge = createHash('sha256').update(verifier).digest('base64url');
          if (!grant || grant.clientId !== clientId || grant.redirectUri !== form.get('redirect_uri') || grant.challenge !== challenge) {
            return json(response, 400, { error: 'invalid_grant' });
          }
          counts.codeExchanges++;
          return json(response, 200, issue(grant.user, clientId));
        }
        if (form.get('grant_type') === 'refresh_token') {
          const held = refreshTokens.get(form.get('refresh_token') ?? '');
          if (!held || held.clientId !== clientId) return json(response, 400, { error: 'invalid_grant' });
          refreshTokens.delete(form.get('refresh_token')!);
          counts.refreshes++;
          return json(response, 200, issue(held.user, clientId));
        }
        return json(response, 400, { error: 'unsupported_grant_type' });
      }
      json(response, 404, { error: 'not_found' });
    })().catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500).end(String(error));
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const self: TestOAuthServer = {
    url: base,
    signedInAs: 'nobody',
    expiresIn: 3600,
    userOf: (token) => accessTokens.get(token),
    counts,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
  return self;
}
