// Deployment settings, read from CDK context (cdk.json or `cdk deploy -c key=value`).
// Values given with -c arrive as strings, so numbers are parsed and checked here, once.
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { parseTriggers, type TriggerDeclaration } from '../shared/triggers/declaration.ts';
import type { Node } from 'constructs';
import { isImageReference, MAX_IMAGE_URI_LENGTH, parseEcrImage } from './image-uri.ts';
import { DEFAULT_MODEL_ID } from '../shared/defaults.ts';
import { PLATFORM_NAMES, type PlatformName } from '../shared/platforms/descriptors.ts';

export interface DeploymentSettings {
  /** Bedrock model id or inference profile id the agent calls by default. */
  readonly modelId: string;
  /** How long CloudWatch keeps every log group of the stack. */
  readonly logRetentionDays: RetentionDays;
  /** Upper bound of one agent run (one Step Functions execution). */
  readonly runTimeoutMinutes: number;
  /**
   * The sandbox's network: `isolated` (no route out of the VPC; VPC interface endpoints let Fargate
   * pull the image and write logs), `egress` (one NAT gateway; sandbox commands reach the internet)
   * or `public` (tasks in public subnets with a public address and no inbound access: the internet
   * without a NAT gateway or endpoints to pay for while idle).
   */
  readonly sandboxNetwork: SandboxNetworkMode;
  /** How many Availability Zones the sandbox VPC spans (each AZ adds interface endpoints to pay for). */
  readonly sandboxAzs: number;
  /**
   * The AZ IDs (e.g. use1-az1) the sandbox VPC spans, when the deployment names them; otherwise the
   * stack picks sandboxAzs zones at deploy time. When given, sandboxAzs is their count.
   */
  readonly sandboxAzIds?: readonly string[];
  /**
   * A prebuilt sandbox image to run instead of building containers/sandbox in CodeBuild at deploy.
   * In isolated mode it must be a private ECR image: the VPC has no route to any other registry.
   */
  readonly sandboxImageUri?: string;
  /** Fargate CPU units of one sandbox task (1024 = 1 vCPU). */
  readonly sandboxCpu: number;
  /** Memory of one sandbox task in MiB; must be a combination Fargate allows with sandboxCpu. */
  readonly sandboxMemoryMiB: number;
  /** A thread's sandbox task is stopped after this many minutes without a tool call. */
  readonly sandboxIdleMinutes: number;
  /** The chat platforms served: at least one (each gets its secret and webhook route). */
  readonly chatPlatforms: readonly PlatformName[];
  /** Accept Teams activities from any tenant (the Azure Bot is registered multi-tenant). */
  readonly teamsMultiTenant: boolean;
  /**
   * Bundle the AWS SDK version this project pins into each function instead of importing the
   * AWS SDK for JavaScript v3 that the Lambda runtime provides (and AWS keeps current).
   */
  readonly bundleAwsSdk: boolean;
  /** Declared triggers (`triggers` in cdk.json): AWS events and new objects that start agent runs. */
  readonly triggers: readonly TriggerDeclaration[];
  /** Where the alarm topic mails to (an email subscription, confirmed by its owner); none when absent. */
  readonly alarmEmail?: string;
  /** The daily cost alarm fires when the model and sandbox cost of one day exceeds this, in US dollars. */
  readonly dailyCostAlarmUsd: number;
}

/** Every platform this runtime knows (shared/platforms/descriptors.ts). */
export const CHAT_PLATFORMS = PLATFORM_NAMES;

export const SANDBOX_NETWORK_MODES = ['isolated', 'egress', 'public'] as const;
export type SandboxNetworkMode = (typeof SANDBOX_NETWORK_MODES)[number];

export const DEFAULT_SETTINGS: DeploymentSettings = {
  modelId: DEFAULT_MODEL_ID,
  logRetentionDays: RetentionDays.ONE_MONTH,
  runTimeoutMinutes: 60,
  sandboxNetwork: 'isolated',
  sandboxAzs: 1,
  sandboxCpu: 1024,
  sandboxMemoryMiB: 2048,
  sandboxIdleMinutes: 5,
  chatPlatforms: CHAT_PLATFORMS,
  teamsMultiTenant: false,
  bundleAwsSdk: false,
  triggers: [],
  dailyCostAlarmUsd: 25,
};

// CloudWatch Logs accepts only these retention periods (the RetentionDays enum's numeric values).
const ALLOWED_RETENTION_DAYS = new Set(Object.values(RetentionDays).filter((value): value is number => typeof value === 'number'));

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

export function readSettings(node: Node): DeploymentSettings {
  return {
    modelId: readModelId(node.tryGetContext('modelId')),
    logRetentionDays: readRetention(node.tryGetContext('logRetentionDays')),
    runTimeoutMinutes: readRunTimeout(node.tryGetContext('runTimeoutMinutes')),
    ...readSandboxSettings(node),
    chatPlatforms: readChatPlatforms(node.tryGetContext('chatPlatforms')),
    teamsMultiTenant: readBoolean(node.tryGetContext('teamsMultiTenant'), 'teamsMultiTenant', DEFAULT_SETTINGS.teamsMultiTenant),
    bundleAwsSdk: readBundleAwsSdk(node),
    triggers: parseTriggers(node.tryGetContext('triggers')),
    ...readAlarmSettings(node),
  };
}

// Deliberately loose: SNS checks the address itself, and its owner confirms the subscription.
const EMAIL = /^[^\s@,]+@[^\s@,]+\.[^\s@,]+$/;
const MAX_DAILY_COST_ALARM_USD = 1_000_000;

function readAlarmSettings(node: Node): Pick<DeploymentSettings, 'alarmEmail' | 'dailyCostAlarmUsd'> {
  const email: unknown = node.tryGetContext('alarmEmail');
  if (email !== undefined && (typeof email !== 'string' || !EMAIL.test(email))) {
    throw new Error(`context alarmEmail must be one email address, such as ops@example.com; got ${JSON.stringify(email)}`);
  }
  const rawCost: unknown = node.tryGetContext('dailyCostAlarmUsd');
  const cost =
    rawCost === undefined
      ? DEFAULT_SETTINGS.dailyCostAlarmUsd
      : typeof rawCost === 'number' || (typeof rawCost === 'string' && rawCost.trim() !== '')
        ? Number(rawCost)
        : NaN;
  if (!Number.isFinite(cost) || cost <= 0 || cost > MAX_DAILY_COST_ALARM_USD) {
    throw new Error(
      `context dailyCostAlarmUsd must be a number of US dollars above 0 and at most ${MAX_DAILY_COST_ALARM_USD}; got ${JSON.stringify(rawCost)}`,
    );
  }
  return { ...(email !== undefined && { alarmEmail: email }), dailyCostAlarmUsd: cost };
}

/** A list (cdk.json) or comma-separated (-c chatPlatforms=slack,teams) of at least one platform. */
function readChatPlatforms(raw: unknown): PlatformName[] {
  if (raw === undefined) return [...DEFAULT_SETTINGS.chatPlatforms];
  const names = typeof raw === 'string' ? raw.split(',').map((p) => p.trim()) : raw;
  const valid =
    Array.isArray(names) &&
    names.length >= 1 &&
    names.every((p) => CHAT_PLATFORMS.includes(p as PlatformName)) &&
    new Set(names).size === names.length;
  if (!valid) throw new Error(`context chatPlatforms must be one or more of ${CHAT_PLATFORMS.join(', ')}; got ${JSON.stringify(raw)}`);
  return names as PlatformName[];
}

function readBoolean(raw: unknown, key: string, fallback: boolean): boolean {
  if (raw === undefined) return fallback;
  if (raw === true || raw === 'true') return true;
  if (raw === false || raw === 'false') return false;
  throw new Error(`context ${key} must be true or false; got ${JSON.stringify(raw)}`);
}

/** The bundleAwsSdk setting alone: every function reads it where it is built (createAgentFunction). */
export function readBundleAwsSdk(node: Node): boolean {
  return readBoolean(node.tryGetContext('bundleAwsSdk'), 'bundleAwsSdk', DEFAULT_SETTINGS.bundleAwsSdk);
}

function readModelId(raw: unknown): string {
  if (raw === undefined) return DEFAULT_SETTINGS.modelId;
  if (typeof raw !== 'string' || !/^[\w.:-]+$/.test(raw)) {
    throw new Error(`context modelId must be a Bedrock model or inference profile id, got ${JSON.stringify(raw)}`);
  }
  return raw;
}

function readRetention(raw: unknown): RetentionDays {
  if (raw === undefined) return DEFAULT_SETTINGS.logRetentionDays;
  const days = Number(raw);
  if (!ALLOWED_RETENTION_DAYS.has(days)) {
    const allowed = [...ALLOWED_RETENTION_DAYS].sort((a, b) => a - b).join(', ');
    throw new Error(`context logRetentionDays must be one of ${allowed}; got ${JSON.stringify(raw)}`);
  }
  return days as RetentionDays;
}

function readRunTimeout(raw: unknown): number {
  if (raw === undefined) return DEFAULT_SETTINGS.runTimeoutMinutes;
  const minutes = Number(raw);
  if (!Number.isInteger(minutes) || minutes < 1 || minutes > MAX_RUN_TIMEOUT_MINUTES) {
    throw new Error(`context runTimeoutMinutes must be a whole number from 1 to ${MAX_RUN_TIMEOUT_MINUTES}; got ${JSON.stringify(raw)}`);
  }
  return minutes;
}

type SandboxSettings = Pick<
  DeploymentSettings,
  'sandboxNetwork' | 'sandboxAzs' | 'sandboxAzIds' | 'sandboxImageUri' | 'sandboxCpu' | 'sandboxMemoryMiB' | 'sandboxIdleMinutes'
>;

const MAX_SANDBOX_AZS = 3;

function readSandboxSettings(node: Node): SandboxSettings {
  const sandboxCpu = readWholeNumber(node, 'sandboxCpu', FARGATE_CPUS[0]!, FARGATE_CPUS.at(-1)!);
  const sandboxMemoryMiB = readWholeNumber(node, 'sandboxMemoryMiB', 512, 122880);
  checkFargateSize(sandboxCpu, sandboxMemoryMiB);
  const sandboxNetwork = readSandboxNetwork(node.tryGetContext('sandboxNetwork'));
  const sandboxAzIds = readAzIds(node.tryGetContext('sandboxAzIds'));
  const sandboxImageUri = readImageUri(node.tryGetContext('sandboxImageUri'), sandboxNetwork);
  return {
    sandboxNetwork,
    sandboxAzs: sandboxAzIds?.length ?? readWholeNumber(node, 'sandboxAzs', 1, MAX_SANDBOX_AZS),
    ...(sandboxAzIds && { sandboxAzIds }),
    ...(sandboxImageUri && { sandboxImageUri }),
    sandboxCpu,
    sandboxMemoryMiB,
    sandboxIdleMinutes: readWholeNumber(node, 'sandboxIdleMinutes', 1, 120),
  };
}

// An AZ ID: the Region's short code, "-az" and a number (use1-az1, apne1-az4, cnn1-az2).
const AZ_ID = /^[a-z]{2,}[0-9]+-az[0-9]+$/;

/** AZ IDs as a list (cdk.json) or comma-separated (-c sandboxAzIds=use1-az1,use1-az2). */
function readAzIds(raw: unknown): string[] | undefined {
  if (raw === undefined) return undefined;
  const ids = typeof raw === 'string' ? raw.split(',').map((id) => id.trim()) : raw;
  const valid =
    Array.isArray(ids) &&
    ids.length >= 1 &&
    ids.length <= MAX_SANDBOX_AZS &&
    ids.every((id) => typeof id === 'string' && AZ_ID.test(id)) &&
    new Set(ids).size === ids.length;
  if (!valid) {
    throw new Error(
      `context sandboxAzIds must be 1 to ${MAX_SANDBOX_AZS} different AZ IDs such as use1-az1 (aws ec2 describe-availability-zones shows them); got ${JSON.stringify(raw)}`,
    );
  }
  return ids as string[];
}

function readImageUri(raw: unknown, network: SandboxNetworkMode): string | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !isImageReference(raw)) {
    throw new Error(
      `context sandboxImageUri must be a container image reference of at most ${MAX_IMAGE_URI_LENGTH} characters, such as 123456789012.dkr.ecr.us-east-1.amazonaws.com/sandbox:v1; got ${JSON.stringify(raw)}`,
    );
  }
  if (network === 'isolated' && !parseEcrImage(raw)) {
    throw new Error(
      `context sandboxImageUri must be a private Amazon ECR image (<account>.dkr.ecr.<region>.amazonaws.com/<repository>:<tag>) when sandboxNetwork is isolated: isolated tasks reach no other registry; got ${JSON.stringify(raw)}`,
    );
  }
  return raw;
}

function readSandboxNetwork(raw: unknown): SandboxNetworkMode {
  if (raw === undefined) return DEFAULT_SETTINGS.sandboxNetwork;
  const mode = SANDBOX_NETWORK_MODES.find((m) => m === raw);
  if (!mode) {
    throw new Error(`context sandboxNetwork must be one of ${SANDBOX_NETWORK_MODES.join(', ')}; got ${JSON.stringify(raw)}`);
  }
  return mode;
}

type WholeNumberSetting = 'sandboxAzs' | 'sandboxCpu' | 'sandboxMemoryMiB' | 'sandboxIdleMinutes';

function readWholeNumber(node: Node, key: WholeNumberSetting, min: number, max: number): number {
  const raw: unknown = node.tryGetContext(key);
  if (raw === undefined) return DEFAULT_SETTINGS[key];
  const value = typeof raw === 'number' || (typeof raw === 'string' && raw.trim() !== '') ? Number(raw) : NaN;
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`context ${key} must be a whole number from ${min} to ${max}; got ${JSON.stringify(raw)}`);
  }
  return value;
}

function checkFargateSize(cpu: number, memoryMiB: number): void {
  const allowed = FARGATE_MEMORY_BY_CPU.get(cpu);
  if (!allowed) {
    throw new Error(`context sandboxCpu must be one of Fargate's CPU values ${FARGATE_CPUS.join(', ')}; got ${cpu}`);
  }
  if (!allowed.includes(memoryMiB)) {
    const [first, second] = allowed;
    const choices = allowed.length <= 3 ? allowed.join(', ') : `${first} to ${allowed.at(-1)} in steps of ${second! - first!}`;
    throw new Error(`context sandboxMemoryMiB ${memoryMiB} is not offered by Fargate with sandboxCpu ${cpu}; use ${choices}`);
  }
}
