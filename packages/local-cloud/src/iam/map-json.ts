// The awsJson services whose operations name their resource by ARN or name in the body: Step
// Functions (AWSStepFunctions.<Operation>), EventBridge (AWSEvents.PutEvents), Secrets Manager
// (secretsmanager.<Operation>) and KMS (TrentService.Encrypt and Decrypt).
import { keyArnOfCiphertext, kmsKeyArn } from '../kms.ts';
import { localArn, localSecretArn } from '../resources.ts';
import { type Authorization, type AwsHttpRequest, UnknownOperationError, jsonBody, jsonTarget, unique } from './request-types.ts';
import { onAnyResource } from './service-reference.ts';

/** An operation the mapper does not name: authorized against "*" if the reference lists no resource type for it. */
function onAnyResourceOrUnknown(service: string, operation: string): Authorization[] {
  const any = onAnyResource(service, operation);
  if (any) return [any];
  throw new UnknownOperationError(service, operation);
}

const ON_STATE_MACHINE = new Set([
  'StartExecution',
  'StartSyncExecution',
  'ListExecutions',
  'DescribeStateMachine',
  'UpdateStateMachine',
  'DeleteStateMachine',
]);
const ON_EXECUTION = new Set([
  'DescribeExecution',
  'StopExecution',
  'GetExecutionHistory',
  'DescribeStateMachineForExecution',
  'RedriveExecution',
]);

export function stepFunctionsAuthorizations(request: AwsHttpRequest): Authorization[] {
  const operation = jsonTarget(request);
  const input = jsonBody(request);
  const action = `states:${operation}`;
  if (ON_STATE_MACHINE.has(operation)) return [{ action, resource: String(input.stateMachineArn) }];
  if (ON_EXECUTION.has(operation)) return [{ action, resource: String(input.executionArn) }];
  return onAnyResourceOrUnknown('states', operation);
}

// EventBusName may be a name or an ARN; without it, the account's default bus.
function eventBusArn(bus: unknown): string {
  const name = typeof bus === 'string' && bus !== '' ? bus : 'default';
  return name.startsWith('arn:') ? name : localArn('events', `event-bus/${name}`);
}

export function eventBridgeAuthorizations(request: AwsHttpRequest): Authorization[] {
  const operation = jsonTarget(request);
  if (operation !== 'PutEvents') return onAnyResourceOrUnknown('events', operation);
  const entries = (jsonBody(request).Entries ?? []) as { EventBusName?: unknown }[];
  return unique(entries.map((entry) => eventBusArn(entry.EventBusName))).map((resource) => ({ action: 'events:PutEvents', resource }));
}

const ON_SECRET = new Set([
  'GetSecretValue',
  'DescribeSecret',
  'PutSecretValue',
  'UpdateSecret',
  'DeleteSecret',
  'TagResource',
  'UntagResource',
]);

// A SecretId is a name or an ARN; by name, its local ARN (localSecretArn, as the template resolves).
function secretArn(secretId: unknown): string {
  const id = String(secretId);
  return id.startsWith('arn:') ? id : localSecretArn(id);
}

export function secretsManagerAuthorizations(request: AwsHttpRequest): Authorization[] {
  const operation = jsonTarget(request);
  const input = jsonBody(request);
  const action = `secretsmanager:${operation}`;
  if (ON_SECRET.has(operation)) return [{ action, resource: secretArn(input.SecretId) }];
  return onAnyResourceOrUnknown('secretsmanager', operation);
}

// Encrypt names its key; Decrypt's key is the one the ciphertext was made with (KMS reads it from
// the blob), so a grant of kms:Decrypt on another key does not let a function read this one's.
export function kmsAuthorizations(request: AwsHttpRequest): Authorization[] {
  const operation = jsonTarget(request);
  const input = jsonBody(request);
  if (operation === 'Encrypt') return [{ action: 'kms:Encrypt', resource: kmsKeyArn(input.KeyId) }];
  if (operation === 'Decrypt') {
    const key = keyArnOfCiphertext(input.CiphertextBlob) ?? (input.KeyId === undefined ? '*' : kmsKeyArn(input.KeyId));
    return [{ action: 'kms:Decrypt', resource: key }];
  }
  throw new UnknownOperationError('kms', operation);
}
