// Teams as every function and the infra know it, without the Teams SDK: thread ids, whose tenant an
// activity comes from, the app's secret and variables, and its webhook in the stack. The chat wiring
// is shared/platforms/teams/platform.ts; the full adapter, only the Teams webhook's, adapter.ts.
import * as z from 'zod';
import { optional, wholeFrom } from '../../support/env-vars.ts';
import { credentialSourceOf, platformSecret, type PlatformDescriptor, type ThreadScope } from '../platform.ts';
import { BOT_CONNECTOR_ORIGINS, BOT_FRAMEWORK_OPENID_METADATA_URL } from './endpoints.ts';

export const TEAMS_PLACEHOLDER = 'replace-me';

const secret = platformSecret({
  title: 'Teams',
  schema: z.object({ appId: z.string().min(1), appPassword: z.string().min(1), tenantId: z.string().default('') }),
  generated: 'appPassword',
  placeholders: { appId: TEAMS_PLACEHOLDER, tenantId: TEAMS_PLACEHOLDER },
  example: { appId: '...', appPassword: '...', tenantId: '...' },
  docs: 'docs/deploy.md, "Teams"',
});
/** The Azure Bot's app id, its client secret, and its Entra tenant (empty only for a multi-tenant app). */
export type TeamsCredentials = z.infer<typeof secret.schema>;

/** The Teams app: a Secrets Manager secret in AWS, or plain variables in the local cloud. */
const shape = {
  TEAMS_SECRET_ARN: optional,
  TEAMS_APP_ID: optional,
  TEAMS_APP_PASSWORD: optional,
  TEAMS_APP_TENANT_ID: optional,
  /** "true": accept activities from any tenant (the bot is registered multi-tenant). */
  TEAMS_MULTI_TENANT: z
    .enum(['true', 'false', ''])
    .optional()
    .transform((v) => v === 'true'),
  TEAMS_SECRET_MAX_AGE_SECONDS: wholeFrom(0, 60),
  /** After a request's token fails verification, the secret is re-read at once, but at most this often. */
  TEAMS_SECRET_REREAD_SECONDS: wholeFrom(1, 10),
  /** Where the keys signing inbound activities are published (a local stand-in sets its own). */
  TEAMS_OPENID_METADATA_URL: z.string().url().default(BOT_FRAMEWORK_OPENID_METADATA_URL),
  /** The client-credentials endpoint for outbound tokens (unset: Microsoft's, for the tenant). */
  TEAMS_TOKEN_URL: z.string().url().optional(),
  /**
   * Where a conversation no verified activity has named yet may be reached (comma-separated origins;
   * unset: Microsoft's Bot Connector origins; the local cloud sets its Teams stand-in's).
   */
  TEAMS_CONNECTOR_ORIGINS: optional.transform((value, ctx) => {
    const listed = (value ?? '')
      .split(',')
      .map((v) => v.trim())
      .filter(Boolean);
    if (listed.length === 0) return BOT_CONNECTOR_ORIGINS;
    return listed.map((origin) => {
      const url = URL.canParse(origin) ? new URL(origin) : undefined;
      if (url?.protocol === 'https:' || url?.protocol === 'http:') return url.origin;
      ctx.addIssue({
        code: 'custom',
        message: `must list http(s) origins like https://smba.trafficmanager.net, not ${JSON.stringify(origin)}`,
      });
      return z.NEVER;
    });
  }),
};
export type TeamsEnv = z.output<z.ZodObject<typeof shape>>;

/** What a Teams channel thread's conversation id adds to the channel's id. */
const THREAD_SUFFIX = /;messageid=[^;]*$/;

const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);

/** The images Teams shows inline in a bot's message. */
const INLINE_IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif'];
/** An inline image travels base64-encoded inside the activity, whose size the Bot Connector limits. */
export const TEAMS_MAX_IMAGE_BYTES = 1024 * 1024;

export const teamsDescriptor = {
  name: 'teams',
  title: 'Teams',
  /**
   * `teams:<conversation id>:<serviceUrl>` (base64url each), and a channel thread's conversation id
   * is the channel's id plus `;messageid=<root post>`: its channel is the Teams channel id as Teams
   * shows it (`19:…@thread.tacv2`; a chat's own id for group and personal chats), so every thread of
   * a Teams channel shares the channel's scope (settings, memory, skills), as in Slack.
   */
  scopeOf(channelPart: string, rest: readonly string[]) {
    const conversationId = Buffer.from(channelPart, 'base64url').toString('utf8');
    return { channel: conversationId.replace(THREAD_SUFFIX, ''), thread: [channelPart, ...rest].join(':') };
  },
  /** A channel thread's root post: the post its conversation id names (a chat's messages are all one thread: never). */
  opensThread(thread: ThreadScope, messageId: string) {
    const conversationId = Buffer.from(thread.thread.split(':')[0] ?? '', 'base64url').toString('utf8');
    return conversationId.match(THREAD_SUFFIX)?.[0] === `;messageid=${messageId}`;
  },
  /** The tenant the activity comes from. */
  workspaceOf(raw: Readonly<Record<string, unknown>>) {
    const tenant =
      (raw.channelData as { tenant?: { id?: unknown } } | undefined)?.tenant?.id ??
      (raw.conversation as { tenantId?: unknown } | undefined)?.tenantId;
    return text(tenant);
  },
  /** A bot can show an image inline in Teams; any other file needs SharePoint or OneDrive, which this deployment does not use. */
  uploadProblem({ filename, mimeType, bytes }: { filename: string; mimeType?: string; bytes: number }): string | undefined {
    if (!mimeType || !INLINE_IMAGE_TYPES.includes(mimeType)) {
      return `${filename} cannot be delivered to Teams: a bot can post only PNG, JPEG or GIF images into a Teams conversation (inline). Put the content in your reply instead (text, a table or a code block), or make an image of it.`;
    }
    if (bytes > TEAMS_MAX_IMAGE_BYTES)
      return `${filename} is ${bytes} bytes; an image posted into Teams may be at most ${TEAMS_MAX_IMAGE_BYTES} bytes`;
    return undefined;
  },
  /** Teams offers a bot no history of its own: it is read through Microsoft Graph, with permissions an admin grants the bot's app registration. */
  historyProblem: (error: Error): string =>
    `search_channel cannot read this Teams conversation's history: that needs Microsoft Graph application permissions (ChannelMessage.Read.All for channels, Chat.Read.All for chats) granted to the bot's app registration by an admin. The read failed with: ${error.message}`,
  secret,
  env: {
    shape,
    secretArn: 'TEAMS_SECRET_ARN',
    instead: ['TEAMS_APP_ID', 'TEAMS_APP_PASSWORD'],
    credentials: (env: TeamsEnv) =>
      credentialSourceOf(
        {
          secretArn: env.TEAMS_SECRET_ARN,
          maxAgeSeconds: env.TEAMS_SECRET_MAX_AGE_SECONDS,
          rereadSeconds: env.TEAMS_SECRET_REREAD_SECONDS,
        },
        () =>
          env.TEAMS_APP_ID && env.TEAMS_APP_PASSWORD
            ? { appId: env.TEAMS_APP_ID, appPassword: env.TEAMS_APP_PASSWORD, tenantId: env.TEAMS_APP_TENANT_ID ?? '' }
            : undefined,
      ),
  },
  deployment: {
    webhook: {
      role: 'teamsWebhook',
      entry: 'functions/ingress/teams-webhook.ts',
      path: '/api/messages',
      description: 'Verifies Teams activities (Bot Framework tokens), acks fast, enqueues prompts and sets stop/steer flags',
      verification:
        "Teams cannot send API Gateway credentials; its Bot Framework JWT is checked by the Teams webhook function (signature against the Bot Framework's published keys, issuer, audience, expiry, serviceUrl, tenant) before any work.",
      urlOutput: { id: 'TeamsMessagingEndpoint', description: 'Messaging endpoint for the Azure Bot (Configuration > Messaging endpoint)' },
    },
    secretRotation:
      "The Teams app's client secret is issued and rotated in the Azure Bot's Entra app registration, not by a rotation Lambda; the operator stores the new value with put-secret-value.",
    environment: (settings: { readonly teamsMultiTenant: boolean }): Record<string, string> =>
      settings.teamsMultiTenant ? { TEAMS_MULTI_TENANT: 'true' } : {},
  },
} as const satisfies PlatformDescriptor;
