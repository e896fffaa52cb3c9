// Deployment settings, read from CDK context (cdk.json or `cdk deploy -c key=value`).
// Values given with -c arrive as strings, so numbers are parsed and checked here, once.
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Node } from 'constructs';

export interface DeploymentSettings {
  /** Bedrock model id or inference profile id the agent calls by default. */
  readonly modelId: string;
  /** How long CloudWatch keeps every log group of the stack. */
  readonly logRetentionDays: RetentionDays;
  /** Upper bound of one agent run (one Step Functions execution). */
  readonly runTimeoutMinutes: number;
}

export const DEFAULT_SETTINGS: DeploymentSettings = {
  modelId: 'global.anthropic.claude-sonnet-4-5-20250929-v1:0',
  logRetentionDays: RetentionDays.ONE_MONTH,
  runTimeoutMinutes: 60,
};

// CloudWatch Logs accepts only these retention periods (the RetentionDays enum's numeric values).
const ALLOWED_RETENTION_DAYS = new Set(
  Object.values(RetentionDays).filter((value): value is number => typeof value === 'number'),
);

// A Standard workflow can run for at most one year.
const MAX_RUN_TIMEOUT_MINUTES = 365 * 24 * 60;

export function readSettings(node: Node): DeploymentSettings {
  return {
    modelId: readModelId(node.tryGetContext('modelId')),
    logRetentionDays: readRetention(node.tryGetContext('logRetentionDays')),
    runTimeoutMinutes: readRunTimeout(node.tryGetContext('runTimeoutMinutes')),
  };
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
    throw new Error(
      `context runTimeoutMinutes must be a whole number from 1 to ${MAX_RUN_TIMEOUT_MINUTES}; got ${JSON.stringify(raw)}`,
    );
  }
  return minutes;
}
