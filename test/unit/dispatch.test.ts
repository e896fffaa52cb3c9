// The inbox consumer on a batch, through its real clients: DynamoDB Local for the actors, fauxqs for
// S3 (settings.json), and a Step Functions stand-in that refuses one thread's executions.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { ApiError, serveAwsJson } from '../../packages/local-cloud/src/aws-protocol.ts';
import { startSqsAndS3, type Emulator } from '../../packages/local-cloud/src/emulators.ts';
import { getActor } from '../../shared/run/actor.ts';
import { runIdFor } from '../../shared/ids.ts';
import { promptFor as prompt } from '../support/prompts.ts';
import { LOCAL_CREDENTIALS, startTestTable, type TestTable } from '../support/dynamo.ts';

const REFUSED_THREAD = 'slack:C1:2.0000';
let table: TestTable;
let sqsS3: Emulator;
let sfn: { close(): Promise<void>; started: string[] };

before(async () => {
  [table, sqsS3] = await Promise.all([startTestTable(), startSqsAndS3()]);
  const s3 = new S3Client({ endpoint: sqsS3.endpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS, forcePathStyle: true });
  await s3.send(new CreateBucketCommand({ Bucket: 'data' }));
  s3.destroy();
  const started: string[] = [];
  const server = createServer(
    (request, response) =>
      void serveAwsJson(
        {
          service: 'sfn',
          targetPrefix: 'AWSStepFunctions.',
          contentType: 'application/x-amz-json-1.0',
          internalErrorType: 'InternalError',
        },
        {
          StartExecution: (input) => {
            started.push(String(input.name));
            if ((JSON.parse(String(input.input)) as { threadId: string }).threadId === REFUSED_THREAD) {
              throw new ApiError('InvalidExecutionInput', 'refused for the test');
            }
            return {
              executionArn: `${String(input.stateMachineArn).replace(':stateMachine:', ':execution:')}:${String(input.name)}`,
              startDate: 0,
            };
          },
        },
        request,
        response,
      ),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  sfn = { started, close: () => new Promise((resolve) => server.close(() => resolve())) };
  Object.assign(process.env, {
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
    AWS_ENDPOINT_URL_DYNAMODB: table.emulator.endpoint,
    AWS_ENDPOINT_URL_S3: sqsS3.endpoint,
    AWS_S3_FORCE_PATH_STYLE: 'true',
    AWS_ENDPOINT_URL_SFN: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    TABLE_NAME: table.tableName,
    DATA_BUCKET: 'data',
    STATE_MACHINE_ARN: 'arn:aws:states:us-east-1:123456789012:stateMachine:run',
    SLACK_SIGNING_SECRET: 'signing',
    SLACK_BOT_TOKEN: 'xoxb-test',
    LOG_LEVEL: 'silent',
  });
});
after(async () => {
  table.raw.destroy();
  await Promise.all([table.emulator.stop(), sqsS3.stop(), sfn.close()]);
});

function record(messageId: string, group: string, body: string): SQSRecord {
  return {
    messageId,
    receiptHandle: messageId,
    body,
    attributes: { MessageGroupId: group } as SQSRecord['attributes'],
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:123456789012:inbox.fifo',
    awsRegion: 'us-east-1',
  };
}

test('dispatch: a malformed body is dropped, a failure fails the rest of its group, other groups go on', async () => {
  const { handler } = await import('../../functions/ingress/dispatch.ts');
  const ok = 'slack:C1:1.0000';
  const later = 'slack:C1:3.0000';
  const event: SQSEvent = {
    Records: [
      record('m-bad', ok, '{"not": "a prompt"'),
      record('m-ok', ok, JSON.stringify(prompt(ok, '1.0001'))),
      record('m-refused', REFUSED_THREAD, JSON.stringify(prompt(REFUSED_THREAD, '2.0001'))),
      record('m-after-refused', REFUSED_THREAD, JSON.stringify(prompt(REFUSED_THREAD, '2.0002'))),
      record('m-later', later, JSON.stringify(prompt(later, '3.0001'))),
    ],
  };
  const result = await handler(event);
  assert.deepEqual(result.batchItemFailures.map((f) => f.itemIdentifier).sort(), ['m-after-refused', 'm-refused']);
  // The refused group's second prompt was never tried: it waits for the first one's retry. (The
  // threads are admitted at the same time: their starts come in any order.)
  assert.deepEqual([...sfn.started].sort(), [runIdFor(ok, '1.0001'), runIdFor(REFUSED_THREAD, '2.0001'), runIdFor(later, '3.0001')].sort());
  const deps = { db: table.db, tableName: table.tableName, startRun: async () => {} };
  assert.equal((await getActor(deps, ok))?.started, true);
  assert.equal((await getActor(deps, later))?.started, true);
  assert.equal((await getActor(deps, REFUSED_THREAD))?.queue?.length ?? 0, 0);
});
