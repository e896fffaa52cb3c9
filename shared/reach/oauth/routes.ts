// The stack API's OAuth routes, what a person's browser sees: GET /oauth/start?state=… (from the
// Connect link: on to the MCP server's authorization server) and GET /oauth/callback?code=…&state=…
// (back from it: the tokens stored, a plain page saying to go back to the thread). Every refusal is a
// plain page that says what to do; nothing secret is in any page or redirect but the provider's own.
import type { JsonLogger } from '../../observability/log.ts';
import { beginConnect, finishConnect, type OAuthFlowDeps } from './flow.ts';
import { StateRefused } from './states.ts';

export const OAUTH_START_PATH = '/oauth/start';
export const OAUTH_CALLBACK_PATH = '/oauth/callback';

export interface OAuthRequest {
  path: string;
  query: Record<string, string | undefined>;
  /** Where the browser reached the API (`https://<domain>`): the callback URL is made from it. */
  origin: string;
}

export interface OAuthResponse {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const page = (statusCode: number, title: string, text: string): OAuthResponse => ({
  statusCode,
  headers: {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer',
    'content-security-policy': "default-src 'none'",
  },
  body: `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p></body></html>`,
});

export async function oauthRoute(deps: OAuthFlowDeps & { logger: JsonLogger }, request: OAuthRequest): Promise<OAuthResponse> {
  const flow = { ...deps, redirectUrl: `${request.origin}${OAUTH_CALLBACK_PATH}` };
  const state = request.query.state;
  if (!state) return page(400, 'Not connected', 'This link has no state. Use the Connect link the bot sent you.');
  try {
    if (request.path === OAUTH_START_PATH) {
      const to = await beginConnect(flow, state);
      return { statusCode: 302, headers: { location: to.href, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' }, body: '' };
    }
    if (request.query.error !== undefined || !request.query.code) {
      return page(
        400,
        'Not connected',
        `The server's sign-in did not approve the connection (${request.query.error ?? 'no code'}). Ask again in the thread for a new Connect link.`,
      );
    }
    const binding = await finishConnect(flow, state, request.query.code);
    deps.logger.info('mcp server connected', { server: binding.server, person: binding.person, threadId: binding.threadId });
    return page(
      200,
      `Connected to ${binding.server}`,
      `You can close this page and go back to the thread: your next message there can use ${binding.server} as you.`,
    );
  } catch (error) {
    if (error instanceof StateRefused) return page(400, 'Not connected', error.message);
    deps.logger.warn('mcp oauth failed', { path: request.path, error: (error as Error).name, message: (error as Error).message });
    return page(502, 'Not connected', "The server's sign-in could not be completed. Ask again in the thread for a new Connect link.");
  }
}
