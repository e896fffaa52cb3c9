// Each handler's environment as one zod schema, read once when the handler initialises. A missing or
// invalid variable is an error that names it (and every other one wrong), not a default in disguise.
import * as z from 'zod';
import { DEFAULT_MODEL_ID, DEFAULT_PROMPT_FILES_CACHE_SECONDS, DEFAULT_SETTINGS_CACHE_SECONDS } from './defaults.ts';
import { parseOrThrow } from './support/validation.ts';
import { list, nonNegative, optional, positive, required, wholeFrom } from './support/env-vars.ts';
import { PLATFORM_DESCRIPTORS, platformEnvShape, servedPlatforms, type PlatformEnvShape } from './platforms/descriptors.ts';
import type { PlatformDescriptor } from './platforms/platform.ts';
import { slackDescriptor } from './platforms/slack/descriptor.ts';
import { teamsDescriptor } from './platforms/teams/descriptor.ts';

const table = { TABLE_NAME: required };
const bucket = { DATA_BUCKET: required };
const stateMachine = { STATE_MACHINE_ARN: required };
const inbox = { INBOX_QUEUE_URL: required };

/** What every chat function's Chat SDK instance takes, whichever platforms it serves. */
const chat = {
  BOT_USER_NAME: optional,
  /** How often a post-and-edit streamed reply is edited (Slack rate-limits chat.update). */
  STREAM_UPDATE_INTERVAL_MS: wholeFrom(250, 1000),
};
/** The chat platforms' own variables (each platform's descriptor: shared/platforms/<name>/descriptor.ts). */
const platforms = { ...chat, ...platformEnvShape };

const missing = (platform: PlatformDescriptor) => `${platform.env.secretArn} or ${platform.env.instead.join(' and ')}`;

/** A function that serves `platform` (its webhook) has its secret, or the variables standing in for it. */
const serving = (platform: PlatformDescriptor) => (env: Record<string, unknown>, ctx: z.RefinementCtx) => {
  if (servedPlatforms(env).includes(platform)) return;
  ctx.addIssue({ code: 'custom', path: [platform.env.secretArn], message: `is not set, nor are ${platform.env.instead.join(' and ')}` });
};

/** A deployment serves at least one platform, never none. */
function chatSource(env: Record<string, unknown>, ctx: z.RefinementCtx) {
  if (servedPlatforms(env).length > 0) return;
  const [first, ...others] = PLATFORM_DESCRIPTORS as readonly PlatformDescriptor[];
  ctx.addIssue({
    code: 'custom',
    path: [first!.env.secretArn],
    message: `is not set, nor are ${first!.env.instead.join(' and ')}${others.map((platform) => `, nor ${missing(platform)}`).join('')}`,
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
const settingsCache = { SETTINGS_CACHE_SECONDS: nonNegative(DEFAULT_SETTINGS_CACHE_SECONDS) };
/** A warm agent-step keeps the shared prompt files (memory, skills, identity) at most this long (shared/context/prompt-files.ts). */
const promptFilesCache = { PROMPT_FILES_CACHE_SECONDS: nonNegative(DEFAULT_PROMPT_FILES_CACHE_SECONDS) };
/** Steps per execution before a run continues in a fresh one (unset: the agent's default). */
const handoff = { HANDOFF_AFTER_STEPS: wholeFrom(2, undefined) };

/** A platform's webhook: the Chat SDK state, the inbox and stop, with that platform's credentials. */
const platformWebhookEnv = <S extends z.ZodRawShape>(platform: PlatformDescriptor, extra: S) =>
  z.object({ ...table, ...stateMachine, ...inbox, ...platforms, ...extra }).superRefine(serving(platform));

/** The Slack webhook (and the health check); `/usage` reads settings.json. */
export const webhookEnv = platformWebhookEnv(slackDescriptor, { ...bucket, ...settingsCache });

/** The Teams webhook. */
export const teamsWebhookEnv = platformWebhookEnv(teamsDescriptor, {});

export const dispatchEnv = z
  .object({
    ...table,
    ...stateMachine,
    ...bucket,
    ...platforms,
    ...settingsCache,
  })
  .superRefine(chatSource);

/** The stack's key for people's OAuth tokens to MCP servers (shared/reach/oauth/). */
const oauthTokens = { OAUTH_KEY_ARN: required };

/** agent-step and run-ended. */
export const agentEnv = z
  .object({
    ...table,
    ...stateMachine,
    ...bucket,
    ...platforms,
    BEDROCK_MODEL_ID: optional.transform((id) => id || DEFAULT_MODEL_ID),
    /** The throttling retry (unset: shared/model/converse.ts's defaults). */
    BEDROCK_RETRY_ATTEMPTS: wholeFrom(1, undefined),
    BEDROCK_RETRY_BASE_MS: nonNegative(undefined),
    ...handoff,
    ...sandboxLaunch,
    ...sandboxPort,
    ...settingsCache,
    ...promptFilesCache,
    /** The stack API's GET /oauth/start, where a person's Connect link goes (agent-step; unset in run-ended). */
    OAUTH_START_URL: optional,
    /** cdk.json context `hookFunctions`, comma-separated: the only functions a lambda hook may name (unset: none). */
    HOOK_FUNCTIONS: optional,
  })
  .superRefine(chatSource);

/** How sandbox tasks start, as the agent-step function's environment says (read by `npm run doctor`). */
export const sandboxLaunchEnv = z.object({ ...sandboxLaunch, ...sandboxPort });

export const sandboxStepEnv = z.object({ ...table, ...bucket, ...sandboxPort, ...handoff });

/** The reach step: web_fetch and MCP calls (functions/agent-step/reach-step.ts). */
export const reachStepEnv = z.object({
  ...table,
  ...bucket,
  ...handoff,
  /** `<stack>/mcp/`: a header's `${secret:NAME}` is the secret named this followed by NAME. */
  MCP_SECRET_PREFIX: required,
  /** Loopback targets allowed: for local testing only (cdk context reachAllowLoopback; never settings.json). */
  REACH_ALLOW_LOOPBACK: z.enum(['true', 'false']).default('false'),
  /** The sandboxNetwork deployment setting: stdio MCP servers (run in the sandbox) need egress or public. */
  SANDBOX_NETWORK: z.enum(['isolated', 'egress', 'public']).default('isolated'),
  ...oauthTokens,
});

/** The OAuth redirect function (GET /oauth/start and /oauth/callback). */
export const mcpOAuthEnv = z.object({ ...table, ...oauthTokens, MCP_SECRET_PREFIX: required });

export const sandboxReaperEnv = z.object({ ...table, ...sandboxLaunch, ...sandboxPort, SANDBOX_CLUSTER_ARN: required });

export const schedulerEnv = z
  .object({
    ...table,
    ...bucket,
    ...inbox,
    ...platforms,
    SCHEDULE_GROUP_NAME: required,
    /** The role EventBridge Scheduler assumes, the function it invokes, and where failed firings go. */
    SCHEDULER_ROLE_ARN: required,
    SCHEDULER_TARGET_ARN: required,
    SCHEDULE_DLQ_ARN: required,
    ...settingsCache,
  })
  .superRefine(chatSource);

/** What the Chat SDK instance is built from. */
export type ChatEnv = z.output<z.ZodObject<typeof chat & PlatformEnvShape>> & { TABLE_NAME: string };
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
