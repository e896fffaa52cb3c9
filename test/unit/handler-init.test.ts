// Handler initialisation: a failed init is tried again on the next invocation. Real SDK clients
// against local stand-ins.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { CreateQueueCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { startSqsAndS3, type Emulator } from '../../infra/local/emulators.ts';

const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
let sqsS3: Emulator;
let sqs: SQSClient;
let queueUrl: string;

before(async () => {
  sqsS3 = await startSqsAndS3();
  sqs = new SQSClient({ endpoint: sqsS3.endpoint, region: 'us-east-1', credentials, useQueueUrlAsEndpoint: false });
  queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: 'inbox.fifo', Attributes: { FifoQueue: 'true' } }))).QueueUrl!;
  // What a Lambda container has: the handlers' clients read these when first used.
  Object.assign(process.env, {
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    AWS_ENDPOINT_URL_SQS: sqsS3.endpoint,
    LOG_LEVEL: 'silent',
  });
});
after(async () => {
  sqs.destroy();
  await sqsS3.stop();
});

test('scheduler: an init that failed is tried again on the next firing', async () => {
  Object.assign(process.env, {
    TABLE_NAME: 'table',
    DATA_BUCKET: 'bucket',
    INBOX_QUEUE_URL: queueUrl,
    SCHEDULE_GROUP_NAME: 'events',
    SCHEDULER_ROLE_ARN: 'arn:aws:iam::123456789012:role/scheduler',
    SCHEDULER_TARGET_ARN: 'arn:aws:lambda:us-east-1:123456789012:function:scheduler',
    SCHEDULE_DLQ_ARN: 'arn:aws:sqs:us-east-1:123456789012:schedule-dlq',
    SLACK_SIGNING_SECRET: 'signing',
  });
  delete process.env.SLACK_BOT_TOKEN;
  delete process.env.SLACK_SECRET_ARN;
  const { handler } = await import('../../functions/scheduler/handler.ts');
  const firing = {
    kind: 'immediate',
    origin: 'events/hello.json',
    firingId: 'ev-hello-1',
    text: 'hello',
    threadId: 'slack:C1:1700000000.000100',
  };

  await assert.rejects(
    handler(firing),
    /Invalid environment: SLACK_SECRET_ARN: is not set, nor are SLACK_SIGNING_SECRET and SLACK_BOT_TOKEN/,
  );
  process.env.SLACK_BOT_TOKEN = 'xoxb-test';
  assert.deepEqual(await handler(firing), { fired: true });

  const received = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 1 }));
  assert.equal(received.Messages?.length, 1);
  assert.equal(JSON.parse(received.Messages![0]!.Body!).text, 'hello');
});
