// Each handler's environment as one zod schema, read once when the handler initialises. A missing or
// invalid variable is an error that names it (and every other one wrong), not a default in disguise.
import * as z from 'zod';
import { DEFAULT_MODEL_ID } from './defaults.ts';
import { parseOrThrow } from './support/validation.ts';
import { BOT_CONNECTOR_ORIGINS, BOT_FRAMEWORK_OPENID_METADATA_URL } from './platforms/teams/endpoints.ts';

const required = z.string({ error: 'is not set' }).min(1, 'is empty');
const optional = z.string().optional();

/** A number `ok` accepts; `fallback` when unset (or empty). */
function numberVar<F extends number | undefined>(ok: (n: number) => boolean, expected: string, fallback: F) {
  return z
    .string()
    .optional()
    .transform((raw, ctx): number | F => {
      if (raw === undefined || raw.trim() === '') return fallback;
      const value = Number(raw);
      if (ok(value)) return value;
      ctx.addIssue({ code: 'custom', message: `must be ${expected}, not ${JSON.stringify(raw)}` });
      return z.NEVER;
    });
}
const wholeFrom = <F extends number | undefined>(min: number, fallback: F) =>
  numberVar((n) => Number.isInteger(n) && n >= min, `a whole number from ${min}`, fallback);
const positive = <F extends number | undefined>(fallback: F) =>
  numberVar((n) => Number.isFinite(n) && n > 0, 'a positive number', fallback);
const nonNegative = <F extends number | undefined>(fallback: F) =>
  numberVar((n) => Number.isFinite(n) && n >= 0, 'a number from 0', fallback);

/** Comma-separated ids (subnets, security groups). */
const list = optional.transform((value) =>
  (value ?? '')
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean),
);

const table = { TABLE_NAME: required };
const bucket = { DATA_BUCKET: required };
const stateMachine = { STATE_MACHINE_ARN: required };
const inbox = { INBOX_QUEUE_URL: required };

/** The Slack app: a Secrets Manager secret in AWS, or plain variables in the local cloud. */
const slack = {
  SLACK_SECRET_ARN: optional,
  SLACK_SIGNING_SECRET: optional,
  SLACK_BOT_TOKEN: optional,
  /** How long a read of the secret is reused: a rotated secret is picked up within this time. */
  SLACK_SECRET_MAX_AGE_SECONDS: wholeFrom(0, 60),
  /** After a request's signature fails, the secret is re-read at once, but at most this often. */
  SLACK_SECRET_REREAD_SECONDS: wholeFrom(1, 10),
  BOT_USER_NAME: optional,
  /** How often a post-and-edit streamed reply is edited (Slack rate-limits chat.update). */
  STREAM_UPDATE_INTERVAL_MS: wholeFrom(250, 1000),
};

/** The Teams app: a Secrets Manager secret in AWS, or plain variables in the local cloud. */
const teams = {
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

type PlatformVariables = Partial<Record<'SLACK_SECRET_ARN' | 'SLACK_SIGNING_SECRET' | 'SLACK_BOT_TOKEN', string>> &
  Partial<Record<'TEAMS_SECRET_ARN' | 'TEAMS_APP_ID' | 'TEAMS_APP_PASSWORD', string>>;

export const slackConfigured = (env: PlatformVariables) =>
  Boolean(env.SLACK_SECRET_ARN || (env.SLACK_SIGNING_SECRET && env.SLACK_BOT_TOKEN));
export const teamsConfigured = (env: PlatformVariables) => Boolean(env.TEAMS_SECRET_ARN || (env.TEAMS_APP_ID && env.TEAMS_APP_PASSWORD));

/** A deployment serves Slack, Teams or both, never neither. */
function chatSource(env: PlatformVariables, ctx: z.RefinementCtx) {
  if (slackConfigured(env) || teamsConfigured(env)) return;
  ctx.addIssue({
    code: 'custom',
    path: ['SLACK_SECRET_ARN'],
    message: 'is not set, nor are SLACK_SIGNING_SECRET and SLACK_BOT_TOKEN, nor TEAMS_SECRET_ARN or TEAMS_APP_ID and TEAMS_APP_PASSWORD',
  });
}

/** Where the agent's sandboxes run; without SANDBOX_CLUSTER_ARN there are none. */
const sandboxLaunch = {
  SANDBOX_CLUSTER_ARN: optional,
  /** RunTask's taskDefinition: the family alone, so ECS runs its latest ACTIVE revision (see sandbox-task.ts). */
  SANDBOX_TASK_DEFINITION_FAMILY: z.string().default(''),
  SANDBOX_CONTAINER_NAME: z.string().default('sandbox'),
  SANDBOX_SUBNET_IDS: list,
  SANDBOX_SECURITY_GROUP_IDS: list,
  SANDBOX_IDLE_MINUTES: positive(5),
  /** The task size (CPU units, MiB): what a run's sandbox time costs. */
  SANDBOX_CPU: positive(1024),
  SANDBOX_MEMORY_MIB: positive(2048),
  /** ENABLED in the public sandbox network: the task's public address is its way out. */
  SANDBOX_ASSIGN_PUBLIC_IP: z.enum(['ENABLED', 'DISABLED']).default('DISABLED'),
};
const sandboxPort = { SANDBOX_PORT: wholeFrom(1, 8080) };
/** settings.json is re-read at most this often (shared/settings/source.ts): queue limits, access, budgets, the secret patterns of posts; a run's prepare reads it as it is. */
const settingsCache = { SETTINGS_CACHE_SECONDS: nonNegative(60) };
/** Steps per execution before a run continues in a fresh one (unset: the agent's default). */
const handoff = { HANDOFF_AFTER_STEPS: wholeFrom(2, undefined) };

/** The Slack webhook (and the health check); settings.json for `/usage`. */
export const webhookEnv = z
  .object({ ...table, ...bucket, ...stateMachine, ...inbox, ...slack, ...teams, ...settingsCache })
  .superRefine((env, ctx) => {
    if (!slackConfigured(env))
      ctx.addIssue({ code: 'custom', path: ['SLACK_SECRET_ARN'], message: 'is not set, nor are SLACK_SIGNING_SECRET and SLACK_BOT_TOKEN' });
  });

/** The Teams webhook. */
export const teamsWebhookEnv = z.object({ ...table, ...stateMachine, ...inbox, ...slack, ...teams }).superRefine((env, ctx) => {
  if (!teamsConfigured(env))
    ctx.addIssue({ code: 'custom', path: ['TEAMS_SECRET_ARN'], message: 'is not set, nor are TEAMS_APP_ID and TEAMS_APP_PASSWORD' });
});

export const dispatchEnv = z
  .object({
    ...table,
    ...stateMachine,
    ...bucket,
    ...slack,
    ...teams,
    ...settingsCache,
  })
  .superRefine(chatSource);

/** agent-step and run-ended. */
export const agentEnv = z
  .object({
    ...table,
    ...stateMachine,
    ...bucket,
    ...slack,
    ...teams,
    BEDROCK_MODEL_ID: optional.transform((id) => id || DEFAULT_MODEL_ID),
    /** The throttling retry (unset: shared/model/converse.ts's defaults). */
    BEDROCK_RETRY_ATTEMPTS: wholeFrom(1, undefined),
    BEDROCK_RETRY_BASE_MS: nonNegative(undefined),
    ...handoff,
    ...sandboxLaunch,
    ...sandboxPort,
    ...settingsCache,
  })
  .superRefine(chatSource);

/** How sandbox tasks start, as the agent-step function's environment says (read by `npm run doctor`). */
export const sandboxLaunchEnv = z.object({ ...sandboxLaunch, ...sandboxPort });

export const sandboxStepEnv = z.object({ ...table, ...bucket, ...sandboxPort, ...handoff });

export const sandboxReaperEnv = z.object({ ...table, ...sandboxLaunch, ...sandboxPort, SANDBOX_CLUSTER_ARN: required });

export const schedulerEnv = z
  .object({
    ...table,
    ...bucket,
    ...inbox,
    ...slack,
    ...teams,
    SCHEDULE_GROUP_NAME: required,
    /** The role EventBridge Scheduler assumes, the function it invokes, and where failed firings go. */
    SCHEDULER_ROLE_ARN: required,
    SCHEDULER_TARGET_ARN: required,
    SCHEDULE_DLQ_ARN: required,
    ...settingsCache,
  })
  .superRefine(chatSource);

/** What the Chat SDK instance is built from. */
export type ChatEnv = z.output<z.ZodObject<typeof slack & typeof teams>> & { TABLE_NAME: string };
export type AgentEnv = z.output<typeof agentEnv>;
export type SandboxLaunchEnv = Pick<z.output<typeof agentEnv>, keyof typeof sandboxLaunch | 'SANDBOX_PORT'>;

/** The handler's configuration, or an error naming every missing or invalid variable. */
export function readEnv<S extends z.ZodType>(schema: S, env: Record<string, string | undefined> = process.env): z.output<S> {
  return parseOrThrow(schema, env, 'Invalid environment', 'InvalidEnvironment');
}

/** The variables a schema cannot do without (neither optional nor defaulted). */
type RequiredOf<T> = { [K in keyof T]-?: undefined extends T[K] ? never : K }[keyof T];

/** A function's environment as its construct sets it: strings (often deploy-time tokens), keyed as its handler's schema reads them. */
export type EnvironmentFor<S extends z.ZodType> = { readonly [K in RequiredOf<z.input<S>>]: string } & {
  readonly [K in keyof z.input<S>]?: string;
};

/** No variable besides the schema's. */
type Exact<E, S extends z.ZodType> = { readonly [K in Exclude<keyof E, keyof z.input<S>>]: never };

declare const checkedEnvironment: unique symbol;
/** An environment that went through `handlerEnvironment`: the only kind a function construct takes. */
export type HandlerEnvironment = Readonly<Record<string, string>> & { readonly [checkedEnvironment]: true };

/**
 * The environment a construct gives a function, checked by the typecheck against the schema the
 * function's handler reads: every required variable is set, and no variable is set that the handler
 * does not read. A variable renamed on one side only fails `tsc`, not the function's first cold start.
 * (What is spread in must be typed too: TypeScript drops a `Record<string, string>`'s keys in a spread.)
 */
export function handlerEnvironment<S extends z.ZodType, const E extends EnvironmentFor<S>>(
  _handlerEnv: S,
  environment: E & Exact<E, S>,
): HandlerEnvironment {
  return environment as unknown as HandlerEnvironment;
}
