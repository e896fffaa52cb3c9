// What CloudFormation would make of each resource locally: physical names, Ref and Fn::GetAtt, and
// the intrinsics around them; and that resolveIntrinsics (the local cloud's wiring) is unchanged.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { localGetAtt, localPhysicalName, localRef, localSecretArn, resolveCloudFormation } from '../src/resources.ts';
import { localFunctionArn, localStateMachineArn, resolveIntrinsics } from '../src/template.ts';

const A = (service: string, resource: string) => `arn:aws:${service}:local:000000000000:${resource}`;

const template = {
  Resources: {
    Table: { Type: 'AWS::DynamoDB::Table', Properties: { TableName: 'threads' } },
    UnnamedTable: { Type: 'AWS::DynamoDB::Table', Properties: {} },
    Bucket: { Type: 'AWS::S3::Bucket', Properties: {} },
    Inbox: { Type: 'AWS::SQS::Queue', Properties: { FifoQueue: true } },
    Plain: { Type: 'AWS::SQS::Queue', Properties: {} },
    Machine: {
      Type: 'AWS::StepFunctions::StateMachine',
      Properties: { StateMachineName: { 'Fn::Join': ['-', [{ Ref: 'AWS::StackName' }, 'Run']] } },
    },
    Fn: { Type: 'AWS::Lambda::Function', Properties: {} },
    NamedFn: { Type: 'AWS::Lambda::Function', Properties: { FunctionName: 'Threadwork-Scheduler' } },
    FnVersionA: { Type: 'AWS::Lambda::Version', Properties: { FunctionName: { Ref: 'Fn' } } },
    FnVersionB: { Type: 'AWS::Lambda::Version', Properties: { FunctionName: { Ref: 'Fn' } } },
    FnAlias: { Type: 'AWS::Lambda::Alias', Properties: { FunctionName: { Ref: 'Fn' }, Name: 'live' } },
    Cluster: { Type: 'AWS::ECS::Cluster', Properties: {} },
    TaskDef: { Type: 'AWS::ECS::TaskDefinition', Properties: { Family: 'sandbox' } },
    Secret: { Type: 'AWS::SecretsManager::Secret', Properties: { Name: 'Threadwork/SlackCredentials' } },
    Bus: { Type: 'AWS::Events::EventBus', Properties: { Name: 'Threadwork-events' } },
    BusRule: { Type: 'AWS::Events::Rule', Properties: { EventBusName: { Ref: 'Bus' } } },
    Group: { Type: 'AWS::Scheduler::ScheduleGroup', Properties: { Name: 'Threadwork-events' } },
    Role: { Type: 'AWS::IAM::Role', Properties: { Path: '/service/' } },
    Logs: { Type: 'AWS::Logs::LogGroup', Properties: {} },
    Vpc: { Type: 'AWS::EC2::VPC', Properties: {} },
    Subnet: { Type: 'AWS::EC2::Subnet', Properties: {} },
    Topic: { Type: 'AWS::SNS::Topic', Properties: {} },
    Key: { Type: 'AWS::KMS::Key', Properties: {} },
    Alarm: { Type: 'AWS::CloudWatch::Alarm', Properties: {} },
    Dashboard: { Type: 'AWS::CloudWatch::Dashboard', Properties: { DashboardName: 'ops' } },
    Database: { Type: 'AWS::Glue::Database', Properties: {} },
  },
};

test('physical names: the template’s name, or local-<LogicalId> (a bucket lowercased, a FIFO queue with .fifo)', () => {
  const names = Object.fromEntries(
    ['Table', 'UnnamedTable', 'Bucket', 'Inbox', 'Plain', 'Machine', 'Fn', 'NamedFn', 'Cluster', 'TaskDef', 'Role'].map((id) => [
      id,
      localPhysicalName(template, id),
    ]),
  );
  assert.deepEqual(names, {
    Table: 'threads',
    UnnamedTable: 'local-UnnamedTable',
    Bucket: 'local-bucket',
    Inbox: 'local-Inbox.fifo',
    Plain: 'local-Plain',
    Machine: 'Threadwork-Run',
    // Functions keep their logical id: the name localFunctionArn (the local wiring) uses.
    Fn: 'Fn',
    NamedFn: 'Threadwork-Scheduler',
    Cluster: 'local-Cluster',
    TaskDef: 'sandbox',
    Role: 'local-Role',
  });
  const long = { Resources: { ['R'.repeat(80)]: { Type: 'AWS::IAM::Role', Properties: {} } } };
  assert.equal(localPhysicalName(long, 'R'.repeat(80)).length, 64, 'a role name is at most 64 characters');
  assert.throws(() => localPhysicalName(template, 'Database'), /No local physical name for Database \(AWS::Glue::Database\)/);
});

test('Ref and Fn::GetAtt yield what CloudFormation yields, in the local region and account', () => {
  const cases: [string, string | undefined, string][] = [
    ['Table', undefined, 'threads'],
    ['Table', 'Arn', A('dynamodb', 'table/threads')],
    ['Table', 'StreamArn', A('dynamodb', 'table/threads/stream/1970-01-01T00:00:00.000')],
    ['Bucket', undefined, 'local-bucket'],
    ['Bucket', 'Arn', 'arn:aws:s3:::local-bucket'],
    ['Inbox', undefined, 'https://sqs.local.amazonaws.com/000000000000/local-Inbox.fifo'],
    ['Inbox', 'Arn', A('sqs', 'local-Inbox.fifo')],
    ['Inbox', 'QueueName', 'local-Inbox.fifo'],
    ['Machine', undefined, A('states', 'stateMachine:Threadwork-Run')],
    ['Machine', 'Name', 'Threadwork-Run'],
    ['Fn', undefined, 'Fn'],
    ['Fn', 'Arn', A('lambda', 'function:Fn')],
    ['FnVersionA', undefined, A('lambda', 'function:Fn:1')],
    ['FnVersionB', undefined, A('lambda', 'function:Fn:2')],
    ['FnVersionB', 'Version', '2'],
    ['FnAlias', undefined, A('lambda', 'function:Fn:live')],
    ['Cluster', undefined, 'local-Cluster'],
    ['Cluster', 'Arn', A('ecs', 'cluster/local-Cluster')],
    ['TaskDef', undefined, A('ecs', 'task-definition/sandbox:1')],
    ['Secret', undefined, localSecretArn('Threadwork/SlackCredentials')],
    ['Bus', undefined, 'Threadwork-events'],
    ['Bus', 'Arn', A('events', 'event-bus/Threadwork-events')],
    ['BusRule', 'Arn', A('events', 'rule/Threadwork-events/local-BusRule')],
    ['Group', 'Arn', A('scheduler', 'schedule-group/Threadwork-events')],
    ['Role', undefined, 'local-Role'],
    ['Role', 'Arn', 'arn:aws:iam::000000000000:role/service/local-Role'],
    ['Logs', 'Arn', A('logs', 'log-group:local-Logs:*')],
    ['Topic', undefined, A('sns', 'local-Topic')],
    ['Topic', 'TopicName', 'local-Topic'],
    ['Alarm', undefined, 'local-Alarm'],
    ['Alarm', 'Arn', A('cloudwatch', 'alarm:local-Alarm')],
    ['Dashboard', undefined, 'ops'],
  ];
  for (const [id, attribute, expected] of cases) {
    assert.equal(attribute ? localGetAtt(template, id, attribute) : localRef(template, id), expected, `${id} ${attribute ?? 'Ref'}`);
  }
  assert.match(localRef(template, 'Vpc'), /^vpc-[0-9a-f]{17}$/);
  assert.match(localGetAtt(template, 'Vpc', 'DefaultSecurityGroup'), /^sg-[0-9a-f]{17}$/);
  assert.match(localRef(template, 'Subnet'), /^subnet-[0-9a-f]{17}$/);
  assert.throws(() => localGetAtt(template, 'Bucket', 'Nope'), /Fn::GetAtt Bucket.Nope/);
  assert.match(
    localGetAtt(template, 'Key', 'Arn'),
    /^arn:aws:kms:local:000000000000:key\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
  );
  assert.throws(() => localRef(template, 'Database'), /AWS::Glue::Database/);
});

test('resolveCloudFormation: pseudo parameters, Fn::Join, Fn::Sub (both forms), Fn::Select, Fn::Split', () => {
  const value = {
    join: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':s3:::', { Ref: 'Bucket' }, '/*']] },
    sub: { 'Fn::Sub': '${AWS::AccountId}.dkr.ecr.${AWS::Region}.${AWS::URLSuffix}/${Table}:${Table.Arn}:${!Literal}' },
    subWithVariables: { 'Fn::Sub': ['${Name}-${AWS::StackName}', { Name: { Ref: 'Bus' } }] },
    select: { 'Fn::Select': [1, { 'Fn::Split': ['/', 'a/b/c'] }] },
  };
  assert.deepEqual(resolveCloudFormation(template, value), {
    join: 'arn:aws:s3:::local-bucket/*',
    sub: `000000000000.dkr.ecr.local.amazonaws.com/threads:${A('dynamodb', 'table/threads')}:\${Literal}`,
    subWithVariables: 'Threadwork-events-Threadwork',
    select: 'b',
  });
  assert.throws(() => resolveCloudFormation(template, { 'Fn::If': ['c', 1, 2] }), /Unsupported intrinsic Fn::If/);
});

test('resolveIntrinsics, for the local wiring, keeps its Lambda, table and state machine values', () => {
  assert.equal(resolveIntrinsics(template, { Ref: 'FnVersionA' }), localFunctionArn('Fn'));
  assert.equal(resolveIntrinsics(template, { 'Fn::GetAtt': ['Fn', 'Arn'] }), localFunctionArn('Fn'));
  assert.equal(resolveIntrinsics(template, { Ref: 'Table' }), 'threads');
  assert.equal(resolveIntrinsics(template, { Ref: 'Machine' }), localStateMachineArn('Machine'));
  assert.equal(resolveIntrinsics(template, { Ref: 'Bus' }), 'local-Bus');
  assert.equal(resolveIntrinsics(template, { 'Fn::Sub': '${Table}/${AWS::Region}' }), 'threads/local');
});
