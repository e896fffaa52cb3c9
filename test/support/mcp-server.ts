// A real MCP server for tests, built with the official SDK's server classes (McpServer over the
// Streamable HTTP transport, stateless: a server and transport per request, as the SDK's examples
// do) on 127.0.0.1. It answers only requests with the expected Authorization header, or, behind an
// OAuth stand-in, only requests with an access token that stand-in issued (others get 401 naming its
// protected-resource metadata, as the MCP authorization spec says); tools are whatever the test registers.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { TestOAuthServer } from './oauth-server.ts';

export interface TestMcpServer {
  url: string;
  /** The Authorization header of each request that reached a tool, in order. */
  readonly authorizations: (string | undefined)[];
  close(): Promise<void>;
}

async function bodyOf(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : undefined;
}

export async function startTestMcpServer(options: {
  name: string;
  /** The Authorization header every request must carry (absent: none needed). */
  authorization?: string;
  /** Requests must carry a Bearer token this authorization server issued. */
  oauth?: TestOAuthServer;
  register: (server: McpServer, request: () => IncomingMessage) => void;
}): Promise<TestMcpServer> {
  const authorizations: (string | undefined)[] = [];
  let url = '';
  const http: Server = createServer((request, response) => {
    void (async () => {
      const { oauth } = options;
      if (oauth && request.url?.startsWith('/.well-known/oauth-protected-resource')) {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ resource: url, authorization_servers: [oauth.url], bearer_methods_supported: ['header'] }));
        return;
      }
      const bearer = request.headers.authorization?.match(/^Bearer (.+)$/)?.[1];
      if (oauth && !(bearer && oauth.userOf(bearer))) {
        const metadata = `${new URL(url).origin}/.well-known/oauth-protected-resource/mcp`;
        response.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': `Bearer resource_metadata="${metadata}"` });
        response.end('{"error":"invalid_token"}');
        return;
      }
      if (options.authorization && request.headers.authorization !== options.authorization) {
        response.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
        return;
      }
      authorizations.push(request.headers.authorization);
      const server = new McpServer({ name: options.name, version: '1.0.0' });
      options.register(server, () => request);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      response.on('close', () => void transport.close().then(() => server.close()));
      await server.connect(transport);
      await transport.handleRequest(request, response, request.method === 'POST' ? await bodyOf(request) : undefined);
    })().catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500).end(String(error));
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  url = `http://127.0.0.1:${port}/mcp`;
  return {
    url,
    authorizations,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}
