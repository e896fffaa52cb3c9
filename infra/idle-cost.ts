// What a deployment costs while nothing happens, estimated from its synthesized template: the
// resources billed by the hour or the month whether or not anyone uses the agent. Everything else
// (Lambda, Step Functions, SQS, DynamoDB on demand, S3 requests, Bedrock tokens, Fargate seconds,
// log ingestion) is billed per use and is zero while idle; docs/cost.md has the per-run arithmetic.
//
// us-east-1 list prices, without the free tier (which covers 10 alarm metrics and 3 dashboards per
// account, if nothing else of the account uses them):
//   interface VPC endpoint   $0.01 per hour per AZ      x 730 h = $7.30 a month per endpoint and AZ
//   NAT gateway              $0.045 per hour            x 730 h = $32.85 a month
//   public IPv4 address      $0.005 per hour (an EIP)   x 730 h = $3.65 a month
//   KMS customer managed key $1 a month
//   Secrets Manager secret   $0.40 a month
//   CloudWatch alarm         $0.10 a month per metric it reads (standard resolution)
//   CloudWatch dashboard     $3 a month
// A month is 730 hours (8,760 / 12), as AWS's calculator counts it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export const HOURS_PER_MONTH = 730;

export const IDLE_PRICES_USD = {
  interfaceEndpointPerAzHour: 0.01,
  natGatewayHour: 0.045,
  publicIpv4Hour: 0.005,
  kmsKeyMonth: 1,
  secretMonth: 0.4,
  alarmMetricMonth: 0.1,
  dashboardMonth: 3,
} as const;

export interface IdleCostItem {
  /** What is billed, e.g. "interface endpoint x AZ". */
  readonly what: string;
  readonly count: number;
  readonly monthlyUsd: number;
  /** How monthlyUsd is reached, e.g. "3 x $0.01/h x 730 h". */
  readonly arithmetic: string;
}

export interface IdleCostEstimate {
  readonly items: readonly IdleCostItem[];
  readonly monthlyUsd: number;
}

interface TemplateResource {
  readonly Type: string;
  readonly Properties?: Record<string, unknown>;
}

const cents = (usd: number) => Math.round(usd * 100) / 100;

function hourly(what: string, count: number, perHour: number): IdleCostItem {
  return {
    what,
    count,
    monthlyUsd: cents(count * perHour * HOURS_PER_MONTH),
    arithmetic: `${count} x $${perHour}/h x ${HOURS_PER_MONTH} h`,
  };
}

function monthly(what: string, count: number, perMonth: number): IdleCostItem {
  return { what, count, monthlyUsd: cents(count * perMonth), arithmetic: `${count} x $${perMonth.toFixed(2)}/month` };
}

/** The idle monthly cost of the resources of one synthesized template. */
export function estimateIdleCost(template: { Resources?: Record<string, TemplateResource> }): IdleCostEstimate {
  const resources = Object.values(template.Resources ?? {});
  const ofType = (type: string) => resources.filter((r) => r.Type === type);
  // An interface endpoint has a network interface, billed by the hour, in each subnet (one per AZ).
  const endpointAzs = ofType('AWS::EC2::VPCEndpoint')
    .filter((r) => r.Properties?.VpcEndpointType === 'Interface')
    .reduce((sum, r) => sum + (Array.isArray(r.Properties?.SubnetIds) ? r.Properties.SubnetIds.length : 1), 0);
  // An alarm on metric math reads each metric it names; a plain alarm reads one.
  const alarmMetrics = ofType('AWS::CloudWatch::Alarm').reduce((sum, r) => {
    const queries = r.Properties?.Metrics;
    return sum + (Array.isArray(queries) ? queries.filter((q: { MetricStat?: unknown }) => q.MetricStat).length : 1);
  }, 0);
  const items = [
    hourly('interface endpoint x AZ', endpointAzs, IDLE_PRICES_USD.interfaceEndpointPerAzHour),
    hourly('NAT gateway', ofType('AWS::EC2::NatGateway').length, IDLE_PRICES_USD.natGatewayHour),
    hourly('Elastic IP', ofType('AWS::EC2::EIP').length, IDLE_PRICES_USD.publicIpv4Hour),
    monthly('KMS key', ofType('AWS::KMS::Key').length, IDLE_PRICES_USD.kmsKeyMonth),
    monthly('secret', ofType('AWS::SecretsManager::Secret').length, IDLE_PRICES_USD.secretMonth),
    monthly('alarm metric', alarmMetrics, IDLE_PRICES_USD.alarmMetricMonth),
    monthly('dashboard', ofType('AWS::CloudWatch::Dashboard').length, IDLE_PRICES_USD.dashboardMonth),
  ].filter((item) => item.count > 0);
  return { items, monthlyUsd: cents(items.reduce((sum, item) => sum + item.monthlyUsd, 0)) };
}

/** One line for `cdk synth`. */
export function formatIdleCost(stackName: string, estimate: IdleCostEstimate): string {
  const parts = estimate.items.map((item) => `${item.what}: ${item.arithmetic} = $${item.monthlyUsd.toFixed(2)}`);
  return `${stackName}: estimated idle cost $${estimate.monthlyUsd.toFixed(2)}/month at us-east-1 list prices before the free tier (${parts.join('; ')}); use is billed on top (docs/cost.md)`;
}

/** Set by `npm run synth` (infra/synth.ts), which prints the idle cost after the template itself. */
export const IDLE_COST_AFTER_SYNTH = 'THREADWORK_IDLE_COST_AFTER_SYNTH';

/** The idle-cost line of each stack in a cloud assembly directory (cdk.out). */
export function idleCostLines(assemblyDir: string): string[] {
  const manifest = JSON.parse(readFileSync(join(assemblyDir, 'manifest.json'), 'utf8')) as {
    artifacts?: Record<string, { type: string; displayName?: string; properties?: { templateFile?: string; stackName?: string } }>;
  };
  return Object.entries(manifest.artifacts ?? {})
    .filter(([, artifact]) => artifact.type === 'aws:cloudformation:stack' && artifact.properties?.templateFile)
    .map(([id, artifact]) => {
      const template = JSON.parse(readFileSync(join(assemblyDir, artifact.properties!.templateFile!), 'utf8')) as Parameters<
        typeof estimateIdleCost
      >[0];
      return formatIdleCost(artifact.properties?.stackName ?? artifact.displayName ?? id, estimateIdleCost(template));
    });
}
