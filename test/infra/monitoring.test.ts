// Template tests for watching the runtime: the alarm topic (encrypted, TLS only, an email subscription
// only with alarmEmail), every alarm the runtime needs and each one's action, and the dashboard's
// widgets, cost query included.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { TOP_CHANNELS_QUERY, DASHBOARD_WIDGETS, MODEL_STEP_LOG_MESSAGE } from '../../infra/constructs/dashboard.ts';
import { MODEL_THROTTLE_ALARM_PERCENT } from '../../infra/constructs/alarms.ts';
import { DEFAULT_SETTINGS } from '../../infra/settings.ts';
import { METRICS } from '../../shared/observability/metric-names.ts';
import { flatten, logicalId, STACK_NAME, synth } from './synth.ts';

type Resource = { Type: string; Properties: Record<string, unknown> };
type MetricQuery = {
  Id: string;
  Expression?: string;
  MetricStat?: { Metric: { Namespace: string; MetricName: string; Dimensions?: unknown[] }; Stat: string; Period: number };
};
type AlarmProperties = {
  AlarmActions?: unknown[];
  OKActions?: unknown[];
  MetricName?: string;
  Namespace?: string;
  Dimensions?: { Name: string; Value: unknown }[];
  Statistic?: string;
  Period?: number;
  Threshold: number;
  ComparisonOperator: string;
  EvaluationPeriods: number;
  DatapointsToAlarm?: number;
  Metrics?: MetricQuery[];
  TreatMissingData?: string;
};

// Declared triggers have a dead-letter queue (and alarm) each: one here, to see those routed too.
const TRIGGERS = [
  {
    name: 'health-events',
    source: { eventPattern: { source: ['aws.health'] } },
    target: { adapterId: 'slack', channelId: 'C0OPS' },
    text: 'AWS Health: {detail.eventTypeCode}',
  },
];
const { app, stack, template } = synth({ settings: { triggers: TRIGGERS } });
const resources = template.toJSON().Resources as Record<string, Resource>;
const idOf = (construct: IConstruct) => logicalId(stack, construct);
const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
const alarmProps = (construct: IConstruct) => {
  const found = resources[idOf(construct)];
  assert.ok(found, `${construct.node.path} not in the template`);
  return found.Properties as AlarmProperties;
};
const topicRef = { Ref: idOf(stack.monitoring.topic.topic) };

test('alarm topic: SNS encrypted with a rotating KMS key that only CloudWatch alarms of this account may use; TLS only', () => {
  const topic = resources[idOf(stack.monitoring.topic.topic)]!.Properties;
  assert.deepEqual(topic.KmsMasterKeyId, { 'Fn::GetAtt': [idOf(stack.monitoring.topic.key), 'Arn'] });
  const key = resources[idOf(stack.monitoring.topic.key)]!.Properties as {
    EnableKeyRotation: boolean;
    KeyPolicy: { Statement: Record<string, unknown>[] };
  };
  assert.equal(key.EnableKeyRotation, true);
  const forCloudWatch = key.KeyPolicy.Statement.find((s) => JSON.stringify(s.Principal) === '{"Service":"cloudwatch.amazonaws.com"}');
  assert.deepEqual(forCloudWatch?.Action, ['kms:Decrypt', 'kms:GenerateDataKey*']);
  assert.deepEqual((forCloudWatch?.Condition as Record<string, Record<string, unknown>>).StringEquals, {
    'aws:SourceAccount': { Ref: 'AWS::AccountId' },
  });
  const [[, policy]] = ofType('AWS::SNS::TopicPolicy') as [[string, Resource]];
  const statements = (policy.Properties.PolicyDocument as { Statement: Record<string, unknown>[] }).Statement;
  const denyInsecure = statements.find((s) => s.Effect === 'Deny');
  assert.deepEqual(denyInsecure?.Condition, { Bool: { 'aws:SecureTransport': 'false' } });
  const publish = statements.find((s) => s.Effect === 'Allow');
  assert.deepEqual(publish?.Principal, { Service: 'cloudwatch.amazonaws.com' });
  assert.equal(publish?.Action, 'sns:Publish');
  assert.match(
    flatten((publish?.Condition as { ArnLike: Record<string, unknown> }).ArnLike['aws:SourceArn']),
    /:cloudwatch:<AWS::Region>:<AWS::AccountId>:alarm:\*$/,
  );
});

test('email subscription: only with alarmEmail, to exactly that address', () => {
  assert.equal(ofType('AWS::SNS::Subscription').length, 0);
  const withEmail = synth({ settings: { alarmEmail: 'ops@example.com' } });
  const subscriptions = withEmail.template.findResources('AWS::SNS::Subscription') as Record<string, Resource>;
  assert.deepEqual(
    Object.values(subscriptions).map((s) => [s.Properties.Protocol, s.Properties.Endpoint, s.Properties.TopicArn]),
    [['email', 'ops@example.com', { Ref: logicalId(withEmail.stack, withEmail.stack.monitoring.topic.topic) }]],
  );
});

test('every alarm of the stack notifies the alarm topic, when it fires and when it is OK again', () => {
  const alarms = ofType('AWS::CloudWatch::Alarm');
  assert.equal(alarms.length, stack.monitoring.allAlarms.length);
  assert.ok(alarms.length >= 19);
  for (const [id, alarm] of alarms) {
    assert.deepEqual(alarm.Properties.AlarmActions, [topicRef], id);
    assert.deepEqual(alarm.Properties.OKActions, [topicRef], id);
    assert.ok(String(alarm.Properties.AlarmDescription).length >= 40, `${id}: say what happened and where to look`);
  }
});

test('every dead-letter queue (and the failed-invocations queue) has an alarm at its first message; the inbox itself does not', () => {
  const queues = ofType('AWS::SQS::Queue').map(([id]) => id);
  const watched = ofType('AWS::CloudWatch::Alarm')
    .map(([, a]) => a.Properties as AlarmProperties)
    .filter((a) => a.MetricName === 'ApproximateNumberOfMessagesVisible')
    .map((a) => {
      assert.equal(a.Threshold, 0);
      assert.equal(a.ComparisonOperator, 'GreaterThanThreshold');
      return (a.Dimensions![0]!.Value as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    });
  const inbox = idOf(stack.inbox);
  assert.deepEqual(watched.sort(), queues.filter((q) => q !== inbox).sort());
  // Inbox, run-ended, bus rule, failed invocations, schedules, and the one trigger's.
  assert.equal(watched.length, 6);
});

test("the inbox's oldest message: an alarm past two visibility timeouts", () => {
  const alarm = alarmProps(stack.monitoring.alarms.inboxOldestMessage);
  assert.equal(alarm.MetricName, 'ApproximateAgeOfOldestMessage');
  assert.equal(alarm.Namespace, 'AWS/SQS');
  assert.deepEqual(alarm.Dimensions![0]!.Value, { 'Fn::GetAtt': [idOf(stack.inbox), 'QueueName'] });
  assert.equal(alarm.Statistic, 'Maximum');
  const visibility = resources[idOf(stack.inbox)]!.Properties.VisibilityTimeout as number;
  assert.equal(alarm.Threshold, visibility * 2);
});

test('failed and timed-out executions of the agent-run state machine', () => {
  for (const [alarm, metric] of [
    [stack.monitoring.alarms.executionsFailed, 'ExecutionsFailed'],
    [stack.monitoring.alarms.executionsTimedOut, 'ExecutionsTimedOut'],
  ] as const) {
    const props = alarmProps(alarm);
    assert.equal(props.Namespace, 'AWS/States');
    assert.equal(props.MetricName, metric);
    assert.deepEqual(props.Dimensions, [{ Name: 'StateMachineArn', Value: { Ref: idOf(stack.stateMachine) } }]);
    assert.equal(props.Statistic, 'Sum');
    assert.equal(props.Threshold, 0);
  }
});

test("each runtime function's errors and throttles", () => {
  const roles = Object.keys(stack.functions).sort();
  assert.deepEqual(Object.keys(stack.monitoring.alarms.functionErrors).sort(), roles);
  for (const role of roles) {
    const props = alarmProps(stack.monitoring.alarms.functionErrors[role]!);
    const expression = props.Metrics!.find((m) => m.Expression)!;
    assert.equal(expression.Expression, 'errors + throttles');
    const stats = Object.fromEntries(props.Metrics!.filter((m) => m.MetricStat).map((m) => [m.Id, m.MetricStat!]));
    assert.deepEqual(Object.keys(stats).sort(), ['errors', 'throttles']);
    assert.equal(stats.errors!.Metric.MetricName, 'Errors');
    assert.equal(stats.throttles!.Metric.MetricName, 'Throttles');
    for (const stat of Object.values(stats)) {
      assert.equal(stat.Metric.Namespace, 'AWS/Lambda');
      assert.deepEqual(stat.Metric.Dimensions, [
        { Name: 'FunctionName', Value: { Ref: idOf(stack.functions[role as keyof typeof stack.functions]!) } },
      ]);
    }
    assert.equal(props.Threshold, 0);
  }
});

test("the runtime's own metrics (namespace = stack name, the dimensionless totals): throttling rate, daily cost, sandbox age", () => {
  const { modelThrottling, dailyCost, sandboxAge } = stack.monitoring.alarms;
  const throttling = alarmProps(modelThrottling);
  assert.equal(throttling.Metrics!.find((m) => m.Expression)?.Expression, '100 * throttles / (throttles + steps)');
  for (const query of throttling.Metrics!.filter((m) => m.MetricStat)) {
    assert.equal(query.MetricStat!.Metric.Namespace, STACK_NAME);
    assert.equal(query.MetricStat!.Metric.Dimensions, undefined);
    assert.equal(query.MetricStat!.Stat, 'Sum');
  }
  assert.deepEqual(
    throttling
      .Metrics!.filter((m) => m.MetricStat)
      .map((m) => m.MetricStat!.Metric.MetricName)
      .sort(),
    ['ModelSteps', 'ModelThrottles'],
  );
  assert.equal(throttling.Threshold, MODEL_THROTTLE_ALARM_PERCENT);
  assert.deepEqual([throttling.DatapointsToAlarm, throttling.EvaluationPeriods], [2, 3]);

  const cost = alarmProps(dailyCost);
  assert.deepEqual(
    [cost.Namespace, cost.MetricName, cost.Dimensions, cost.Statistic, cost.Period],
    [STACK_NAME, 'CostUsd', undefined, 'Sum', 86400],
  );
  assert.equal(cost.Threshold, DEFAULT_SETTINGS.dailyCostAlarmUsd);
  const custom = synth({ settings: { dailyCostAlarmUsd: '7.5', runTimeoutMinutes: '30', sandboxIdleMinutes: '10' } });
  const customProps = (construct: IConstruct) =>
    (custom.template.toJSON().Resources as Record<string, Resource>)[logicalId(custom.stack, construct)]!.Properties as AlarmProperties;
  assert.equal(customProps(custom.stack.monitoring.alarms.dailyCost).Threshold, 7.5);

  const age = alarmProps(sandboxAge);
  assert.deepEqual([age.Namespace, age.MetricName, age.Dimensions, age.Statistic], [STACK_NAME, 'OldestSandboxAge', undefined, 'Maximum']);
  // runTimeoutMinutes + sandboxIdleMinutes + one reaper sweep (a minute), in seconds.
  assert.equal(age.Threshold, (60 + 5 + 1) * 60);
  assert.equal(customProps(custom.stack.monitoring.alarms.sandboxAge).Threshold, (30 + 10 + 1) * 60);
  for (const alarm of [throttling, cost, age]) assert.equal(alarm.TreatMissingData, 'notBreaching');
});

/** The dashboard body with intrinsics flattened to <LogicalId> placeholders. */
function dashboardBody(): { widgets: { type: string; properties: Record<string, unknown> }[] } {
  const [[, dashboard]] = ofType('AWS::CloudWatch::Dashboard') as [[string, Resource]];
  return JSON.parse(flatten(dashboard.Properties.DashboardBody)) as { widgets: { type: string; properties: Record<string, unknown> }[] };
}

test('dashboard: runs, failures, latency p50/p99, tokens, cost per day, top channels by cost, queues, sandboxes, alarms', () => {
  const { widgets } = dashboardBody();
  assert.deepEqual(
    widgets.map((w) => w.properties.title),
    Object.values(DASHBOARD_WIDGETS),
  );
  const byTitle = (title: string) => widgets.find((w) => w.properties.title === title)!.properties;
  const metricsOf = (title: string) => JSON.stringify(byTitle(title).metrics);
  // The runtime's metrics by their catalogue names, in this stack's namespace, as totals.
  for (const name of ['RunsStarted', 'RunsFinished', 'RunsFailed'])
    assert.ok(metricsOf(DASHBOARD_WIDGETS.runs).includes(`["${STACK_NAME}","${name}"`), name);
  for (const name of ['RunDuration', 'ModelLatency', 'TimeToFirstToken', 'QueueWait']) {
    for (const p of ['p50', 'p99']) assert.ok(metricsOf(DASHBOARD_WIDGETS.latency).includes(`"${name} ${p}"`), `${name} ${p}`);
  }
  for (const name of ['InputTokens', 'OutputTokens', 'CacheReadTokens', 'CacheWriteTokens'])
    assert.ok(metricsOf(DASHBOARD_WIDGETS.tokens).includes(name), name);
  assert.match(metricsOf(DASHBOARD_WIDGETS.cost), /"CostUsd".*"period":86400/);
  assert.ok(metricsOf(DASHBOARD_WIDGETS.failures).includes('ExecutionsFailed'));
  assert.ok(metricsOf(DASHBOARD_WIDGETS.queues).includes('ApproximateAgeOfOldestMessage'));
  for (const name of ['SandboxesRunning', 'OldestSandboxAge']) assert.ok(metricsOf(DASHBOARD_WIDGETS.sandboxes).includes(name), name);
  // Every metric name the dashboard reads from the stack's namespace is one the functions publish.
  const own = [...JSON.stringify(widgets).matchAll(new RegExp(`\\["${STACK_NAME}","(\\w+)"`, 'g'))].map((m) => m[1]!);
  assert.ok(own.length > 10);
  for (const name of own) assert.ok(name in METRICS, name);
  // The alarm widget lists every alarm.
  assert.equal((byTitle(DASHBOARD_WIDGETS.alarms).alarms as unknown[]).length, stack.monitoring.allAlarms.length);
});

test("dashboard: top channels by cost, a Logs Insights query over the agent-step function's model step lines", () => {
  const widget = dashboardBody().widgets.find((w) => w.properties.title === DASHBOARD_WIDGETS.topChannels)!;
  assert.equal(widget.type, 'log');
  const query = widget.properties.query as string;
  const agentStepLogs = idOf(stack.functions.agentStep.logGroup.node.defaultChild as IConstruct);
  assert.ok(query.startsWith(`SOURCE '<${agentStepLogs}>' | `), query);
  assert.ok(query.endsWith(TOP_CHANNELS_QUERY.join('\n| ')), query);
  assert.match(query, new RegExp(`message = "${MODEL_STEP_LOG_MESSAGE}"`));
  assert.match(query, /stats sum\(costUsd\) as costUsd.* by channel/);
});

test('cdk-nag AwsSolutions: clean with the topic, key, alarms, dashboard and an email subscription', () => {
  for (const synthesized of [{ app }, synth({ settings: { alarmEmail: 'ops@example.com' } })]) {
    const report = new AwsSolutionsChecks().validateScope(synthesized.app);
    assert.deepEqual(
      report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath).join(', ')}`),
      [],
    );
  }
});
