// SQS: the JSON protocol recent SDKs speak (awsJson1.0, X-Amz-Target AmazonSQS.<Operation>) and the
// older query protocol (form-encoded Action=<Operation>). A queue is named by its URL, whose last
// two path segments are the account and the queue name.
import { localArn } from '../resources.ts';
import { LOCAL_ACCOUNT, LOCAL_REGION } from '../template.ts';
import { type Authorization, type AwsHttpRequest, UnknownOperationError, header, jsonBody, jsonTarget } from './request-types.ts';
import { onAnyResource } from './service-reference.ts';

// Batch operations are authorized as their single-message action.
const ACTIONS: Record<string, string> = {
  SendMessage: 'SendMessage',
  SendMessageBatch: 'SendMessage',
  ReceiveMessage: 'ReceiveMessage',
  DeleteMessage: 'DeleteMessage',
  DeleteMessageBatch: 'DeleteMessage',
  ChangeMessageVisibility: 'ChangeMessageVisibility',
  ChangeMessageVisibilityBatch: 'ChangeMessageVisibility',
  GetQueueAttributes: 'GetQueueAttributes',
  SetQueueAttributes: 'SetQueueAttributes',
  DeleteQueue: 'DeleteQueue',
  PurgeQueue: 'PurgeQueue',
  ListQueueTags: 'ListQueueTags',
  TagQueue: 'TagQueue',
  UntagQueue: 'UntagQueue',
  ListDeadLetterSourceQueues: 'ListDeadLetterSourceQueues',
  AddPermission: 'AddPermission',
  RemovePermission: 'RemovePermission',
};

export function queueArnFromUrl(queueUrl: string): string {
  const segments = new URL(queueUrl).pathname.split('/').filter(Boolean);
  const name = segments.at(-1);
  if (!name) throw new Error(`Not a queue URL: ${queueUrl}`);
  return localArn('sqs', name, LOCAL_REGION, segments.at(-2) ?? LOCAL_ACCOUNT);
}

interface SqsInput {
  operation: string;
  get(name: string): string | undefined;
  hasTags: boolean;
}

function readInput(request: AwsHttpRequest): SqsInput {
  if ((header(request, 'content-type') ?? '').startsWith('application/x-www-form-urlencoded')) {
    const form = new URLSearchParams(request.body.toString('utf8'));
    const hasTags = [...form.keys()].some((key) => key.startsWith('Tag.'));
    return { operation: form.get('Action') ?? '', get: (name) => form.get(name) ?? undefined, hasTags };
  }
  const body = jsonBody(request);
  const get = (name: string) => (typeof body[name] === 'string' ? body[name] : undefined);
  return { operation: jsonTarget(request), get, hasTags: Object.keys((body.tags ?? {}) as object).length > 0 };
}

export function sqsAuthorizations(request: AwsHttpRequest): Authorization[] {
  const input = readInput(request);
  const action = ACTIONS[input.operation];
  if (action) return [{ action: `sqs:${action}`, resource: queueArnFromUrl(input.get('QueueUrl') ?? '') }];
  const byName = () => {
    const account = input.get('QueueOwnerAWSAccountId') ?? LOCAL_ACCOUNT;
    return localArn('sqs', input.get('QueueName') ?? '', LOCAL_REGION, account);
  };
  if (input.operation === 'GetQueueUrl') return [{ action: 'sqs:GetQueueUrl', resource: byName() }];
  if (input.operation === 'CreateQueue') {
    // Tags given at creation need sqs:TagQueue as well.
    const create = { action: 'sqs:CreateQueue', resource: byName() };
    return input.hasTags ? [create, { action: 'sqs:TagQueue', resource: byName() }] : [create];
  }
  // ListQueues: authorized against "*" only, as the reference says.
  const any = onAnyResource('sqs', input.operation);
  if (any) return [any];
  throw new UnknownOperationError('sqs', input.operation || '(no operation)');
}
