// A real stdio MCP server for tests, built with the official SDK's server classes (McpServer over
// StdioServerTransport), as a program: `node --import tsx test/support/mcp-stdio-server.ts`, or the
// one-file bundle stdioServerBundle() makes for a sandbox (which has Node but no node_modules).
// Its tools say which process answered and how often, so a test sees a server kept between calls.
import { rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import * as z from 'zod';

export const STDIO_SERVER_PATH = fileURLToPath(import.meta.url);

/** The server as one ES module file, SDK included. */
export async function stdioServerBundle(): Promise<string> {
  const { build } = await import('esbuild');
  const out = await build({
    entryPoints: [STDIO_SERVER_PATH],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    write: false,
    minify: true,
    logLevel: 'warning',
    // esbuild itself stays out: only main() runs in the bundle.
    external: ['esbuild'],
  });
  return out.outputFiles[0]!.text;
}

async function main(): Promise<void> {
  const server = new McpServer({ name: 'notes', version: '1.0.0' });
  let calls = 0;
  let cancelled = 0;
  server.registerTool(
    'count_calls',
    { description: 'Count the calls this server process has answered', inputSchema: { label: z.string() } },
    async ({ label }) => ({ content: [{ type: 'text', text: `${label}: call ${++calls} answered by process ${process.pid}` }] }),
  );
  // Answers only when the call is cancelled (a stop); leaves waiting-<pid> in its directory meanwhile, for a test to see.
  server.registerTool('wait_for_cancel', { description: 'Wait until cancelled' }, async (extra) => {
    const marker = `waiting-${process.pid}`;
    writeFileSync(marker, '');
    extra.signal.addEventListener('abort', () => rmSync(marker, { force: true }), { once: true });
    await new Promise<void>((resolve) => extra.signal.addEventListener('abort', () => resolve(), { once: true }));
    cancelled++;
    return { content: [{ type: 'text', text: 'cancelled' }] };
  });
  server.registerTool('cancelled_calls', { description: 'How many calls were cancelled' }, async () => ({
    content: [{ type: 'text', text: `cancelled: ${cancelled}` }],
  }));
  server.registerTool('environment', { description: 'The value of NOTES_MODE' }, async () => ({
    content: [{ type: 'text', text: `mode ${process.env.NOTES_MODE ?? 'unset'}` }],
  }));
  await server.connect(new StdioServerTransport());
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
