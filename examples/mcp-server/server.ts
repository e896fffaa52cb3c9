// A tiny MCP server for trying the agent's MCP support with `npm start` (README: "Connecting the agent
// to your systems"). Built with the official SDK: McpServer over Streamable HTTP, stateless (a server
// per request), on 127.0.0.1. It answers only requests carrying `Authorization: Bearer <TOKEN>`,
// TOKEN from EXAMPLE_MCP_TOKEN, and offers two tools: lookup_order (made-up orders) and delete_order
// (to try `tools.deny`).
//
//   EXAMPLE_MCP_TOKEN=let-me-in npx tsx examples/mcp-server/server.ts     (PORT, default 3010)
import { createServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import * as z from 'zod';

const token = process.env.EXAMPLE_MCP_TOKEN;
if (!token) {
  console.error('Set EXAMPLE_MCP_TOKEN: the server answers only requests with "Authorization: Bearer <EXAMPLE_MCP_TOKEN>".');
  process.exit(2);
}
const port = Number(process.env.PORT ?? 3010);

const ORDERS: Record<string, { status: string; items: string[] }> = {
  '1001': { status: 'shipped', items: ['keyboard'] },
  '1002': { status: 'packing', items: ['monitor', 'cable'] },
};

function orderServer(): McpServer {
  const server = new McpServer({ name: 'example-orders', version: '1.0.0' });
  server.registerTool(
    'lookup_order',
    {
      description: 'Look up an order by its number: status and items.',
      inputSchema: { id: z.string().describe('The order number, e.g. 1001') },
    },
    async ({ id }) => {
      const order = ORDERS[id];
      if (!order) return { content: [{ type: 'text', text: `No order ${id}.` }], isError: true };
      return {
        content: [{ type: 'text', text: `Order ${id} is ${order.status}: ${order.items.join(', ')}.` }],
        structuredContent: { id, ...order },
      };
    },
  );
  server.registerTool('delete_order', { description: 'Delete an order.', inputSchema: { id: z.string() } }, async ({ id }) => ({
    content: [{ type: 'text', text: `Order ${id} deleted.` }],
  }));
  return server;
}

createServer((request, response) => {
  if (request.headers.authorization !== `Bearer ${token}`) {
    response.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
    return;
  }
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown) : undefined;
    const server = orderServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    response.on('close', () => void transport.close().then(() => server.close()));
    void server.connect(transport).then(() => transport.handleRequest(request, response, body));
  });
}).listen(port, '127.0.0.1', () => console.log(`example MCP server at http://127.0.0.1:${port}/mcp`));
