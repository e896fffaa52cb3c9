// Handler initialisation: a failed init is tried again on the next invocation, and a rotated Slack
// secret reaches the chat without a cold start. Real SDK clients against local stand-ins.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { CreateQueueCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { startSqsAndS3, type Emulator } from '../../packages/local-cloud/src/emulators.ts';
import { LOCAL_CREDENTIALS as credentials } from '../support/dynamo.ts';
import { startLocalSecretsManager, type LocalSecretsManager } from '../../packages/local-cloud/src/secrets-manager.ts';

let sqsS3: Emulator;
let secrets: LocalSecretsManager;
const SECRET_ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:slack-AbCdEf';
let sqs: SQSClient;
let queueUrl: string;

before(async () => {
  [sqsS3, secrets] = await Promise.all([startSqsAndS3(), startLocalSecretsManager([{ arn: SECRET_ARN, name: 'slack', value: undefined }])]);
  sqs = new SQSClient({ endpoint: sqsS3.endpoint, region: 'us-east-1', credentials, useQueueUrlAsEndpoint: false });
  queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: 'inbox.fifo', Attributes: { FifoQueue: 'true' } }))).QueueUrl!;
  // What a Lambda container has: the handlers' clients read these when first used.
  Object.assign(process.env, {
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    AWS_ENDPOINT_URL_SQS: sqsS3.endpoint,
    AWS_ENDPOINT_URL_SECRETS_MANAGER: secrets.endpoint,
    LOG_LEVEL: 'silent',
  });
});
after(async () => {
  sqs.destroy();
  await Promise.all([sqsS3.stop(), secrets.close()]);
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

test('chatFromEnv: the same chat while the secret holds, a new one (set up again) once it rotates', async () => {
  const { chatFromEnv } = await import('../../shared/handler-context/chat.ts');
  const { handlerLogger } = await import('../../shared/handler-context/logger.ts');
  const { readEnv, webhookEnv } = await import('../../shared/env.ts');
  secrets.secret(SECRET_ARN)!.value = JSON.stringify({ signingSecret: 'signing-1', botToken: 'xoxb-1' });
  const env = readEnv(webhookEnv, {
    TABLE_NAME: 'table',
    DATA_BUCKET: 'bucket',
    STATE_MACHINE_ARN: 'arn:aws:states:us-east-1:123456789012:stateMachine:run',
    INBOX_QUEUE_URL: queueUrl,
    SLACK_SECRET_ARN: SECRET_ARN,
    SLACK_SECRET_MAX_AGE_SECONDS: '0',
  });
  const setUp: unknown[] = [];
  const loadChat = chatFromEnv(handlerLogger('test'), env, { setup: (chat) => setUp.push(chat) });
  const first = await loadChat();
  assert.equal(await loadChat(), first);
  secrets.secret(SECRET_ARN)!.value = JSON.stringify({ signingSecret: 'signing-2', botToken: 'xoxb-2' });
  const second = await loadChat();
  assert.notEqual(second, first);
  assert.deepEqual(setUp, [first, second]);
});
