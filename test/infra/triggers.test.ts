// Template tests for declared triggers: each one's rule on the default bus (its pattern as written,
// the scheduler function as target with the trigger in the input), its dead-letter queue and alarm,
// read access to exactly an S3 trigger's bucket and prefix, cdk-nag; a bad declaration fails synth.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AwsSolutionsChecks } from 'cdk-nag';
import { flatten, logicalId, synth } from './synth.ts';

const TRIGGERS = [
  {
    name: 'prod-alarms',
    source: {
      eventPattern: {
        source: ['aws.cloudwatch'],
        'detail-type': ['CloudWatch Alarm State Change'],
        detail: { state: { value: ['ALARM'] } },
      },
    },
    target: { adapterId: 'slack', channelId: 'C0OPS' },
    text: 'Alarm <{detail.alarmName}> is {detail.state.value}',
    rateLimit: { firings: 10, perMinutes: 60 },
  },
  {
    name: 'incoming-csv',
    source: { s3: { bucket: 'team-incoming', prefix: 'incoming/', suffix: '.csv' } },
    target: { threadId: 'slack:C0DATA:1700000000.000100' },
  },
];

type RuleTarget = {
  Arn: unknown;
  DeadLetterConfig: unknown;
  RetryPolicy: unknown;
  InputTransformer: { InputTemplate: string };
};
type Properties = Record<string, unknown> & {
  Targets: RuleTarget[];
  PolicyDocument: { Statement: { Action: string | string[]; Resource: unknown }[] };
};
type Resource = { Type: string; Properties: Properties };
const { app, stack, template } = synth({ settings: { triggers: TRIGGERS } });
const resources = template.toJSON().Resources as Record<string, Resource>;
const schedulerArn = { 'Fn::GetAtt': [logicalId(stack, stack.functions.scheduler), 'Arn'] };

test('each declared trigger is a rule on the default bus with its own pattern, targeting the scheduler function with the trigger in its input', () => {
  const [alarms, csv] = stack.triggers.declared;
  const rule = (t: typeof alarms) => resources[logicalId(stack, t!.rule)]!.Properties;
  const alarmRule = rule(alarms);
  assert.equal(alarmRule.EventBusName, undefined, 'the default bus');
  assert.deepEqual(alarmRule.EventPattern, TRIGGERS[0]!.source.eventPattern);
  assert.equal(alarmRule.Targets.length, 1);
  const target = alarmRule.Targets[0]!;
  assert.deepEqual(target.Arn, schedulerArn);
  assert.deepEqual(target.DeadLetterConfig, { Arn: { 'Fn::GetAtt': [logicalId(stack, alarms!.deadLetterQueue), 'Arn'] } });
  assert.deepEqual(target.RetryPolicy, { MaximumEventAgeInSeconds: 3600, MaximumRetryAttempts: 3 });
  const templateText: string = target.InputTransformer.InputTemplate;
  assert.ok(templateText.endsWith('"event": <aws.events.event.json>}'), templateText);
  // The trigger's own angle brackets are escaped, so EventBridge sees only its one placeholder.
  assert.equal(templateText.match(/<[^>]*>/g)?.length, 1);
  const input = JSON.parse(templateText.replace('<aws.events.event.json>', 'null')) as { trigger: unknown };
  assert.deepEqual(input.trigger, {
    name: 'prod-alarms',
    kind: 'pattern',
    target: { adapterId: 'slack', channelId: 'C0OPS' },
    text: 'Alarm <{detail.alarmName}> is {detail.state.value}',
    rateLimit: { firings: 10, perMinutes: 60 },
  });

  assert.deepEqual(rule(csv).EventPattern, {
    source: ['aws.s3'],
    'detail-type': ['Object Created'],
    detail: { bucket: { name: ['team-incoming'] }, object: { key: [{ wildcard: 'incoming/*.csv' }] } },
  });
  // EventBridge may invoke the function for these rules only.
  for (const t of [alarms, csv]) {
    const permission = Object.values(resources).find(
      (r) =>
        r.Type === 'AWS::Lambda::Permission' &&
        JSON.stringify(r.Properties.SourceArn) === JSON.stringify({ 'Fn::GetAtt': [logicalId(stack, t!.rule), 'Arn'] }),
    );
    assert.equal(permission?.Properties.Principal, 'events.amazonaws.com', t!.declaration.name);
  }
});

test("each trigger has a dead-letter queue (SSE, 14 days) with an alarm; an S3 trigger's function reads exactly its bucket and prefix", () => {
  for (const t of stack.triggers.declared) {
    const queue = resources[logicalId(stack, t.deadLetterQueue)]!.Properties;
    assert.equal(queue.SqsManagedSseEnabled, true);
    assert.equal(queue.MessageRetentionPeriod, 14 * 24 * 3600);
    const alarm = resources[logicalId(stack, t.alarm)]!.Properties;
    assert.deepEqual(alarm.Dimensions, [
      { Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(stack, t.deadLetterQueue), 'QueueName'] } },
    ]);
    assert.equal(alarm.Threshold, 0);
  }
  const statements = Object.values(resources)
    .filter((r) => r.Type === 'AWS::IAM::Policy')
    .flatMap((p) => p.Properties.PolicyDocument.Statement);
  const external = statements.filter((s) => JSON.stringify(s.Resource).includes('team-incoming'));
  assert.equal(external.length, 1);
  assert.equal(external[0]!.Action, 's3:GetObject');
  const named = (Array.isArray(external[0]!.Resource) ? external[0]!.Resource : [external[0]!.Resource]).map(flatten);
  assert.deepEqual(
    named.filter((arn) => arn.includes('team-incoming')),
    ['arn:<AWS::Partition>:s3:::team-incoming/incoming/*'],
  );
});

test('cdk-nag: nothing left unacknowledged with triggers declared', () => {
  const report = new AwsSolutionsChecks().validateScope(app);
  assert.deepEqual(
    report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath).join(', ')}`),
    [],
  );
});

test('an invalid declaration fails synth, naming the trigger and the field', () => {
  assert.throws(
    () => synth({ settings: { triggers: [{ ...TRIGGERS[0], target: { adapterId: 'slack' } }] } }),
    /trigger "prod-alarms" \(triggers\[0\]\): "target" "adapterId" needs "channelId"/,
  );
  assert.throws(
    () => synth({ settings: { triggers: [{ name: 'x', source: { s3: { bucket: 'UPPER' } }, target: { threadId: 'slack:C1:1.2' } }] } }),
    /trigger "x" \(triggers\[0\]\): "source\.s3\.bucket" is not a bucket name/,
  );
});
