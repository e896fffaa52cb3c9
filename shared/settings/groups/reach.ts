// What the agent may reach beyond its sandbox (docs: README "Connecting the agent to your systems"):
// MCP servers the operator declares (`mcpServers`, each perhaps for some channels only, its headers
// perhaps naming Secrets Manager secrets as `${secret:NAME}`), and the hosts web_fetch may read
// (`webFetch.allow`). A channel admin may add servers and hosts for a channel (`settings set`), but a
// channel's server never gets a secret and is held to web_fetch's address rules.
import * as z from 'zod';
import { settingsGroup } from '../group.ts';

/** `${secret:NAME}` in a header value: the secret `<stack>/mcp/NAME`. */
export const SECRET_REFERENCE = /\$\{secret:([A-Za-z0-9_.-]{1,100})\}/g;

/** A server's name is the first part of its tools' names (`<server>__<tool>`). */
const SERVER_NAME = /^[A-Za-z0-9-]{1,32}$/;

/** Servers by name, each name checked with a message that says what a name may be. */
const serversByName = <S extends z.ZodType>(server: S) =>
  z.record(z.string(), server).superRefine((servers, ctx) => {
    for (const name of Object.keys(servers)) {
      if (!SERVER_NAME.test(name))
        ctx.addIssue({ code: 'custom', path: [name], message: 'a server name must be 1-32 letters, digits or -' });
    }
  });

const toolPattern = z.string().regex(/^[A-Za-z0-9_.*-]{1,128}$/, { error: 'must be a tool name, * matching any characters' });

const serverShape = {
  url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }),
  headers: z.record(z.string().regex(/^[A-Za-z0-9-]{1,100}$/, { error: 'must be a header name' }), z.string().max(4000)).optional(),
  /** Which of the server's tools are offered: `allow` absent offers every one; `deny` wins. */
  tools: z
    .object({ allow: z.array(toolPattern).max(100).optional(), deny: z.array(toolPattern).max(100).optional() })
    .strict()
    .optional(),
  timeoutSeconds: z.int().min(1).max(600).default(30),
};

/** An issue for each value of `values` that names a secret. */
function refuseSecrets(ctx: z.RefinementCtx, field: string, values: Record<string, string> | undefined, message: string): void {
  for (const [name, value] of Object.entries(values ?? {})) {
    if (new RegExp(SECRET_REFERENCE.source).test(value)) ctx.addIssue({ code: 'custom', path: [field, name], message });
  }
}

/**
 * An operator's server is reached at `url`, or is a program that speaks MCP over stdio (`command`,
 * `args`, `env`), run inside the thread's sandbox. A stdio server gets no secret: the agent's own
 * commands run beside it as the same user and could read its environment.
 */
const operatorServer = z
  .object({
    ...serverShape,
    url: serverShape.url.optional(),
    command: z.string().min(1).max(1000).optional(),
    args: z.array(z.string().max(4000)).max(100).optional(),
    env: z
      .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,99}$/, { error: 'must be an environment variable name' }), z.string().max(4000))
      .optional(),
    /** `adapter:channel` keys (`slack:C0123`); absent: every channel. */
    channels: z.array(z.string().min(3)).max(1000).optional(),
  })
  .strict()
  .superRefine((server, ctx) => {
    if ((server.url === undefined) === (server.command === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: [],
        message: 'a server needs either url (HTTP) or command (stdio, run in the sandbox), not both',
      });
    }
    if (server.command === undefined) {
      for (const key of ['args', 'env'] as const) {
        if (server[key] !== undefined)
          ctx.addIssue({ code: 'custom', path: [key], message: `${key} is for a stdio server (one with command)` });
      }
      return;
    }
    if (server.headers !== undefined)
      ctx.addIssue({ code: 'custom', path: ['headers'], message: 'headers are for an HTTP server (one with url)' });
    refuseSecrets(
      ctx,
      'env',
      server.env,
      "a stdio server may not use ${secret:…}: it runs in the sandbox, where the agent's commands could read its environment; reach a server that needs a secret over HTTP (url, headers)",
    );
  });

const channelServer = z
  .object(serverShape)
  .strict()
  .superRefine(({ headers }, ctx) =>
    refuseSecrets(
      ctx,
      'headers',
      headers,
      "a channel's MCP server may not use ${secret:…}: only servers in the top-level mcpServers, which the operator declares, get secrets",
    ),
  );

/** A host web_fetch may read: `docs.example.com`, `*.example.com` (its subdomains), `*` (every public host), each perhaps with `:port`. */
const allowedHost = z.string().regex(/^(\*|(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*)(:\d{1,5})?$/, {
  error: 'must be a lower-case host name, *.domain for its subdomains, or * for every public host, perhaps with :port',
});
const webFetch = z.object({ allow: z.array(allowedHost).max(200).default([]) }).strict();

export type OperatorMcpServer = z.output<typeof operatorServer>;
export type ChannelMcpServer = z.output<typeof channelServer>;

export const reachSettings = settingsGroup({
  keys: {
    mcpServers: serversByName(operatorServer).default({}),
    webFetch: webFetch.default({ allow: [] }),
  },
  channel: {
    mcpServers: serversByName(channelServer).optional(),
    webFetch: webFetch.optional(),
  },
});
