// Slack as every function and the infra know it, without the Slack adapter: thread ids
// `slack:<channel>:<thread ts>`, whose workspace a payload comes from, the app's secret and
// variables, and its webhook in the stack. The chat wiring is shared/platforms/slack/platform.ts.
import * as z from 'zod';
import { optional, wholeFrom } from '../../support/env-vars.ts';
import { credentialSourceOf, plainScope, platformSecret, type PlatformDescriptor, type ThreadScope } from '../platform.ts';

export const BOT_TOKEN_PLACEHOLDER = 'xoxb-replace-me';

const secret = platformSecret({
  title: 'Slack',
  schema: z.object({ signingSecret: z.string().min(1), botToken: z.string().min(1) }),
  generated: 'signingSecret',
  placeholders: { botToken: BOT_TOKEN_PLACEHOLDER },
  example: { signingSecret: '...', botToken: 'xoxb-...' },
  docs: 'docs/deploy.md, "Connecting Slack"',
});
export type SlackCredentials = z.infer<typeof secret.schema>;

/** The Slack app: a Secrets Manager secret in AWS, or plain variables in the local cloud. */
const shape = {
  SLACK_SECRET_ARN: optional,
  SLACK_SIGNING_SECRET: optional,
  SLACK_BOT_TOKEN: optional,
  /** How long a read of the secret is reused: a rotated secret is picked up within this time. */
  SLACK_SECRET_MAX_AGE_SECONDS: wholeFrom(0, 60),
  /** After a request's signature fails, the secret is re-read at once, but at most this often. */
  SLACK_SECRET_REREAD_SECONDS: wholeFrom(1, 10),
  /** The Slack Web API's base URL (unset: slack.com; the local cloud sets its Slack stand-in's). */
  SLACK_API_URL: optional,
};
export type SlackEnv = z.output<z.ZodObject<typeof shape>>;

const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);

export const slackDescriptor = {
  name: 'slack',
  title: 'Slack',
  scopeOf: plainScope,
  /** A thread's id is its first message's ts, which is that message's id. */
  opensThread: (thread: ThreadScope, messageId: string) => thread.thread === messageId,
  /**
   * The author's own team for messages (in a channel shared between workspaces it differs from the
   * one the app is installed in), the clicker's for buttons, the invoking workspace for slash commands.
   */
  workspaceOf(raw: Readonly<Record<string, unknown>>) {
    const user = raw.user && typeof raw.user === 'object' ? (raw.user as { team_id?: unknown }).team_id : undefined;
    const team = raw.team && typeof raw.team === 'object' ? (raw.team as { id?: unknown }).id : raw.team;
    return text(user) ?? text(raw.user_team) ?? text(team) ?? text(raw.team_id);
  },
  /** Slack takes any file the upload limit allows, and a bot reads channel history itself. */
  uploadProblem: (): string | undefined => undefined,
  historyProblem: (): string | undefined => undefined,
  secret,
  env: {
    shape,
    secretArn: 'SLACK_SECRET_ARN',
    instead: ['SLACK_SIGNING_SECRET', 'SLACK_BOT_TOKEN'],
    credentials: (env: SlackEnv) =>
      credentialSourceOf(
        {
          secretArn: env.SLACK_SECRET_ARN,
          maxAgeSeconds: env.SLACK_SECRET_MAX_AGE_SECONDS,
          rereadSeconds: env.SLACK_SECRET_REREAD_SECONDS,
        },
        () =>
          env.SLACK_SIGNING_SECRET && env.SLACK_BOT_TOKEN
            ? { signingSecret: env.SLACK_SIGNING_SECRET, botToken: env.SLACK_BOT_TOKEN }
            : undefined,
      ),
  },
  deployment: {
    webhook: {
      role: 'webhook',
      entry: 'functions/ingress/webhook.ts',
      path: '/slack/events',
      description: 'Verifies Slack webhooks, acks fast, enqueues prompts and sets stop/steer flags',
      verification:
        'Slack cannot send API Gateway credentials; the webhook function verifies the Slack request signature (HMAC-SHA256 of timestamp and body with the signing secret) before any work, and /health returns no data.',
      urlOutput: { id: 'SlackEventsUrl', description: 'Request URL for the Slack app (Event Subscriptions and Interactivity)' },
    },
    secretRotation:
      'Slack signing secrets and bot tokens are issued and rotated in the Slack app settings, not by a rotation Lambda; the operator stores the new values with put-secret-value.',
  },
} as const satisfies PlatformDescriptor;
