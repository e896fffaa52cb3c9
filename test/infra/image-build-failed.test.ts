// A sandbox image build that dies before its buildspec answers CloudFormation: the function behind
// the rule on CodeBuild's state changes answers FAILED at once, with the log link, to the response
// URL the build carries. A local HTTP server stands in for that presigned S3 URL; the event is shaped
// as CodeBuild documents its "Build State Change" events.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import type { EventBridgeEvent } from 'aws-lambda';
import { handler } from '../../infra/custom-resources/image-build-failed.ts';
import { PROJECT_ROOT } from '../../infra/function-entries.ts';

interface Received {
  method: string;
  contentType: string | undefined;
  body: Record<string, unknown>;
}

let server: Server;
let responseUrl: string;
const received: Received[] = [];
let answerStatus = 200;

before(async () => {
  server = createServer((request: IncomingMessage, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({
        method: request.method!,
        contentType: request.headers['content-type'],
        body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>,
      });
      response.statusCode = answerStatus;
      response.end(answerStatus === 200 ? '' : '<Error><Code>AccessDenied</Code></Error>');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  responseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/cloudformation-response?X-Amz-Signature=abc`;
});

after(() => new Promise((resolve) => server.close(resolve)));

const BUILD_ID = 'arn:aws:codebuild:eu-west-1:123456789012:build/ContainerImageBuildArm64:4b1f0c2e-0000-4000-8000-000000000001';
const DEEP_LINK =
  'https://console.aws.amazon.com/cloudwatch/home?region=eu-west-1#logEvent:group=/aws/codebuild/ContainerImageBuildArm64;stream=4b1f0c2e';

/** What deploy-time-build's function gives the build (lambda/trigger-codebuild: commonEnvironments and ContainerImageBuild's). */
function buildVariables(url: string | null) {
  return [
    ...(url ? [{ name: 'responseURL', value: url, type: 'PLAINTEXT' }] : []),
    { name: 'stackId', value: 'arn:aws:cloudformation:eu-west-1:123456789012:stack/Threadwork/1', type: 'PLAINTEXT' },
    { name: 'requestId', value: 'request-1', type: 'PLAINTEXT' },
    { name: 'logicalResourceId', value: 'SandboxTaskImageBuild1234', type: 'PLAINTEXT' },
    { name: 'imageTag', value: 'f00dfeed', type: 'PLAINTEXT' },
    { name: 'buildCommand', value: 'docker buildx build .', type: 'PLAINTEXT' },
  ];
}

function stateChange(status: string, url: string | null = responseUrl): EventBridgeEvent<'CodeBuild Build State Change', unknown> {
  return {
    version: '0',
    id: 'event-1',
    'detail-type': 'CodeBuild Build State Change',
    source: 'aws.codebuild',
    account: '123456789012',
    time: '2025-01-01T00:00:00Z',
    region: 'eu-west-1',
    resources: [BUILD_ID],
    detail: {
      'build-status': status,
      'project-name': 'ContainerImageBuildArm64',
      'build-id': BUILD_ID,
      'current-phase': 'COMPLETED',
      'current-phase-context': '[]',
      version: '1',
      'additional-information': {
        'timeout-in-minutes': 20,
        'queued-timeout-in-minutes': 10,
        'build-complete': true,
        environment: {
          image: 'aws/codebuild/amazonlinux2-aarch64-standard:3.0',
          'privileged-mode': true,
          'compute-type': 'BUILD_GENERAL1_SMALL',
          type: 'ARM_CONTAINER',
          'environment-variables': buildVariables(url),
        },
        logs: { 'group-name': '/aws/codebuild/ContainerImageBuildArm64', 'stream-name': '4b1f0c2e', 'deep-link': DEEP_LINK },
        phases: [
          { 'phase-type': 'SUBMITTED', 'phase-status': 'SUCCEEDED', 'start-time': 'Jan 1, 2025 12:00:00 AM' },
          { 'phase-type': 'QUEUED', 'phase-status': 'SUCCEEDED', 'start-time': 'Jan 1, 2025 12:00:01 AM' },
          {
            'phase-type': 'PROVISIONING',
            'phase-status': 'CLIENT_ERROR',
            'phase-context': ['CLIENT_ERROR: unable to pull the build image'],
            'start-time': 'Jan 1, 2025 12:00:02 AM',
          },
          { 'phase-type': 'COMPLETED', 'start-time': 'Jan 1, 2025 12:01:00 AM' },
        ],
      },
    },
  };
}

test('a build that failed before its buildspec fails the custom resource now, with the failed phase and the log link', async () => {
  received.length = 0;
  await handler(stateChange('FAILED'));
  assert.equal(received.length, 1);
  const [put] = received;
  assert.equal(put!.method, 'PUT');
  // A presigned S3 PUT signed without a content type.
  assert.equal(put!.contentType, '');
  assert.deepEqual(put!.body, {
    Status: 'FAILED',
    Reason: `The sandbox image build ${BUILD_ID} ended FAILED in PROVISIONING (CLIENT_ERROR: unable to pull the build image). Build log: ${DEEP_LINK}`,
    PhysicalResourceId: 'f00dfeed',
    StackId: 'arn:aws:cloudformation:eu-west-1:123456789012:stack/Threadwork/1',
    RequestId: 'request-1',
    LogicalResourceId: 'SandboxTaskImageBuild1234',
  });
});

test('a stopped or timed-out build fails it the same way', async () => {
  for (const status of ['STOPPED', 'TIMED_OUT']) {
    received.length = 0;
    await handler(stateChange(status));
    assert.equal(received[0]!.body.Status, 'FAILED', status);
    assert.match(
      String(received[0]!.body.Reason),
      new RegExp(`ended ${status} in PROVISIONING.*Build log: ${DEEP_LINK.replace(/[?.]/g, '\\$&')}$`),
    );
  }
});

test('a build not started for a custom resource (no response URL) is left alone', async () => {
  received.length = 0;
  await handler(stateChange('FAILED', null));
  assert.deepEqual(received, []);
});

test('a response URL that refuses the answer fails the invocation, so EventBridge retries it', async () => {
  answerStatus = 403;
  try {
    await assert.rejects(handler(stateChange('FAILED')), /answered 403: <Error><Code>AccessDenied/);
  } finally {
    answerStatus = 200;
  }
});

test('an event that is not a CodeBuild state change is refused, saying what is missing', async () => {
  const event = stateChange('FAILED');
  await assert.rejects(handler({ ...event, detail: { 'build-status': 'FAILED' } }), /CodeBuild Build State Change: project-name/);
});

test("the build variables it reads are the ones deploy-time-build's function sets", () => {
  const source = readFileSync(`${PROJECT_ROOT}node_modules/@cdklabs/deploy-time-build/lambda/trigger-codebuild/index.ts`, 'utf8');
  const containerBuild = source.slice(source.indexOf("case 'ContainerImageBuild'"));
  for (const name of ['responseURL', 'stackId', 'requestId', 'logicalResourceId']) {
    assert.match(source.slice(0, source.indexOf('switch (props.type)')), new RegExp(`name: '${name}'`), name);
  }
  assert.match(containerBuild, /name: 'imageTag'/);
});
