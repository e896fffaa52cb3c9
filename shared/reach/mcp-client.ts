// Talking to one MCP server with the official TypeScript SDK: Streamable HTTP, or the older HTTP+SSE
// transport where the server answers the Streamable HTTP initialize with 400, 404 or 405 (the MCP
// specification's backwards-compatibility rule), or a stdio server in the thread's sandbox through
// the transport the caller gives (sandbox-step's, over the command server). A client lives for one
// listing or one call: the steps are Lambda functions, and a session held between invocations would
// outlive nothing (a stdio server itself lives on in the sandbox).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike, Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { imageFormatOf, MAX_IMAGE_BYTES } from '../platforms/attachments.ts';
import { truncateForModel } from '../tools/text.ts';
import type { ToolOutcome } from '../tools/tool.ts';

interface HttpServer {
  url: string;
  /** With secrets resolved. */
  headers: Record<string, string>;
  /** The guarded fetch, for a server nobody vetted (a channel's); absent: the platform's fetch. */
  fetch?: FetchLike;
}

interface StdioServer {
  /** A fresh transport to the server for each client. */
  transport: () => Transport;
}

export type HttpMcpTarget = { name: string; timeoutMs: number } & HttpServer;
export type McpTarget = HttpMcpTarget | ({ name: string; timeoutMs: number } & StdioServer);

const CLIENT_INFO = { name: 'threadwork', version: '1' };

async function connected(target: McpTarget, signal: AbortSignal): Promise<Client> {
  if ('transport' in target) {
    const client = new Client(CLIENT_INFO);
    await client.connect(target.transport(), { signal, timeout: target.timeoutMs });
    return client;
  }
  const requestInit = { headers: target.headers };
  const options = { requestInit, ...(target.fetch ? { fetch: target.fetch } : {}) };
  const request = { signal, timeout: target.timeoutMs };
  const client = new Client(CLIENT_INFO);
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(target.url), options), request);
    return client;
  } catch (error) {
    await client.close().catch(() => undefined);
    const oldServer = error instanceof StreamableHTTPError && [400, 404, 405].includes(error.code ?? 0);
    if (!oldServer || signal.aborted) throw error;
  }
  const sse = new Client(CLIENT_INFO);
  await sse.connect(new SSEClientTransport(new URL(target.url), options), request);
  return sse;
}

async function withClient<T>(target: McpTarget, signal: AbortSignal, work: (client: Client) => Promise<T>): Promise<T> {
  const client = await connected(target, signal);
  try {
    return await work(client);
  } finally {
    await client.close().catch(() => undefined);
  }
}

export interface ServerTool {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
}

/** Every tool the server lists (all pages). */
export function listServerTools(target: McpTarget, signal: AbortSignal): Promise<ServerTool[]> {
  return withClient(target, signal, async (client) => {
    const tools: ServerTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : {}, { signal, timeout: target.timeoutMs });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor && tools.length < 1000);
    return tools;
  });
}

/** An image of a result, as the server sent it (base64), in a format Bedrock takes. */
export interface ResultImage {
  format: NonNullable<ToolOutcome['images']>[number]['format'];
  data: string;
}

export type ServerOutcome = Omit<ToolOutcome, 'images'> & { bytes: number; images: ResultImage[] };

/** One call; the server's result as the model reads it, and how many bytes it had. */
export function callServerTool(
  target: McpTarget,
  tool: string,
  args: Record<string, unknown>,
  signal: AbortSignal,
): Promise<ServerOutcome> {
  return withClient(target, signal, async (client) => {
    const result = (await client.callTool({ name: tool, arguments: args }, undefined, {
      signal,
      timeout: target.timeoutMs,
    })) as CallToolResult;
    return resultOutcome(result);
  });
}

/**
 * What the model reads of a result: text as it is, a resource's text under its URI, structured
 * content as JSON, images (PNG, JPEG, GIF, WebP within Bedrock's size limit) as images; other binary
 * parts (audio, blobs, larger images) are named with their type and size, not shown. Clamped like a
 * command's output.
 */
export function resultOutcome(result: CallToolResult): ServerOutcome {
  const parts: string[] = [];
  const images: ResultImage[] = [];
  for (const block of result.content ?? []) {
    if (block.type === 'text') parts.push(block.text);
    else if (block.type === 'image' || block.type === 'audio') {
      const size = Buffer.byteLength(block.data, 'base64');
      const format = block.type === 'image' && size <= MAX_IMAGE_BYTES ? imageFormatOf(block.mimeType) : undefined;
      if (format) images.push({ format, data: block.data });
      parts.push(`[${block.type} ${block.mimeType}, ${size} bytes: ${format ? `image ${images.length} below` : 'not shown'}]`);
    } else if (block.type === 'resource') {
      const resource = block.resource;
      parts.push(
        'text' in resource
          ? `[resource ${resource.uri}]\n${resource.text}`
          : `[resource ${resource.uri}, ${resource.mimeType ?? 'binary'}: not shown]`,
      );
    } else if (block.type === 'resource_link') parts.push(`[resource link ${block.uri}${block.name ? ` (${block.name})` : ''}]`);
  }
  if (result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent));
  const whole = parts.join('\n');
  const view = truncateForModel(whole);
  const text = view.truncated ? `${view.text}\n[result truncated: showing the last part of ${whole.length} characters]` : whole;
  const bytes = Buffer.byteLength(whole) + images.reduce((sum, image) => sum + Buffer.byteLength(image.data, 'base64'), 0);
  return { status: result.isError ? 'error' : 'success', text: text || '(empty result)', bytes, images };
}
