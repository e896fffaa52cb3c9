// Deployment settings, read from CDK context (cdk.json or `cdk deploy -c key=value`): one zod schema
// with the defaults. Values given with -c arrive as strings, so numbers, booleans and lists are
// also taken as strings and parsed here, once. A bad value fails the synth naming the setting and
// what it got: `context sandboxAzs must be a whole number from 1 to 3; got "4"`.
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Node } from 'constructs';
import * as z from 'zod';
import { DEFAULT_MODEL_ID } from '../shared/defaults.ts';
import { parseTriggers, type TriggerDeclaration } from '../shared/triggers/declaration.ts';
import { isImageReference, MAX_IMAGE_URI_LENGTH, parseEcrImage } from './image-uri.ts';
import { PLATFORM_NAMES } from '../shared/platforms/descriptors.ts';
import { closest } from '../shared/support/closest.ts';
import { HOOK_FUNCTION_ARN } from '../shared/hooks/settings.ts';

/** Every platform this runtime knows (shared/platforms/descriptors.ts). */
export const CHAT_PLATFORMS = PLATFORM_NAMES;

export const SANDBOX_NETWORK_MODES = ['isolated', 'egress', 'public'] as const;
export type SandboxNetworkMode = (typeof SANDBOX_NETWORK_MODES)[number];

// CloudWatch Logs accepts only these retention periods (the RetentionDays enum's numeric values).
const ALLOWED_RETENTION_DAYS = Object.values(RetentionDays)
  .filter((value): value is number => typeof value === 'number')
  .sort((a, b) => a - b);

// A Standard workflow can run for at most one year.
const MAX_RUN_TIMEOUT_MINUTES = 365 * 24 * 60;

// Fargate's task sizes (Linux, x86 and ARM): the memory values in MiB each CPU value allows.
// https://docs.aws.amazon.com/AmazonECS/latest/developerguide/fargate-tasks-services.html#fargate-tasks-size
const steps = (min: number, max: number, step: number): number[] =>
  Array.from({ length: (max - min) / step + 1 }, (_, i) => min + i * step);
const FARGATE_MEMORY_BY_CPU: ReadonlyMap<number, readonly number[]> = new Map([
  [256, [512, 1024, 2048]],
  [512, steps(1024, 4096, 1024)],
  [1024, steps(2048, 8192, 1024)],
  [2048, steps(4096, 16384, 1024)],
  [4096, steps(8192, 30720, 1024)],
  [8192, steps(16384, 61440, 4096)],
  [16384, steps(32768, 122880, 8192)],
]);
const FARGATE_CPUS = [...FARGATE_MEMORY_BY_CPU.keys()];

const MAX_SANDBOX_AZS = 3;
// An AZ ID: the Region's short code, "-az" and a number (use1-az1, apne1-az4, cnn1-az2).
const AZ_ID = /^[a-z]{2,}[0-9]+-az[0-9]+$/;
// Deliberately loose: SNS checks the address itself, and its owner confirms the subscription.
const EMAIL = /^[^\s@,]+@[^\s@,]+\.[^\s@,]+$/;
const MAX_DAILY_COST_ALARM_USD = 1_000_000;

// What `-c key=value` gives as a string, as cdk.json would give it; anything else is left for the schema to refuse.
const cliNumber = (raw: unknown) => (typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : raw);
const cliBoolean = (raw: unknown) => (raw === 'true' ? true : raw === 'false' ? false : raw);
const cliList = (raw: unknown) => (typeof raw === 'string' ? raw.split(',').map((item) => item.trim()) : raw);

const wholeNumber = (min: number, max: number) =>
  z.preprocess(
    cliNumber,
    z
      .int({ error: `must be a whole number from ${min} to ${max}` })
      .min(min)
      .max(max),
  );
const flag = z.preprocess(cliBoolean, z.boolean({ error: 'must be true or false' }));
const AZ_IDS = `must be 1 to ${MAX_SANDBOX_AZS} different AZ IDs such as use1-az1 (aws ec2 describe-availability-zones shows them)`;
const PLATFORMS = `must be one or more of ${CHAT_PLATFORMS.join(', ')}`;
const REACH_SUBNETS = 'must be 1 to 16 different subnet ids such as subnet-0123456789abcdef0';
const HOOK_FUNCTIONS = 'must be up to 20 different Lambda function ARNs such as arn:aws:lambda:us-east-1:123456789012:function:org-policy';
const REACH_GROUPS = 'must be 1 to 5 different security group ids such as sg-0123456789abcdef0';
/** A list (cdk.json) or comma-separated (-c key=a,b) of distinct items, each also refused with `error`. */
const distinctList = <T extends z.ZodType<string>>(item: T, min: number, max: number, error: string) =>
  z.preprocess(
    cliList,
    z
      .array(item, { error })
      .min(min)
      .max(max)
      .refine((items) => new Set(items).size === items.length, { error })
      .readonly(),
  );

/** An issue whose message is the whole sentence (it names what it checked); others get `context KEY … ; got RAW`. */
const WHOLE = { whole: true };

const deploymentFields = {
  /** Bedrock model id or inference profile id the agent calls by default. */
  modelId: z
    .string({ error: 'must be a Bedrock model or inference profile id' })
    .regex(/^[\w.:-]+$/)
    .default(DEFAULT_MODEL_ID),
  /** How long CloudWatch keeps every log group of the stack. */
  logRetentionDays: z
    .preprocess(
      cliNumber,
      z.number({ error: `must be one of ${ALLOWED_RETENTION_DAYS.join(', ')}` }).refine((days) => ALLOWED_RETENTION_DAYS.includes(days)),
    )
    .transform((days) => days as RetentionDays)
    .default(RetentionDays.ONE_MONTH),
  /** Upper bound of one agent run (one Step Functions execution). */
  runTimeoutMinutes: wholeNumber(1, MAX_RUN_TIMEOUT_MINUTES).default(60),
  /**
   * The sandbox's network: `isolated` (no route out of the VPC; VPC interface endpoints let Fargate
   * pull the image and write logs), `egress` (one NAT gateway; sandbox commands reach the internet)
   * or `public` (tasks in public subnets with a public address and no inbound access: the internet
   * without a NAT gateway or endpoints to pay for while idle).
   */
  sandboxNetwork: z.enum(SANDBOX_NETWORK_MODES, { error: `must be one of ${SANDBOX_NETWORK_MODES.join(', ')}` }).default('isolated'),
  /** How many Availability Zones the sandbox VPC spans (each AZ adds interface endpoints to pay for). */
  sandboxAzs: wholeNumber(1, MAX_SANDBOX_AZS).default(1),
  /**
   * The AZ IDs (e.g. use1-az1) the sandbox VPC spans, when the deployment names them; otherwise the
   * stack picks sandboxAzs zones at deploy time. When given, sandboxAzs is their count.
   */
  sandboxAzIds: distinctList(z.string({ error: AZ_IDS }).regex(AZ_ID), 1, MAX_SANDBOX_AZS, AZ_IDS).optional(),
  /**
   * A prebuilt sandbox image to run instead of building containers/sandbox in CodeBuild at deploy.
   * In isolated mode it must be a private ECR image: the VPC has no route to any other registry.
   */
  sandboxImageUri: z
    .string({
      error: `must be a container image reference of at most ${MAX_IMAGE_URI_LENGTH} characters, such as 123456789012.dkr.ecr.us-east-1.amazonaws.com/sandbox:v1`,
    })
    .refine(isImageReference)
    .optional(),
  /** Fargate CPU units of one sandbox task (1024 = 1 vCPU). */
  sandboxCpu: wholeNumber(FARGATE_CPUS[0]!, FARGATE_CPUS.at(-1)!).default(1024),
  /** Memory of one sandbox task in MiB; must be a combination Fargate allows with sandboxCpu. */
  sandboxMemoryMiB: wholeNumber(512, 122880).default(2048),
  /** A thread's sandbox task is stopped after this many minutes without a tool call. */
  sandboxIdleMinutes: wholeNumber(1, 120).default(5),
  /** The chat platforms served: Slack, Teams or both (each gets its secret and webhook route). */
  chatPlatforms: distinctList(z.enum(CHAT_PLATFORMS, { error: PLATFORMS }), 1, CHAT_PLATFORMS.length, PLATFORMS).default([
    ...CHAT_PLATFORMS,
  ]),
  /** Accept Teams activities from any tenant (the Azure Bot is registered multi-tenant). */
  teamsMultiTenant: flag.default(false),
  /**
   * Bundle the AWS SDK version this project pins into each function instead of importing the
   * AWS SDK for JavaScript v3 that the Lambda runtime provides (and AWS keeps current).
   */
  bundleAwsSdk: flag.default(false),
  /** Declared triggers (`triggers` in cdk.json): AWS events and new objects that start agent runs (shared/triggers/declaration.ts). */
  triggers: z
    .unknown()
    .transform((raw, ctx): readonly TriggerDeclaration[] => {
      try {
        return parseTriggers(raw);
      } catch (error) {
        // Its message lists every problem, each naming the trigger and the field.
        ctx.addIssue({ code: 'custom', message: (error as Error).message, params: WHOLE });
        return z.NEVER;
      }
    })
    .default([]),
  /**
   * The reach step (web_fetch, MCP servers) in a VPC, to reach MCP servers on private addresses: the
   * VPC, subnets (with a route to the Internet, such as a NAT gateway, for public hosts) and security
   * groups, all three or none. Unset: the function runs outside any VPC and reaches public addresses only.
   */
  reachVpcId: z
    .string({ error: 'must be a VPC id such as vpc-0123456789abcdef0' })
    .regex(/^vpc-[0-9a-f]{8,17}$/)
    .optional(),
  reachSubnetIds: distinctList(z.string({ error: REACH_SUBNETS }).regex(/^subnet-[0-9a-f]{8,17}$/), 1, 16, REACH_SUBNETS).optional(),
  reachSecurityGroupIds: distinctList(z.string({ error: REACH_GROUPS }).regex(/^sg-[0-9a-f]{8,17}$/), 1, 5, REACH_GROUPS).optional(),
  /**
   * LOCAL TESTING ONLY: lets web_fetch and channel MCP servers reach loopback addresses (a test
   * server on 127.0.0.1). Off by default; settings.json cannot turn it on.
   */
  reachAllowLoopback: flag.default(false),
  /**
   * The operator's Lambda functions that settings.json `hooks` may invoke (by ARN): the agent-step
   * role may invoke these and no others. Empty: no lambda hook can run.
   */
  hookFunctions: distinctList(z.string({ error: HOOK_FUNCTIONS }).regex(HOOK_FUNCTION_ARN), 0, 20, HOOK_FUNCTIONS).default([]),
  /** Where the alarm topic mails to (an email subscription, confirmed by its owner); none when absent. */
  alarmEmail: z.string({ error: 'must be one email address, such as ops@example.com' }).regex(EMAIL).optional(),
  /** The daily cost alarm fires when the model and sandbox cost of one day exceeds this, in US dollars. */
  dailyCostAlarmUsd: z
    .preprocess(
      cliNumber,
      z
        .number({ error: `must be a number of US dollars above 0 and at most ${MAX_DAILY_COST_ALARM_USD}` })
        .positive()
        .max(MAX_DAILY_COST_ALARM_USD),
    )
    .default(25),
};

/** The sandbox settings that only make sense together: a Fargate size, an image the network can pull. */
function checkSandbox(s: z.output<z.ZodObject<typeof deploymentFields>>, ctx: z.RefinementCtx): void {
  const whole = (key: keyof typeof deploymentFields, message: string) =>
    ctx.addIssue({ code: 'custom', path: [key], message: `context ${key} ${message}`, params: WHOLE });
  const allowed = FARGATE_MEMORY_BY_CPU.get(s.sandboxCpu);
  if (!allowed) {
    whole('sandboxCpu', `must be one of Fargate's CPU values ${FARGATE_CPUS.join(', ')}; got ${s.sandboxCpu}`);
  } else if (!allowed.includes(s.sandboxMemoryMiB)) {
    const [first, second] = allowed;
    const choices = allowed.length <= 3 ? allowed.join(', ') : `${first} to ${allowed.at(-1)} in steps of ${second! - first!}`;
    whole('sandboxMemoryMiB', `${s.sandboxMemoryMiB} is not offered by Fargate with sandboxCpu ${s.sandboxCpu}; use ${choices}`);
  }
  if (s.sandboxImageUri !== undefined && s.sandboxNetwork === 'isolated' && !parseEcrImage(s.sandboxImageUri)) {
    whole(
      'sandboxImageUri',
      `must be a private Amazon ECR image (<account>.dkr.ecr.<region>.amazonaws.com/<repository>:<tag>) when sandboxNetwork is isolated: isolated tasks reach no other registry; got ${JSON.stringify(s.sandboxImageUri)}`,
    );
  }
}

/** The reach step's VPC is given whole or not at all. */
function checkReachVpc(s: z.output<z.ZodObject<typeof deploymentFields>>, ctx: z.RefinementCtx): void {
  const given = [s.reachVpcId, s.reachSubnetIds, s.reachSecurityGroupIds].filter((value) => value !== undefined).length;
  if (given === 0 || given === 3) return;
  ctx.addIssue({
    code: 'custom',
    path: ['reachVpcId'],
    message:
      'context reachVpcId, reachSubnetIds and reachSecurityGroupIds go together: set all three to put the reach step in a VPC, or none',
    params: WHOLE,
  });
}

export const deploymentSettingsSchema = z
  .object(deploymentFields)
  .superRefine(checkSandbox)
  .superRefine(checkReachVpc)
  .transform(({ sandboxAzIds, ...settings }) => ({
    ...settings,
    ...(sandboxAzIds && { sandboxAzIds, sandboxAzs: sandboxAzIds.length }),
  }));

export type DeploymentSettings = Readonly<z.output<typeof deploymentSettingsSchema>>;

export const DEFAULT_SETTINGS: DeploymentSettings = deploymentSettingsSchema.parse({});

/** A context key or value the app refuses: its message is one line, for `cdk synth` to show as it is. */
export class ContextError extends Error {}

/** The context keys that are this app's: the deployment settings and the stack's name (infra/app.ts). */
export const CONTEXT_KEYS: readonly string[] = [...Object.keys(deploymentFields), 'stackName'];

/**
 * CDK's own context is never a plain word: feature flags (`@aws-cdk/...`), what the CLI passes
 * (`aws:cdk:...`), lookups cached in cdk.context.json (`availability-zones:account=...`),
 * `acknowledged-issue-numbers`. A plain word is a setting, so one this app does not know is a typo.
 */
const isSettingName = (key: string) => /^[A-Za-z][A-Za-z0-9]*$/.test(key);

/** Refuses a context key that looks like a setting but is none, with the nearest one it may mean. */
export function checkContextKeys(context: Record<string, unknown>): void {
  const unknown = Object.keys(context).filter((key) => isSettingName(key) && !CONTEXT_KEYS.includes(key));
  if (unknown.length === 0) return;
  const named = unknown.map((key) => {
    const guess = closest(key, CONTEXT_KEYS);
    return guess ? `${key} (did you mean ${guess}?)` : key;
  });
  const plural = unknown.length > 1;
  throw new ContextError(
    `unknown context key${plural ? 's' : ''} ${named.join(', ')}: ${plural ? 'they are' : 'it is'} not a setting of this app (the settings: ${CONTEXT_KEYS.join(', ')})`,
  );
}

/** The context values of `keys` that are set (an unset one takes its default). */
function contextOf(node: Node, keys: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(keys.flatMap((key) => (node.tryGetContext(key) === undefined ? [] : [[key, node.tryGetContext(key)]])));
}

/** The value, or an error naming the first setting that is wrong and what it was given. */
function parseContext<S extends z.ZodType>(schema: S, context: Record<string, unknown>): z.output<S> {
  const parsed = schema.safeParse(context);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  // One line, whatever the check wrote (the triggers' problems come one per line).
  const oneLine = (message: string) => message.replace(/:\n\s*/g, ': ').replace(/\n\s*/g, '; ');
  if (issue.code === 'custom' && issue.params?.whole) throw new ContextError(oneLine(issue.message));
  const key = String(issue.path[0]);
  throw new ContextError(oneLine(`context ${key} ${issue.message}; got ${JSON.stringify(context[key])}`));
}

/** The deployment settings from the context; an unknown key or a bad value is a ContextError. */
export function readSettings(node: Node): DeploymentSettings {
  checkContextKeys(node.getAllContext() as Record<string, unknown>);
  return parseContext(deploymentSettingsSchema, contextOf(node, Object.keys(deploymentFields)));
}

/** The bundleAwsSdk setting alone: every function reads it where it is built (createAgentFunction). */
export function readBundleAwsSdk(node: Node): boolean {
  return parseContext(z.object({ bundleAwsSdk: deploymentFields.bundleAwsSdk }), contextOf(node, ['bundleAwsSdk'])).bundleAwsSdk;
}
