// Template tests for the event bus: the scheduler function and its three inputs (S3 notifications
// for event files, EventBridge Scheduler firings, events on the custom bus), the schedule group and
// the role schedules run with, the function's IAM, the dead-letter queues and their alarms, and
// cdk-nag in both sandbox network modes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { SCHEDULE_ACTIONS } from '../../infra/constructs/event-bus.ts';
import { FUNCTION_ENTRIES } from '../../infra/function-entries.ts';
import { DEFAULT_SETTINGS } from '../../infra/settings.ts';
import { flatten, logicalId, STACK_NAME, synth } from './synth.ts';

type Resource = { Type: string; Properties: Record<string, unknown>; DeletionPolicy?: string; DependsOn?: string[] };
type Statement = {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Principal?: unknown;
  Condition?: Record<string, Record<string, unknown>>;
};

const list = <T>(value: T | T[] | undefined): T[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

const { app, stack, template } = synth();
const resources = template.toJSON().Resources as Record<string, Resource>;
const idOf = (construct: IConstruct): string => logicalId(stack, construct);
const ofType = (type: string): [string, Resource][] => Object.entries(resources).filter(([, r]) => r.Type === type);
const props = (construct: IConstruct): Record<string, unknown> => {
  const found = resources[idOf(construct)];
  assert.ok(found, `${construct.node.path} not in the template`);
  return found.Properties;
};
const getAtt = (construct: IConstruct, attribute = 'Arn') => ({ 'Fn::GetAtt': [idOf(construct), attribute] });
const ref = (construct: IConstruct) => ({ Ref: idOf(construct) });
/** The statements of every IAM::Policy attached to a role. */
const statementsOf = (role: IConstruct): Statement[] =>
  ofType('AWS::IAM::Policy')
    .filter(([, p]) => list(p.Properties.Roles).some((r) => JSON.stringify(r) === JSON.stringify(ref(role))))
    .flatMap(([, p]) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement);

const scheduler = stack.functions.scheduler;
const schedules = stack.eventSchedules;
const events = stack.eventBus;
const FUNCTION_NAME = `${STACK_NAME}-Scheduler`;
const FUNCTION_ARN = `arn:<AWS::Partition>:lambda:<AWS::Region>:<AWS::AccountId>:function:${FUNCTION_NAME}`;
const GROUP_NAME = `${STACK_NAME}-events`;
const SCHEDULE_ARNS = `arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule/${GROUP_NAME}/*`;
const EVENT_OBJECTS = `<${idOf(stack.bucket)}.Arn>/events/*`;

test('scheduler function: its handler module, an explicit name, 60 s, 512 MB, and the environment of its three inputs', () => {
  assert.equal(FUNCTION_ENTRIES.scheduler, 'functions/scheduler/handler.ts');
  const fn = props(scheduler);
  assert.equal(fn.FunctionName, FUNCTION_NAME);
  assert.equal(fn.Timeout, 60);
  assert.equal(fn.MemorySize, 512);
  assert.equal(fn.VpcConfig, undefined);
  const {
    NODE_OPTIONS: _node,
    METRICS_NAMESPACE: _namespace,
    SCHEDULER_TARGET_ARN: target,
    ...variables
  } = (fn.Environment as { Variables: Record<string, unknown> }).Variables;
  assert.deepEqual(variables, {
    TABLE_NAME: ref(stack.table),
    DATA_BUCKET: ref(stack.bucket),
    INBOX_QUEUE_URL: ref(stack.inbox),
    SLACK_SECRET_ARN: ref(stack.chatSecrets.slack!),
    TEAMS_SECRET_ARN: ref(stack.chatSecrets.teams!),
    SCHEDULE_GROUP_NAME: ref(schedules.group),
    SCHEDULER_ROLE_ARN: getAtt(schedules.role),
    SCHEDULE_DLQ_ARN: getAtt(schedules.deadLetterQueue),
  });
  // Its own ARN, computed from its name (a GetAtt would make the function depend on itself).
  assert.equal(flatten(target), FUNCTION_ARN);
});

test('event files and uploads: the data bucket notifies the function of created and removed events/*.json objects and of new uploads/ objects', () => {
  const notifications = ofType('Custom::S3BucketNotifications');
  assert.equal(notifications.length, 1);
  const [, notification] = notifications[0]!;
  assert.deepEqual(notification.Properties.BucketName, ref(stack.bucket));
  const config = notification.Properties.NotificationConfiguration as Record<string, unknown>;
  assert.deepEqual(Object.keys(config), ['LambdaFunctionConfigurations'], 'no queue, topic or EventBridge notifications');
  const lambdas = config.LambdaFunctionConfigurations as {
    Events: string[];
    Filter: { Key: { FilterRules: { Name: string; Value: string }[] } };
    LambdaFunctionArn: unknown;
  }[];
  const described = lambdas.map((c) => {
    assert.deepEqual(c.LambdaFunctionArn, getAtt(scheduler));
    return { events: c.Events, filter: Object.fromEntries(c.Filter.Key.FilterRules.map((r) => [r.Name.toLowerCase(), r.Value])) };
  });
  assert.deepEqual(described, [
    { events: ['s3:ObjectCreated:*'], filter: { prefix: 'events/', suffix: '.json' } },
    { events: ['s3:ObjectRemoved:*'], filter: { prefix: 'events/', suffix: '.json' } },
    { events: ['s3:ObjectCreated:*'], filter: { prefix: 'uploads/' } },
  ]);
  // S3 may invoke the function, for this bucket in this account only.
  const permissions = ofType('AWS::Lambda::Permission').filter(([, p]) => p.Properties.Principal === 's3.amazonaws.com');
  assert.equal(permissions.length, 1);
  assert.deepEqual(permissions[0]![1].Properties, {
    Action: 'lambda:InvokeFunction',
    FunctionName: getAtt(scheduler),
    Principal: 's3.amazonaws.com',
    SourceAccount: { Ref: 'AWS::AccountId' },
    SourceArn: getAtt(stack.bucket),
  });
});

test("bucket notifications handler (CDK's): logs to its own group with the retention setting, which its role may write to, and nothing else but the notification configuration", () => {
  const handler = events.notificationsHandler;
  const fn = resources[idOf(handler.node.findChild('Resource'))]!;
  const logGroupId = (fn.Properties.LoggingConfig as { LogGroup: { Ref: string } }).LogGroup.Ref;
  assert.equal(resources[logGroupId]!.Properties.RetentionInDays, DEFAULT_SETTINGS.logRetentionDays);
  const role = handler.node.findChild('Role');
  assert.equal(props(role).ManagedPolicyArns, undefined, 'no AWSLambdaBasicExecutionRole');
  assert.deepEqual(
    statementsOf(role).map((s) => [list(s.Action).sort(), s.Resource]),
    [
      [['s3:PutBucketNotification'], getAtt(stack.bucket)],
      [['logs:CreateLogStream', 'logs:PutLogEvents'], { 'Fn::GetAtt': [logGroupId, 'Arn'] }],
    ],
  );
});

test('schedule group: one, named after the stack, deleted with it', () => {
  const groups = ofType('AWS::Scheduler::ScheduleGroup');
  assert.equal(groups.length, 1);
  assert.equal(groups[0]![0], idOf(schedules.group));
  assert.deepEqual(groups[0]![1].Properties, { Name: GROUP_NAME });
  assert.equal(groups[0]![1].DeletionPolicy, 'Delete');
  assert.equal(ofType('AWS::Scheduler::Schedule').length, 0, 'schedules are created at runtime, not by the stack');
});

test('schedule role: trusted by EventBridge Scheduler for this account and group only; invokes the function, dead-letters to the DLQ', () => {
  const role = props(schedules.role);
  assert.equal(role.ManagedPolicyArns, undefined);
  assert.equal(role.Policies, undefined);
  const trust = (role.AssumeRolePolicyDocument as { Statement: Statement[] }).Statement;
  assert.equal(trust.length, 1);
  assert.equal(trust[0]!.Effect, 'Allow');
  assert.equal(trust[0]!.Action, 'sts:AssumeRole');
  assert.deepEqual(trust[0]!.Principal, { Service: 'scheduler.amazonaws.com' });
  assert.deepEqual(trust[0]!.Condition, {
    StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' }, 'aws:SourceArn': getAtt(schedules.group) },
  });

  const granted = statementsOf(schedules.role).map((s) => ({
    effect: s.Effect,
    actions: list(s.Action),
    resources: list(s.Resource).map(flatten),
    condition: s.Condition,
  }));
  assert.deepEqual(granted, [
    { effect: 'Allow', actions: ['lambda:InvokeFunction'], resources: [FUNCTION_ARN], condition: undefined },
    { effect: 'Allow', actions: ['sqs:SendMessage'], resources: [`<${idOf(schedules.deadLetterQueue)}.Arn>`], condition: undefined },
  ]);
  // The computed ARN is the function's: the same name and the same value the function puts in its schedules.
  const env = (props(scheduler).Environment as { Variables: Record<string, unknown> }).Variables;
  assert.deepEqual(statementsOf(schedules.role)[0]!.Resource, env.SCHEDULER_TARGET_ARN);
});

test('schedule dead-letter queue: standard, SSE-SQS, SSL only, kept 14 days, alarmed on any visible message', () => {
  const queue = props(schedules.deadLetterQueue);
  assert.equal(queue.FifoQueue, undefined);
  assert.equal(queue.SqsManagedSseEnabled, true);
  assert.equal(queue.MessageRetentionPeriod, 14 * 24 * 3600);
  const sslOnly = ofType('AWS::SQS::QueuePolicy').some(
    ([, p]) =>
      JSON.stringify(p.Properties.Queues) === JSON.stringify([ref(schedules.deadLetterQueue)]) &&
      (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement.some(
        (s) => s.Effect === 'Deny' && JSON.stringify(s.Condition) === JSON.stringify({ Bool: { 'aws:SecureTransport': 'false' } }),
      ),
  );
  assert.ok(sslOnly);
  assertAlarmed(schedules.deadLetterQueue);
});

/** An alarm on the queue's visible messages, in ALARM from the first one. */
function assertAlarmed(queue: IConstruct): void {
  const alarms = ofType('AWS::CloudWatch::Alarm').filter(
    ([, a]) => JSON.stringify(a.Properties.Dimensions) === JSON.stringify([{ Name: 'QueueName', Value: getAtt(queue, 'QueueName') }]),
  );
  assert.equal(alarms.length, 1, queue.node.path);
  const alarm = alarms[0]![1].Properties;
  assert.equal(alarm.Namespace, 'AWS/SQS');
  assert.equal(alarm.MetricName, 'ApproximateNumberOfMessagesVisible');
  assert.equal(alarm.ComparisonOperator, 'GreaterThanThreshold');
  assert.equal(alarm.Threshold, 0);
  assert.equal(alarm.EvaluationPeriods, 1);
  assert.equal(alarm.TreatMissingData, 'notBreaching');
  assert.ok(typeof alarm.AlarmDescription === 'string' && alarm.AlarmDescription.length > 20);
}

test('scheduler IAM: schedules of its group only, PassRole of the schedule role to EventBridge Scheduler only, S3 on events/* only', () => {
  const statements = statementsOf(scheduler.role!);
  const byPrefix = (prefix: string) => statements.filter((s) => list(s.Action).some((a) => a.startsWith(prefix)));
  for (const s of statements) assert.equal(s.Effect, 'Allow');

  const schedulerStatements = byPrefix('scheduler:');
  assert.equal(schedulerStatements.length, 1);
  assert.deepEqual(list(schedulerStatements[0]!.Action).sort(), [...SCHEDULE_ACTIONS].sort());
  assert.deepEqual([...SCHEDULE_ACTIONS].sort(), [
    'scheduler:CreateSchedule',
    'scheduler:DeleteSchedule',
    'scheduler:GetSchedule',
    'scheduler:UpdateSchedule',
  ]);
  assert.deepEqual(list(schedulerStatements[0]!.Resource).map(flatten), [SCHEDULE_ARNS]);
  assert.equal(schedulerStatements[0]!.Condition, undefined);

  const passRole = byPrefix('iam:');
  assert.equal(passRole.length, 1);
  assert.deepEqual(list(passRole[0]!.Action), ['iam:PassRole']);
  assert.deepEqual(list(passRole[0]!.Resource), [getAtt(schedules.role)]);
  assert.deepEqual(passRole[0]!.Condition, { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } });

  // Objects: read, write and delete under events/ only, read settings.json (the limits on event
  // files); listing the bucket (keys, not content) so a removed file reads as NoSuchKey. No bucket
  // configuration, versions or other prefixes.
  const s3 = byPrefix('s3:').map((s) => ({ actions: list(s.Action).sort(), resources: list(s.Resource).map(flatten) }));
  assert.deepEqual(s3, [
    { actions: ['s3:DeleteObject', 's3:GetObject', 's3:PutObject'], resources: [EVENT_OBJECTS] },
    // settings.json (the limits on event files), and uploads; a trigger's or an upload's file is
    // copied into a thread's attachments/.
    {
      actions: ['s3:GetObject'],
      resources: [EVENT_OBJECTS.replace('/events/*', '/settings.json'), EVENT_OBJECTS.replace('/events/*', '/uploads/*')],
    },
    { actions: ['s3:PutObject'], resources: [EVENT_OBJECTS.replace('/events/*', '/*/attachments/*')] },
    { actions: ['s3:ListBucket'], resources: [`<${idOf(stack.bucket)}.Arn>`] },
  ]);

  // Nothing else: logs, tracing, the table, the inbox and its failed-invocations queue, the Slack secret.
  for (const action of statements.flatMap((s) => list(s.Action))) {
    assert.match(action, /^(logs|xray|dynamodb|sqs|secretsmanager|s3|scheduler|iam):/, action);
    assert.ok(!action.includes('*'), action);
  }
  const sqs = byPrefix('sqs:').flatMap((s) => list(s.Resource).map(flatten));
  assert.deepEqual(sqs.sort(), [flatten(getAtt(events.failedInvocations)), flatten(getAtt(stack.inbox))].sort());
  assert.deepEqual(
    [...new Set(byPrefix('sqs:').flatMap((s) => list(s.Action)))].sort(),
    // GetQueue* is the failed-invocations destination's grant (CDK's); the inbox gets SendMessage only.
    ['sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage'],
  );
});

test('no other policy manages schedules or passes the schedule role', () => {
  const schedulerRole = JSON.stringify([ref(scheduler.role!)]);
  for (const [id, policy] of [...ofType('AWS::IAM::Policy'), ...ofType('AWS::IAM::ManagedPolicy')]) {
    if (JSON.stringify(policy.Properties.Roles) === schedulerRole) continue;
    for (const s of (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement) {
      assert.ok(!list(s.Action).some((a) => a.startsWith('scheduler:')), id);
      if (list(s.Action).includes('iam:PassRole')) assert.ok(!JSON.stringify(s.Resource).includes(idOf(schedules.role)), id);
    }
  }
});

test('custom bus: named after the stack; its rule matches events with detail.text and hands the whole event to the function', () => {
  const buses = ofType('AWS::Events::EventBus');
  assert.equal(buses.length, 1);
  assert.equal(props(events.bus).Name, GROUP_NAME);
  assert.equal(props(events.bus).Policy, undefined, 'no resource policy: only this account may put events');

  const rule = props(events.rule);
  assert.deepEqual(rule.EventBusName, ref(events.bus));
  assert.deepEqual(rule.EventPattern, { detail: { text: [{ exists: true }] } });
  assert.equal(rule.State, 'ENABLED');
  const targets = rule.Targets as Record<string, unknown>[];
  assert.equal(targets.length, 1);
  const target = targets[0]!;
  assert.deepEqual(target.Arn, getAtt(scheduler));
  assert.deepEqual(target.RetryPolicy, { MaximumRetryAttempts: 3 });
  assert.deepEqual(target.DeadLetterConfig, { Arn: getAtt(events.deadLetterQueue) });
  for (const key of ['Input', 'InputPath', 'InputTransformer', 'RoleArn']) assert.equal(target[key], undefined, key);

  // EventBridge may invoke the function for this rule only, and dead-letter for this rule only.
  const permissions = ofType('AWS::Lambda::Permission').filter(([, p]) => p.Properties.Principal === 'events.amazonaws.com');
  const forRule = permissions.filter(([, p]) => JSON.stringify(p.Properties.SourceArn) === JSON.stringify(getAtt(events.rule)));
  assert.equal(forRule.length, 1);
  assert.deepEqual(forRule[0]![1].Properties.FunctionName, getAtt(scheduler));
  const dlqPolicy = ofType('AWS::SQS::QueuePolicy').find(
    ([, p]) => JSON.stringify(p.Properties.Queues) === JSON.stringify([ref(events.deadLetterQueue)]),
  )![1];
  const allow = (dlqPolicy.Properties.PolicyDocument as { Statement: Statement[] }).Statement.filter((s) => s.Effect === 'Allow');
  assert.deepEqual(
    allow.map((s) => [s.Principal, s.Action, s.Condition]),
    [[{ Service: 'events.amazonaws.com' }, 'sqs:SendMessage', { ArnEquals: { 'aws:SourceArn': getAtt(events.rule) } }]],
  );
});

test('bus rule dead-letter queue and failed invocations: SSE, kept 14 days, alarmed; failed async invocations go to their queue', () => {
  for (const queue of [events.deadLetterQueue, events.failedInvocations]) {
    const p = props(queue);
    assert.equal(p.SqsManagedSseEnabled, true, queue.node.path);
    assert.equal(p.MessageRetentionPeriod, 14 * 24 * 3600, queue.node.path);
    assert.equal(p.FifoQueue, undefined, queue.node.path);
    assertAlarmed(queue);
  }
  const configs = ofType('AWS::Lambda::EventInvokeConfig');
  assert.equal(configs.length, 1);
  assert.deepEqual(configs[0]![1].Properties, {
    FunctionName: ref(scheduler),
    Qualifier: '$LATEST',
    MaximumRetryAttempts: 2,
    DestinationConfig: { OnFailure: { Destination: getAtt(events.failedInvocations) } },
  });
});

test('outputs: event bus name and ARN, schedule group name', () => {
  const outputs = template.findOutputs('*') as Record<string, { Value: unknown }>;
  assert.deepEqual(outputs.EventBusName!.Value, ref(events.bus));
  assert.deepEqual(outputs.EventBusArn!.Value, getAtt(events.bus));
  assert.deepEqual(outputs.ScheduleGroupName!.Value, ref(schedules.group));
});

/** Acknowledgements recorded on a construct, by rule id. */
function acknowledgementsOn(construct: IConstruct): Map<string, string> {
  const found = new Map<string, string>();
  for (const entry of construct.node.metadata) {
    if (entry.type !== Validations.ACKNOWLEDGED_RULES_METADATA_KEY) continue;
    for (const [id, reason] of Object.entries(entry.data as Record<string, string>)) found.set(id.replace(/^annotation::/i, ''), reason);
  }
  return found;
}

test("cdk-nag: the event bus's findings are acknowledged with reasons, and nothing else is left, in both network modes", () => {
  const acks = (construct: IConstruct, ...ids: string[]) => {
    const found = acknowledgementsOn(construct);
    for (const id of ids) {
      const reason = found.get(id);
      assert.ok(reason && reason.trim().length >= 40, `${construct.node.path}: ${id}`);
    }
  };
  acks(
    scheduler.role!,
    'AwsSolutions-IAM5[Resource::*]',
    `AwsSolutions-IAM5[Resource::${EVENT_OBJECTS.replace('/events/*', '/uploads/*')}]`,
    `AwsSolutions-IAM5[Resource::${EVENT_OBJECTS.replace('/events/*', '/*/attachments/*')}]`,
    `AwsSolutions-IAM5[Resource::${EVENT_OBJECTS}]`,
    `AwsSolutions-IAM5[Resource::${SCHEDULE_ARNS}]`,
  );
  acks(scheduler.node.defaultChild!, 'AwsSolutions-L1');
  for (const queue of [schedules.deadLetterQueue, events.deadLetterQueue, events.failedInvocations]) {
    acks(queue.node.defaultChild!, 'AwsSolutions-SQS3');
  }
  // Nothing acknowledged on the bucket notifications handler's role: AWSLambdaBasicExecutionRole is
  // replaced by writes to its own log group (custom-resource-functions.ts).
  assert.equal(acknowledgementsOn(events.notificationsHandler.node.findChild('Role')).size, 0);
  // Nothing acknowledged on the schedule role: it has no wildcard and no managed policy.
  assert.equal(acknowledgementsOn(schedules.role).size, 0);

  for (const [mode, synthesized] of [
    ['isolated', { app }],
    ['egress', synth({ settings: { sandboxNetwork: 'egress' } })],
  ] as const) {
    const report = new AwsSolutionsChecks().validateScope(synthesized.app);
    assert.deepEqual(
      report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath).join(', ')}`),
      [],
      mode,
    );
  }
});
