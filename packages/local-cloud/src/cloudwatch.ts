// A CloudWatch stand-in for what `npm run doctor` reads: the stack's alarms (DescribeAlarms;
// SetAlarmState, the API AWS offers to try an alarm's actions, changes one) and the functions'
// Lambda metrics (GetMetricData of AWS/Lambda Invocations and Errors per FunctionName, counted from
// the local Lambda's invocations). The local cloud does not evaluate alarms: each is OK until its
// state is set. The runtime's own metrics are served apart (metrics.ts). Like the other stand-ins
// the operator's tools call (sts.ts, cloudformation.ts), it answers the operator.
import { ApiError, epochSeconds, offsetPage, serveAwsJson } from './aws-protocol.ts';
import { listenLocally, type LocalHttpServer } from './http-server.ts';
import type { Invocation } from './lambda/runtime.ts';
import { localArn, localPhysicalName, resolveCloudFormation } from './resources.ts';
import { resourcesOfType, type Template } from './cloud/resources.ts';

const STATES = new Set(['OK', 'ALARM', 'INSUFFICIENT_DATA']);
const LAMBDA_METRICS = new Set(['Invocations', 'Errors']);

interface AlarmState {
  value: string;
  reason: string;
  updatedAt: Date;
}

export interface CloudWatchInputs {
  template: () => Template;
  invocations: () => readonly Invocation[];
}

/** One GetMetricData query, as far as the local CloudWatch reads it. */
interface MetricDataQuery {
  Id?: string;
  MetricStat?: {
    Metric?: { Namespace?: string; MetricName?: string; Dimensions?: { Name: string; Value: string }[] };
    Period?: number;
    Stat?: string;
  };
}

const strings = (value: unknown) => (Array.isArray(value) ? value.map(String) : []);

export async function startLocalCloudWatch(inputs: CloudWatchInputs): Promise<LocalHttpServer> {
  const states = new Map<string, AlarmState>();
  const startedAt = new Date();
  const alarms = () => {
    const template = inputs.template();
    const resolve = (value: unknown) => resolveCloudFormation(template, value);
    return resourcesOfType(template, 'AWS::CloudWatch::Alarm').map(([id, resource]) => {
      const p = resource.Properties ?? {};
      const name = localPhysicalName(template, id);
      const state = states.get(name) ?? { value: 'OK', reason: 'The local cloud does not evaluate alarms', updatedAt: startedAt };
      return {
        AlarmName: name,
        AlarmArn: localArn('cloudwatch', `alarm:${name}`),
        AlarmDescription: p.AlarmDescription === undefined ? undefined : String(resolve(p.AlarmDescription)),
        ActionsEnabled: p.ActionsEnabled ?? true,
        OKActions: strings(resolve(p.OKActions ?? [])),
        AlarmActions: strings(resolve(p.AlarmActions ?? [])),
        InsufficientDataActions: strings(resolve(p.InsufficientDataActions ?? [])),
        StateValue: state.value,
        StateReason: state.reason,
        StateUpdatedTimestamp: epochSeconds(state.updatedAt),
        Threshold: p.Threshold,
        ComparisonOperator: p.ComparisonOperator,
        EvaluationPeriods: p.EvaluationPeriods,
      };
    });
  };

  const operations = {
    DescribeAlarms(input: Record<string, unknown>) {
      const names = strings(input.AlarmNames);
      const prefix = typeof input.AlarmNamePrefix === 'string' ? input.AlarmNamePrefix : undefined;
      const action = typeof input.ActionPrefix === 'string' ? input.ActionPrefix : undefined;
      if (input.StateValue !== undefined && !STATES.has(String(input.StateValue))) {
        throw new ApiError('InvalidParameterValue', `StateValue must be one of ${[...STATES].join(', ')}`);
      }
      const matching = alarms().filter(
        (a) =>
          (names.length === 0 || names.includes(a.AlarmName)) &&
          (prefix === undefined || a.AlarmName.startsWith(prefix)) &&
          (action === undefined ||
            [...a.AlarmActions, ...a.OKActions, ...a.InsufficientDataActions].some((arn) => arn.startsWith(action))) &&
          (input.StateValue === undefined || a.StateValue === input.StateValue),
      );
      const max = input.MaxRecords === undefined ? 50 : Number(input.MaxRecords);
      const { page, nextToken } = offsetPage(
        matching,
        max,
        input.NextToken,
        () => new ApiError('InvalidNextToken', 'The next token is invalid.'),
      );
      return { MetricAlarms: page, CompositeAlarms: [], ...(nextToken ? { NextToken: nextToken } : {}) };
    },
    SetAlarmState(input: Record<string, unknown>) {
      const name = String(input.AlarmName ?? '');
      if (!alarms().some((a) => a.AlarmName === name)) throw new ApiError('ResourceNotFound', `Alarm ${name} does not exist.`, 404);
      if (!STATES.has(String(input.StateValue))) throw new ApiError('InvalidParameterValue', 'StateValue is invalid.');
      if (typeof input.StateReason !== 'string') throw new ApiError('InvalidParameterValue', 'StateReason is required.');
      states.set(name, { value: String(input.StateValue), reason: input.StateReason, updatedAt: new Date() });
      return {};
    },
    GetMetricData(input: Record<string, unknown>) {
      const start = Number(input.StartTime) * 1000;
      const end = Number(input.EndTime) * 1000;
      const queries = Array.isArray(input.MetricDataQueries) ? (input.MetricDataQueries as MetricDataQuery[]) : [];
      return {
        MetricDataResults: queries.map((query) => {
          const stat = query.MetricStat;
          const metric = stat?.Metric;
          const functionName = metric?.Dimensions?.find((d) => d.Name === 'FunctionName')?.Value;
          if (metric?.Namespace !== 'AWS/Lambda' || !LAMBDA_METRICS.has(metric.MetricName ?? '') || stat?.Stat !== 'Sum' || !functionName) {
            throw new ApiError(
              'InvalidParameterValue',
              'The local CloudWatch has only the Sum of AWS/Lambda Invocations and Errors per FunctionName',
            );
          }
          const periodMs = Number(stat.Period ?? 60) * 1000;
          const buckets = new Map<number, number>();
          for (const invocation of inputs.invocations()) {
            if (invocation.functionId !== functionName || invocation.at < start || invocation.at >= end) continue;
            if (metric.MetricName === 'Errors' && invocation.error === undefined) continue;
            const bucket = start + Math.floor((invocation.at - start) / periodMs) * periodMs;
            buckets.set(bucket, (buckets.get(bucket) ?? 0) + 1);
          }
          const points = [...buckets].sort(([a], [b]) => b - a);
          return {
            Id: query.Id,
            Label: metric.MetricName,
            Timestamps: points.map(([at]) => epochSeconds(new Date(at))),
            Values: points.map(([, count]) => count),
            StatusCode: 'Complete',
          };
        }),
        Messages: [],
      };
    },
  };
  return listenLocally(
    (request, response) =>
      void serveAwsJson(
        {
          service: 'monitoring',
          targetPrefix: 'GraniteServiceVersion20100801.',
          contentType: 'application/x-amz-json-1.0',
          internalErrorType: 'InternalServiceError',
        },
        operations,
        request,
        response,
      ),
  );
}
