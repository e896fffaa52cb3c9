// What invokes the functions, read from the template: EventBridge rules on the default bus (the
// run-ended rule on execution status changes) and scheduled rules (the reaper), the custom bus's
// rules, S3 notifications, the HTTP API's routes, and the inbox's event source mapping.
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { HttpHandler } from '../api-gateway.ts';
import { matchesEventPattern } from '../event-pattern.ts';
import type { LocalEventBridgeOptions } from '../eventbridge.ts';
import type { S3NotificationsOptions } from '../s3-notifications.ts';
import { startSqsPoller, type SqsPoller } from '../sqs-poller.ts';
import type { ExecutionStatusChangeEvent } from '../step-functions/index.ts';
import { resolveCloudFormation } from '../resources.ts';
import { functionLogicalIdFromArn } from '../template.ts';
import { onlyResource, resourcesOfType, type Template } from './resources.ts';

export type Invoke = (functionId: string, event: unknown, kind?: 'sync' | 'async') => Promise<unknown>;
export type Report = (where: string, error: unknown) => void;

const functionOf = (template: Template, arn: unknown) => functionLogicalIdFromArn(String(resolveCloudFormation(template, arn)));

/** The default bus: which execution endings reach which function. */
export function statusChangeRules(template: Template, invoke: Invoke, report: Report) {
  const rules = resourcesOfType(template, 'AWS::Events::Rule')
    .filter(([, rule]) => rule.Properties.EventPattern && !rule.Properties.EventBusName)
    .map(([, rule]) => ({
      pattern: resolveCloudFormation(template, rule.Properties.EventPattern) as object,
      targets: (rule.Properties.Targets as { Arn: unknown }[]).map((t) => functionOf(template, t.Arn)),
    }));
  return async (event: ExecutionStatusChangeEvent) => {
    for (const rule of rules) {
      if (!matchesEventPattern(rule.pattern, event)) continue;
      for (const target of rule.targets) {
        if (target) await invoke(target, event, 'async').catch((error: unknown) => report('rule-target', error));
      }
    }
  };
}

/** EventBridge `rate(N unit)` in milliseconds (the only schedule form the stack's rules use). */
export function rateMs(expression: string): number {
  const match = /^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$/.exec(expression);
  if (!match) throw new Error(`Unsupported schedule expression for the local cloud: ${expression}`);
  const unit = match[2]!.startsWith('minute') ? 60_000 : match[2]!.startsWith('hour') ? 3_600_000 : 86_400_000;
  return Number(match[1]) * unit;
}

/** Scheduled rules (the sandbox reaper), fired by timers at their rate. */
export function scheduledRules(template: Template, invoke: Invoke, report: Report): NodeJS.Timeout[] {
  return resourcesOfType(template, 'AWS::Events::Rule')
    .filter(([, rule]) => rule.Properties.ScheduleExpression)
    .map(([id, rule]) => {
      const targets = (rule.Properties.Targets as { Arn: unknown }[]).map((t) => functionOf(template, t.Arn));
      const event = { source: 'aws.events', 'detail-type': 'Scheduled Event', resources: [id], detail: {} };
      return setInterval(
        () => {
          for (const target of targets) {
            if (target) void invoke(target, event, 'async').catch((error: unknown) => report('schedule', error));
          }
        },
        rateMs(String(rule.Properties.ScheduleExpression)),
      ).unref();
    });
}

type RuleTarget = {
  Arn: unknown;
  InputPath?: string;
  InputTransformer?: { InputPathsMap?: Record<string, string>; InputTemplate: string };
};

/**
 * The rules with event patterns, for the local EventBridge: the custom bus's, and the default bus's
 * (declared triggers; the run-ended rule there matches only Step Functions' own events, which
 * statusChangeRules delivers).
 */
export function busRules(template: Template): LocalEventBridgeOptions['rules'] {
  return resourcesOfType(template, 'AWS::Events::Rule')
    .filter(([, rule]) => rule.Properties.EventPattern)
    .map(([id, rule]) => ({
      name: id,
      eventBusName: rule.Properties.EventBusName ? String(resolveCloudFormation(template, rule.Properties.EventBusName)) : 'default',
      pattern: resolveCloudFormation(template, rule.Properties.EventPattern) as object,
      targets: (rule.Properties.Targets as RuleTarget[]).map((t) => ({
        arn: String(resolveCloudFormation(template, t.Arn)),
        inputPath: t.InputPath,
        ...(t.InputTransformer
          ? { inputTransformer: { inputPathsMap: t.InputTransformer.InputPathsMap, inputTemplate: t.InputTransformer.InputTemplate } }
          : {}),
      })),
    }));
}

/**
 * Buckets whose "Object Created" events a rule on the default bus waits for (declared S3
 * triggers): buckets outside the stack with EventBridge notifications on. Locally the cloud creates
 * them and sends their events as S3 would.
 */
export function eventBridgeNotifiedBuckets(template: Template): string[] {
  const buckets = new Set<string>();
  for (const [, rule] of resourcesOfType(template, 'AWS::Events::Rule')) {
    const pattern = rule.Properties.EventPattern as { source?: unknown; detail?: { bucket?: { name?: unknown } } } | undefined;
    if (!Array.isArray(pattern?.source) || !pattern.source.includes('aws.s3')) continue;
    for (const name of Array.isArray(pattern.detail?.bucket?.name) ? pattern.detail.bucket.name : []) {
      if (typeof name === 'string') buckets.add(name);
    }
  }
  return [...buckets];
}

type FilterRule = { Name: string; Value: string };

/** The bucket's notification configurations (CDK's custom resource), each delivering to its function. */
export function notificationConfigurations(template: Template, invokeArn: (arn: string, event: unknown) => Promise<unknown>) {
  return resourcesOfType(template, 'Custom::S3BucketNotifications').flatMap(([, r]) =>
    (
      (r.Properties.NotificationConfiguration?.LambdaFunctionConfigurations ?? []) as {
        Events: string[];
        Filter?: { Key?: { FilterRules?: FilterRule[] } };
        LambdaFunctionArn: unknown;
      }[]
    ).map((c): S3NotificationsOptions['configurations'][number] => {
      const rule = (name: string) => c.Filter?.Key?.FilterRules?.find((f) => f.Name.toLowerCase() === name)?.Value;
      const arn = String(resolveCloudFormation(template, c.LambdaFunctionArn));
      return {
        prefix: rule('prefix'),
        suffix: rule('suffix'),
        events: c.Events,
        deliver: async (event) => void (await invokeArn(arn, event)),
      };
    }),
  );
}

/** Each route of the HTTP API to its integration's function. */
export function apiRoutes(template: Template, invoke: Invoke): Record<string, HttpHandler> {
  const integrations = new Map(
    resourcesOfType(template, 'AWS::ApiGatewayV2::Integration').map(([id, integration]) => [
      id,
      functionOf(template, integration.Properties.IntegrationUri),
    ]),
  );
  const routes: Record<string, HttpHandler> = {};
  for (const [, route] of resourcesOfType(template, 'AWS::ApiGatewayV2::Route')) {
    const target = resolveCloudFormation(template, route.Properties.Target) as string;
    const functionId = integrations.get(target.replace(/^integrations\/local-/, ''));
    if (!functionId) throw new Error(`Route ${route.Properties.RouteKey} has no local integration (${target})`);
    routes[route.Properties.RouteKey] = (event: APIGatewayProxyEventV2) =>
      invoke(functionId, event) as Promise<APIGatewayProxyStructuredResultV2>;
  }
  return routes;
}

/** The inbox's event source mapping, polling as Lambda's poller does. */
export function inboxPoller(
  template: Template,
  inbox: { sqs: SQSClient; queueUrl: string; queueArn: string },
  invoke: Invoke,
  report: Report,
): SqsPoller {
  const [, mapping] = onlyResource(template, 'AWS::Lambda::EventSourceMapping');
  const consumerId = functionOf(template, { 'Fn::GetAtt': [mapping.Properties.FunctionName.Ref, 'Arn'] })!;
  return startSqsPoller({
    sqs: inbox.sqs,
    queueUrl: inbox.queueUrl,
    queueArn: inbox.queueArn,
    batchSize: mapping.Properties.BatchSize,
    reportBatchItemFailures: (mapping.Properties.FunctionResponseTypes ?? []).includes('ReportBatchItemFailures'),
    handler: (event: SQSEvent) => invoke(consumerId, event) as Promise<SQSBatchResponse>,
    onError: (error) => report('sqs-poller', error),
  });
}
