// The metrics the functions publish (shared/observability/metric-names.ts), as CloudWatch metrics of this stack:
// namespace = the stack's name. Without dimensions: the deployment's total, which every function
// publishes beside the per-dimension values.
import { type Duration, Stack } from 'aws-cdk-lib';
import { Metric } from 'aws-cdk-lib/aws-cloudwatch';
import type { IConstruct } from 'constructs';
import type { MetricName } from '../../shared/observability/metric-names.ts';

export interface RuntimeMetricOptions {
  readonly statistic: string;
  readonly period: Duration;
  readonly label?: string;
}

export function runtimeMetric(scope: IConstruct, name: MetricName, options: RuntimeMetricOptions): Metric {
  return new Metric({ namespace: Stack.of(scope).stackName, metricName: name, ...options });
}
