import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeFailure, parseStepFailure } from '../../shared/run/failures.ts';
import { WorkspaceSyncError } from '../../shared/sandbox/sync-notes.ts';

const MODEL = 'global.anthropic.claude-sonnet-4-5-20250929-v1:0';
const PLAIN_MODEL = 'anthropic.claude-sonnet-4-5-20250929-v1:0';
const describe = (errorType: string, errorMessage: string, modelId = MODEL) => describeFailure({ errorType, errorMessage }, modelId);

// Bedrock's own wording of each error, as the runtime API answers it.
const MARKETPLACE_DENIED =
  'Model access is denied due to IAM user or service role is not authorized to perform the required AWS Marketplace actions (aws-marketplace:ViewSubscriptions, aws-marketplace:Subscribe) to enable access to this model. Refer to the Amazon Bedrock documentation for further details. Your AWS Marketplace subscription for this model cannot be completed at this time. If you recently fixed this issue, try again after 2 minutes.';
const USE_CASE_MISSING =
  'Model use case details have not been submitted for this account. Fill out the Anthropic use case details form before using the model. If you have already filled out the form, try again in 15 minutes.';
const ON_DEMAND = `Invocation of model ID ${PLAIN_MODEL} with on-demand throughput isn't supported. Retry your request with the ID or ARN of an inference profile that contains this model.`;
const IAM_DENIED = `User: arn:aws:sts::123456789012:assumed-role/agent/step is not authorized to perform: bedrock:InvokeModelWithResponseStream on resource: arn:aws:bedrock:us-east-1::foundation-model/${PLAIN_MODEL} because no identity-based policy allows the bedrock:InvokeModelWithResponseStream action`;

test('failures: the Marketplace subscription denial says who must call the model once, with which permissions', () => {
  const text = describe('AccessDeniedException', MARKETPLACE_DENIED);
  assert.match(text, new RegExp(`can't use the model \`${MODEL.replaceAll('.', '\\.')}\` yet`));
  assert.match(text, /`aws-marketplace:Subscribe` and `aws-marketplace:ViewSubscriptions`/);
  assert.match(text, /npm run doctor -- --stack <stack name>/);
  assert.match(text, /Bedrock console playground/);
  assert.match(text, /use case form/);
  assert.match(text, /up to 15 minutes/);
});

test("failures: Anthropic's missing use case form says where to submit it", () => {
  for (const type of ['ResourceNotFoundException', 'AccessDeniedException']) {
    const text = describe(type, USE_CASE_MISSING);
    assert.match(text, /Anthropic requires its use case form once per AWS account/);
    assert.match(text, /Model catalog, choose the model and submit the use case details/);
  }
});

test('failures: on-demand throughput not supported names the inference profile id to deploy', () => {
  const text = describe('ValidationException', ON_DEMAND, PLAIN_MODEL);
  assert.match(text, /served only through an inference profile/);
  assert.match(text, new RegExp(`npx cdk deploy -c modelId=us\\.${PLAIN_MODEL.replaceAll('.', '\\.')}\``));
  assert.match(text, /`eu\.`, `apac\.` or `global\.` profile/);
});

test('failures: a model the role may not call (another id than the deployed one) says how to deploy it', () => {
  const text = describe('AccessDeniedException', IAM_DENIED, PLAIN_MODEL);
  assert.match(text, /IAM policy allows only the model set by the deployment setting `modelId`/);
  assert.match(text, new RegExp(`-c modelId=${PLAIN_MODEL.replaceAll('.', '\\.')}`));
});

test('failures: a model missing from the Region, or a Legacy one, says to pick another id', () => {
  const missing = describe('ResourceNotFoundException', 'Model not found.');
  assert.match(missing, /not available in this deployment's Region/);
  assert.match(missing, /`us\.anthropic\.claude-sonnet-4-5-20250929-v1:0`/);
  assert.match(describe('ValidationException', 'The provided model identifier is invalid.'), /not available in this deployment's Region/);
  const legacy = describe(
    'ResourceNotFoundException',
    'Access denied. This Model is marked by provider as Legacy and you have not been actively using the model in the last 15 days.',
  );
  assert.match(legacy, /marked Legacy by its provider/);
});

test('failures: credentials, throttling, other validation errors, timeouts and the rest', () => {
  assert.match(describe('CredentialsProviderError', 'Could not load credentials from any providers'), /can't reach the model/);
  assert.match(describe('AccessDeniedException', 'You do not have access'), /can't reach the model/);
  assert.match(describe('ThrottlingException', 'Too many requests'), /overloaded/);
  assert.match(describe('ValidationException', 'Input is too long for requested model.'), /rejected the request: Input is too long/);
  assert.match(describe('States.Timeout', ''), /took too long/);
  assert.match(describe('TypeError', 'x is undefined'), /something went wrong while answering \(TypeError\)/);
});

test('failures: a Lambda error cause is unwrapped', () => {
  const cause = JSON.stringify({ errorType: 'AccessDeniedException', errorMessage: MARKETPLACE_DENIED });
  assert.deepEqual(parseStepFailure({ Error: 'AccessDeniedException', Cause: cause }), {
    errorType: 'AccessDeniedException',
    errorMessage: MARKETPLACE_DENIED,
  });
  assert.deepEqual(parseStepFailure({ Error: 'States.Timeout' }), { errorType: 'States.Timeout', errorMessage: 'unknown error' });
});

test("a failed sync is named as one, never as the model's rejection, and quotes none of the AWS error", () => {
  const cause = Object.assign(
    new Error(
      'User: arn:aws:sts::123456789012:assumed-role/Stack-SandboxStepRole/fn is not authorized to perform: s3:PutObject on resource: arn:aws:s3:::bucket/slack/C1/1.2/scratch/notes.txt',
    ),
    { name: 'AccessDenied' },
  );
  const error = new WorkspaceSyncError(cause);
  const text = describeFailure({ errorType: error.name, errorMessage: error.message }, 'some-model');
  assert.equal(text, "Saving the files of this thread's sandbox failed, so I stopped. The thread still works: please try again.");
  assert.match(describeFailure({ errorType: 'ValidationException', errorMessage: 'bad input' }, 'm'), /The model rejected the request/);
});
