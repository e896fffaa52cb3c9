// What a Task state does locally: every Task is overridden (otherwise aws-local-stepfunctions would
// call the real AWS APIs) with a handler for its Resource: a Lambda function ARN, the
// lambda:invoke integration (also `.waitForTaskToken`), or the dynamodb getItem / putItem /
// updateItem integrations.
import type { RunOptions } from 'aws-local-stepfunctions';
import {
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
  type DynamoDBClient,
  type GetItemCommandInput,
  type PutItemCommandInput,
  type UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import { isPlainObject } from '../aws-protocol.ts';
import { functionLogicalIdFromArn } from '../template.ts';
import { CALLBACK_TIMEOUT_PARAMETER, forEachState, type Machine } from './definition.ts';
import { newTaskToken, type JsonValue, type TaskTokens } from './task-tokens.ts';

type TaskHandlers = NonNullable<NonNullable<RunOptions['overrides']>['taskResourceLocalHandlers']>;
type TaskHandler = TaskHandlers[string];
export type { JsonValue } from './task-tokens.ts';

export interface TaskContext {
  /** Invokes a function by ARN (qualified by version or alias, or not) or name, as the state machine's role. */
  invokeFunction(functionArn: string, payload: unknown): Promise<unknown>;
  dynamoDb?: DynamoDBClient;
  /** Aborted when the execution ends (stopped, timed out): pending tasks give up. */
  signal: AbortSignal;
  /** The tokens callback tasks wait on, and the execution's `$$.Task` (its Token is renewed per wait). */
  callbacks?: { tokens: TaskTokens; executionArn: string; task: { Token: string } };
}

// Errors that neither Retry nor Catch may handle, like AWS's States.Runtime: aws-local-stepfunctions
// reads these two getters on the thrown error.
class NonRecoverableError extends Error {
  override name = 'States.Runtime';
  get isRetryable(): boolean {
    return false;
  }
  get isCatchable(): boolean {
    return false;
  }
}

/** Step Functions' limit on an execution's input and on the data a state passes on, in bytes (UTF-8). */
export const STATE_DATA_LIMIT = 256 * 1024;

// The state data limit ends the execution: States.ALL does not catch States.DataLimitExceeded.
class DataLimitExceeded extends NonRecoverableError {
  override name = 'States.DataLimitExceeded';
}

function checkStateData(what: string, value: unknown): void {
  const bytes = Buffer.byteLength(JSON.stringify(value ?? null));
  if (bytes > STATE_DATA_LIMIT) {
    throw new DataLimitExceeded(`The ${what} is ${bytes} bytes, over the ${STATE_DATA_LIMIT}-byte limit of a state's data`);
  }
}

// aws-local-stepfunctions matches Retry/Catch ErrorEquals against `error.name` and puts
// `error.message` in the Cause, so a task failure carries the AWS error name and cause that way.
class TaskFailure extends Error {
  constructor(errorName: string, cause: string) {
    super(cause);
    this.name = errorName;
  }
}

export function taskHandlers(definition: Machine, context: TaskContext): TaskHandlers {
  const handlers: TaskHandlers = {};
  forEachState(definition, (name, state) => {
    if (state.Type !== 'Task') return;
    const handler = taskHandlerFor(String(state.Resource), context);
    handlers[name] = (input) =>
      untilStopped(context.signal, async () => {
        checkStateData(`input of state ${name}`, input);
        const result = await handler(input);
        checkStateData(`result of state ${name}`, result);
        return result;
      });
  });
  return handlers;
}

function taskHandlerFor(resource: string, context: TaskContext): TaskHandler {
  if (functionLogicalIdFromArn(resource)) return (input) => invokeLambda(context, resource, input);
  if (/^arn:[^:]+:states:::lambda:invoke$/.test(resource)) return (input) => lambdaInvokeIntegration(context, input);
  if (/^arn:[^:]+:states:::lambda:invoke\.waitForTaskToken$/.test(resource)) return (input) => lambdaInvokeCallback(context, input);
  const dynamoAction = /^arn:[^:]+:states:::dynamodb:(getItem|putItem|updateItem)$/.exec(resource)?.[1];
  if (dynamoAction) return (input) => dynamoDbIntegration(context, dynamoAction, input);
  return () => {
    throw new NonRecoverableError(`Task resource ${resource} is not supported by the local Step Functions`);
  };
}

// Resolves with the task's result unless the execution ends first; never starts a task for an
// ended execution (the library re-runs a state after a Retry wait even when it was aborted).
async function untilStopped(signal: AbortSignal, task: () => Promise<JsonValue> | JsonValue): Promise<JsonValue> {
  const stopped = () => new NonRecoverableError('The execution has ended');
  if (signal.aborted) throw stopped();
  const { promise, reject } = Promise.withResolvers<never>();
  const onAbort = () => reject(stopped());
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    return await Promise.race([Promise.resolve().then(task), promise]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

async function invokeLambda(context: TaskContext, functionArn: string, payload: unknown): Promise<JsonValue> {
  try {
    // Payload and result cross a JSON boundary in AWS: no shared references, undefined → null.
    const result = await context.invokeFunction(functionArn, jsonCopy(payload));
    return jsonCopy(result) as JsonValue;
  } catch (error) {
    throw lambdaFailure(error);
  }
}

/**
 * How a Lambda failure reaches Retry/Catch in AWS: Error = the function's errorType (the JS error's
 * name), Cause = the JSON error payload. Names starting with "Lambda." stand for Lambda service
 * errors (Lambda.ServiceException, Lambda.TooManyRequestsException...), whose Cause is a message.
 */
function lambdaFailure(error: unknown): Error {
  if (error instanceof NonRecoverableError) return error;
  const errorType = error instanceof Error ? error.name : 'Error';
  const errorMessage = error instanceof Error ? error.message : String(error);
  if (errorType.startsWith('Lambda.')) return new TaskFailure(errorType, errorMessage);
  const trace = error instanceof Error && error.stack ? error.stack.split('\n') : [];
  return new TaskFailure(errorType, JSON.stringify({ errorType, errorMessage, trace }));
}

// arn:aws:states:::lambda:invoke: the task input is the Invoke request, the result is the response.
async function lambdaInvokeIntegration(context: TaskContext, input: JsonValue): Promise<JsonValue> {
  const request = (isPlainObject(input) ? input : {}) as { FunctionName?: unknown; Payload?: unknown };
  return { Payload: await invokeLambda(context, String(request.FunctionName), request.Payload ?? {}), StatusCode: 200 };
}

/**
 * arn:aws:states:::lambda:invoke.waitForTaskToken: the function is invoked with the Payload (which
 * carries `$$.Task.Token`); its result is ignored and the task waits for SendTaskSuccess (the
 * output is the task's result) or SendTaskFailure (the task fails with its error and cause). A
 * function error fails the task. The wait ends with States.Timeout after the state's timeout.
 */
async function lambdaInvokeCallback(context: TaskContext, input: JsonValue): Promise<JsonValue> {
  if (!context.callbacks) throw new NonRecoverableError('A .waitForTaskToken Task needs the task tokens of the local Step Functions');
  const { tokens, executionArn, task } = context.callbacks;
  const { [CALLBACK_TIMEOUT_PARAMETER]: timeoutSeconds, ...request } = (isPlainObject(input) ? input : {}) as Record<string, unknown>;
  if (timeoutSeconds !== undefined && !(Number.isInteger(timeoutSeconds) && (timeoutSeconds as number) >= 1)) {
    throw new NonRecoverableError(`The task's timeout must be a positive integer of seconds, not ${JSON.stringify(timeoutSeconds)}`);
  }
  // The token the Parameters just read is this wait's; the next Task entry reads a new one.
  const token = task.Token;
  task.Token = newTaskToken();
  const ended = new AbortController();
  const onStop = () => ended.abort();
  context.signal.addEventListener('abort', onStop, { once: true });
  const timer = timeoutSeconds === undefined ? undefined : setTimeout(() => ended.abort('timeout'), (timeoutSeconds as number) * 1000);
  try {
    const answered = tokens.wait(token, executionArn, ended.signal);
    const invoked = invokeLambda(context, String(request.FunctionName), request.Payload ?? {});
    // A function error fails the task; its result does not end the wait.
    const failed = invoked.then(() => answered);
    const answer = await Promise.race([answered, failed]);
    if (ended.signal.reason === 'timeout') throw new TaskFailure('States.Timeout', 'The task did not get an answer within its timeout');
    if ('output' in answer) return answer.output;
    throw new TaskFailure(answer.error, answer.cause);
  } finally {
    clearTimeout(timer);
    context.signal.removeEventListener('abort', onStop);
    ended.abort();
  }
}

// arn:aws:states:::dynamodb:*: Parameters are the API request in DynamoDB JSON, the result is the
// API response (without SDK metadata); service errors are named "DynamoDB.<ErrorCode>" as in AWS.
async function dynamoDbIntegration(context: TaskContext, action: string, input: JsonValue): Promise<JsonValue> {
  if (!context.dynamoDb) {
    throw new NonRecoverableError(`A dynamodb:${action} Task needs the dynamoDb option of the local Step Functions`);
  }
  try {
    const { $metadata: _metadata, ...response } = await sendDynamoDb(context.dynamoDb, action, input);
    return jsonCopy(response) as JsonValue;
  } catch (error) {
    const name = error instanceof Error ? error.name : 'Error';
    const message = error instanceof Error ? error.message : String(error);
    throw new TaskFailure(`DynamoDB.${name}`, `${message} (Service: DynamoDb, Error Code: ${name})`);
  }
}

function sendDynamoDb(client: DynamoDBClient, action: string, input: JsonValue): Promise<{ $metadata: unknown }> {
  switch (action) {
    case 'getItem':
      return client.send(new GetItemCommand(input as unknown as GetItemCommandInput));
    case 'putItem':
      return client.send(new PutItemCommand(input as unknown as PutItemCommandInput));
    default:
      return client.send(new UpdateItemCommand(input as unknown as UpdateItemCommandInput));
  }
}

// Binary attributes (Uint8Array) travel as base64 strings in JSON, as in AWS. The replacer reads
// the raw value from its holder because a Buffer's toJSON has already run on `item`.
function jsonCopy(value: unknown): unknown {
  const text = JSON.stringify(value ?? null, function (this: Record<string, unknown>, key: string, item: unknown) {
    const raw = this[key];
    return raw instanceof Uint8Array ? Buffer.from(raw).toString('base64') : item;
  });
  return JSON.parse(text) as unknown;
}
