// Local stand-in for AWS Step Functions. It runs the state machine synthesized by CDK (its ASL is
// resolved out of the CloudFormation template) with aws-local-stepfunctions, and serves the part of
// the Step Functions API that production code calls through @aws-sdk/client-sfn (AWS JSON 1.0
// protocol), so the same code runs unchanged against AWS_ENDPOINT_URL_SFN=<endpoint>.
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import {
  ExecutionAbortedError,
  ExecutionError,
  ExecutionTimeoutError,
  StateMachine,
  type RunOptions,
  type StateMachineDefinition,
} from 'aws-local-stepfunctions';
import {
  DeleteItemCommand,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
  type DeleteItemCommandInput,
  type DynamoDBClient,
  type GetItemCommandInput,
  type PutItemCommandInput,
  type UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import { ApiError, isPlainObject, serveAwsJson } from './aws-protocol.ts';

const PROTOCOL = {
  service: 'step-functions',
  targetPrefix: 'AWSStepFunctions.',
  contentType: 'application/x-amz-json-1.0',
  internalErrorType: 'InternalFailure',
};

// ---------------------------------------------------------------------------------------------
// Local identities: what CloudFormation would resolve at deploy time, resolved for one machine.
// ---------------------------------------------------------------------------------------------

export const LOCAL_PARTITION = 'aws';
export const LOCAL_REGION = 'local';
export const LOCAL_ACCOUNT = '000000000000';

export function localFunctionArn(functionLogicalId: string): string {
  return `arn:${LOCAL_PARTITION}:lambda:${LOCAL_REGION}:${LOCAL_ACCOUNT}:function:${functionLogicalId}`;
}

export function localStateMachineArn(stateMachineLogicalId: string): string {
  return `arn:${LOCAL_PARTITION}:states:${LOCAL_REGION}:${LOCAL_ACCOUNT}:stateMachine:${stateMachineLogicalId}`;
}

/** The function name in a Lambda function ARN (qualifier dropped); locally that is its logical id. */
export function functionLogicalIdFromArn(arn: string): string | undefined {
  const match = /^arn:[^:]+:lambda:[^:]*:[^:]*:function:([^:]+)(?::[^:]+)?$/.exec(arn);
  return match?.[1];
}

// ---------------------------------------------------------------------------------------------
// Template → ASL
// ---------------------------------------------------------------------------------------------

interface TemplateResource {
  Type: string;
  Properties?: Record<string, unknown>;
}

interface CfnTemplate {
  Resources?: Record<string, TemplateResource>;
  Parameters?: Record<string, { Default?: unknown }>;
}

const STATE_MACHINE_TYPE = 'AWS::StepFunctions::StateMachine';
const LAMBDA_TYPES = new Set(['AWS::Lambda::Function', 'AWS::Lambda::Version', 'AWS::Lambda::Alias']);

const PSEUDO_PARAMETERS: Record<string, string> = {
  'AWS::Partition': LOCAL_PARTITION,
  'AWS::Region': LOCAL_REGION,
  'AWS::AccountId': LOCAL_ACCOUNT,
  'AWS::URLSuffix': 'amazonaws.com',
  'AWS::StackName': 'local',
};

export function definitionFromTemplate(
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any CloudFormation template JSON
  template: any,
  stateMachineLogicalId?: string,
): { definition: object; stateMachineLogicalId: string } {
  const cfn = template as CfnTemplate;
  const logicalId = stateMachineLogicalId ?? onlyStateMachineId(cfn);
  const resource = cfn.Resources?.[logicalId];
  if (resource?.Type !== STATE_MACHINE_TYPE) {
    throw new Error(`No ${STATE_MACHINE_TYPE} with logical id ${logicalId} in the template`);
  }
  const properties = resource.Properties ?? {};
  // CloudFormation accepts the ASL inline as an object too (Definition), CDK emits DefinitionString.
  const resolved =
    properties.Definition !== undefined
      ? JSON.stringify(resolveIntrinsics(cfn, properties.Definition))
      : String(resolveIntrinsics(cfn, properties.DefinitionString));
  const substitutions = resolveIntrinsics(cfn, properties.DefinitionSubstitutions ?? {}) as Record<string, unknown>;
  const definition = JSON.parse(applyDefinitionSubstitutions(resolved, substitutions)) as object;
  return { definition, stateMachineLogicalId: logicalId };
}

function onlyStateMachineId(template: CfnTemplate): string {
  const ids = Object.entries(template.Resources ?? {})
    .filter(([, resource]) => resource.Type === STATE_MACHINE_TYPE)
    .map(([id]) => id);
  if (ids.length !== 1 || ids[0] === undefined) {
    throw new Error(`Expected exactly one ${STATE_MACHINE_TYPE} in the template, found ${ids.length}: pass its logical id`);
  }
  return ids[0];
}

function applyDefinitionSubstitutions(definition: string, substitutions: Record<string, unknown>): string {
  return definition.replace(/\$\{([^}]+)\}/g, (whole, key: string) => (key in substitutions ? String(substitutions[key]) : whole));
}

/**
 * Resolves the CloudFormation intrinsics CDK emits (Ref, Fn::GetAtt, Fn::Join, Fn::Sub, Fn::Select,
 * Fn::Split) to local values: Lambda functions/versions/aliases → local function ARN, tables → their
 * name, state machines → local ARN, anything else → a `local-<LogicalId>` placeholder. Exported so
 * the local cloud can resolve other properties (e.g. an EventBridge rule's EventPattern) the same way.
 */
export function resolveIntrinsics(template: object, value: unknown): unknown {
  return resolveValue(template as CfnTemplate, value);
}

function resolveValue(template: CfnTemplate, value: unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => resolveValue(template, item));
  if (!isPlainObject(value)) return value;
  const keys = Object.keys(value);
  const [onlyKey] = keys;
  if (keys.length === 1 && onlyKey !== undefined && (onlyKey === 'Ref' || onlyKey.startsWith('Fn::'))) {
    return resolveIntrinsic(template, onlyKey, value[onlyKey]);
  }
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, resolveValue(template, item)]));
}

function resolveIntrinsic(template: CfnTemplate, intrinsic: string, argument: unknown): unknown {
  const resolve = (item: unknown) => resolveValue(template, item);
  switch (intrinsic) {
    case 'Ref':
      return resolveRef(template, String(argument));
    case 'Fn::GetAtt': {
      const [logicalId, attribute] = Array.isArray(argument) ? argument : String(argument).split('.');
      return resolveGetAtt(template, String(logicalId), String(resolve(attribute)));
    }
    case 'Fn::Join': {
      const [separator, parts] = argument as [string, unknown[]];
      return (resolve(parts) as unknown[]).map(String).join(separator);
    }
    case 'Fn::Select': {
      const [index, list] = argument as [unknown, unknown];
      return (resolve(list) as unknown[])[Number(resolve(index))];
    }
    case 'Fn::Split': {
      const [separator, source] = argument as [string, unknown];
      return String(resolve(source)).split(separator);
    }
    case 'Fn::Sub':
      return resolveSub(template, argument);
    default:
      throw new Error(`Unsupported intrinsic ${intrinsic} in the template`);
  }
}

function resolveSub(template: CfnTemplate, argument: unknown): string {
  const [text, variables] = Array.isArray(argument) ? argument : [argument, {}];
  const resolvedVariables = resolveValue(template, variables) as Record<string, unknown>;
  return String(text).replace(/\$\{(!?)([^}]+)\}/g, (_whole, literal: string, name: string) => {
    if (literal) return `\${${name}}`;
    if (name in resolvedVariables) return String(resolvedVariables[name]);
    const [logicalId, attribute] = name.split('.');
    if (attribute !== undefined && logicalId !== undefined) return String(resolveGetAtt(template, logicalId, attribute));
    return String(resolveRef(template, name));
  });
}

function resolveRef(template: CfnTemplate, logicalId: string): unknown {
  const pseudo = PSEUDO_PARAMETERS[logicalId];
  if (pseudo !== undefined) return pseudo;
  const parameter = template.Parameters?.[logicalId];
  if (parameter) return parameter.Default ?? `local-${logicalId}`;
  const resource = requireResource(template, logicalId);
  if (LAMBDA_TYPES.has(resource.Type)) return localFunctionArn(functionLogicalIdOf(template, logicalId));
  if (resource.Type === 'AWS::DynamoDB::Table') return tableName(resource, logicalId);
  if (resource.Type === STATE_MACHINE_TYPE) return localStateMachineArn(logicalId);
  return `local-${logicalId}`;
}

function resolveGetAtt(template: CfnTemplate, logicalId: string, attribute: string): unknown {
  const resource = requireResource(template, logicalId);
  if (LAMBDA_TYPES.has(resource.Type) && attribute === 'Arn') {
    return localFunctionArn(functionLogicalIdOf(template, logicalId));
  }
  if (resource.Type === 'AWS::DynamoDB::Table' && attribute === 'Arn') {
    return `arn:${LOCAL_PARTITION}:dynamodb:${LOCAL_REGION}:${LOCAL_ACCOUNT}:table/${tableName(resource, logicalId)}`;
  }
  if (resource.Type === STATE_MACHINE_TYPE && attribute === 'Arn') return localStateMachineArn(logicalId);
  if (resource.Type === STATE_MACHINE_TYPE && attribute === 'Name') return logicalId;
  return `local-${logicalId}.${attribute}`;
}

function requireResource(template: CfnTemplate, logicalId: string): TemplateResource {
  const resource = template.Resources?.[logicalId];
  if (!resource) throw new Error(`The template refers to ${logicalId}, which it does not define`);
  return resource;
}

function tableName(resource: TemplateResource, logicalId: string): string {
  const name = resource.Properties?.TableName;
  return typeof name === 'string' ? name : `local-${logicalId}`;
}

// A version or alias names its function in FunctionName (a Ref/GetAtt to the function): locally
// every one of them invokes the function's own handler.
function functionLogicalIdOf(template: CfnTemplate, logicalId: string): string {
  const resource = requireResource(template, logicalId);
  if (resource.Type === 'AWS::Lambda::Function') return logicalId;
  const functionName = String(resolveValue(template, resource.Properties?.FunctionName));
  return functionLogicalIdFromArn(functionName) ?? functionName;
}

// ---------------------------------------------------------------------------------------------
// Executions
// ---------------------------------------------------------------------------------------------

export type ExecutionStatus = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT' | 'ABORTED';

export interface StateEntered {
  name: string;
  type: string;
  enteredAt: number;
  /** Map iteration index, for states inside a Map. */
  mapIndex?: number;
}

export interface LocalExecution {
  executionArn: string;
  stateMachineArn: string;
  name: string;
  status: ExecutionStatus;
  /** Parsed execution input / output (the API returns them as JSON strings). */
  input: unknown;
  output?: unknown;
  error?: string;
  cause?: string;
  startDate: Date;
  stopDate?: Date;
  history: StateEntered[];
}

export interface ExecutionStatusChangeEvent {
  version: '0';
  id: string;
  'detail-type': 'Step Functions Execution Status Change';
  source: 'aws.states';
  account: string;
  time: string;
  region: string;
  resources: string[];
  detail: {
    executionArn: string;
    stateMachineArn: string;
    name: string;
    status: ExecutionStatus;
    startDate: number;
    stopDate: number | null;
    input: string;
    output: string | null;
    error: string | null;
    cause: string | null;
  };
}

export interface LocalStepFunctionsOptions {
  /** ASL, e.g. from definitionFromTemplate. JSONPath only (no JSONata). */
  definition: object;
  stateMachineArn: string;
  invokeFunction(functionLogicalId: string, payload: unknown): Promise<unknown>;
  /** Executes arn:aws:states:::dynamodb:* Task states. */
  dynamoDb?: DynamoDBClient;
  onStatusChange?(event: ExecutionStatusChangeEvent): void | Promise<void>;
  /** Overrides every Retry wait (ms), so tests are fast. Default: the definition's intervals. */
  retryIntervalMs?: number;
  port?: number;
}

export interface LocalStepFunctions {
  endpoint: string;
  executions: ReadonlyMap<string, LocalExecution>;
  /** Resolves once the execution (by ARN or name) has ended and onStatusChange has returned. */
  waitForExecution(executionArnOrName: string, timeoutMs?: number): Promise<LocalExecution>;
  close(): Promise<void>;
}

type TaskHandlers = NonNullable<NonNullable<RunOptions['overrides']>['taskResourceLocalHandlers']>;
type TaskHandler = TaskHandlers[string];
type JsonValue = Parameters<TaskHandler>[0];
type EventLogs = ReturnType<StateMachine['run']>['eventLogs'];

interface Entry {
  record: LocalExecution;
  rawInput: string;
  /** Aborted when the execution ends: unblocks Task states still waiting on a function. */
  stopSignal: AbortController;
  abortRun(): void;
  /** Settles after the terminal status is recorded and onStatusChange has returned. */
  done: Promise<void>;
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

// aws-local-stepfunctions matches Retry/Catch ErrorEquals against `error.name` and puts
// `error.message` in the Cause, so a task failure carries the AWS error name and cause that way.
class TaskFailure extends Error {
  constructor(errorName: string, cause: string) {
    super(cause);
    this.name = errorName;
  }
}

// What aws-local-stepfunctions reports for a Fail state without Error / Cause.
const FAIL_STATE_DEFAULT_ERROR = 'FailStateError';
const FAIL_STATE_DEFAULT_CAUSE = 'Execution failed because of a Fail state';
// setTimeout overflows (fires at once) past 2^31-1 ms.
const MAX_TIMER_SECONDS = Math.floor(0x7fffffff / 1000);

export async function startLocalStepFunctions(options: LocalStepFunctionsOptions): Promise<LocalStepFunctions> {
  const arnParts = parseStateMachineArn(options.stateMachineArn);
  const definition = localizedDefinition(options.definition);
  const machine = new StateMachine(definition as unknown as StateMachineDefinition);
  const entries = new Map<string, Entry>();
  const records = new Map<string, LocalExecution>();
  const arrivals = new Set<{ key: string; resolve(entry: Entry): void }>();
  let closing = false;

  function findEntry(arnOrName: string): Entry | undefined {
    return entries.get(arnOrName) ?? [...entries.values()].find((entry) => entry.record.name === arnOrName);
  }

  function startExecution(name: string, rawInput: string, input: JsonValue): Entry {
    const executionArn = `${arnParts.executionPrefix}:${name}`;
    const record: LocalExecution = {
      executionArn,
      stateMachineArn: options.stateMachineArn,
      name,
      status: 'RUNNING',
      input,
      startDate: new Date(),
      history: [],
    };
    const stopSignal = new AbortController();
    const run = machine.run(input, {
      overrides: {
        taskResourceLocalHandlers: taskHandlers(definition, {
          invokeFunction: options.invokeFunction,
          dynamoDb: options.dynamoDb,
          signal: stopSignal.signal,
        }),
        retryIntervalOverrides: retryOverrides(definition, options.retryIntervalMs),
      },
      context: {
        Execution: { Id: executionArn, Name: name },
        StateMachine: { Id: options.stateMachineArn, Name: arnParts.name },
      },
    });
    const historyDone = collectHistory(run.eventLogs, record.history);
    const entry: Entry = { record, rawInput, stopSignal, abortRun: run.abort, done: Promise.resolve() };
    entry.done = run.result
      .then(
        (output) => settle(entry, { status: 'SUCCEEDED', output }),
        (error: unknown) => settle(entry, outcomeOfFailure(error)),
      )
      .then(() => historyDone)
      .then(() => notify(entry));
    entries.set(executionArn, entry);
    records.set(executionArn, record);
    announce(entry);
    return entry;
  }

  function announce(entry: Entry): void {
    for (const waiter of arrivals) {
      if (waiter.key === entry.record.executionArn || waiter.key === entry.record.name) {
        arrivals.delete(waiter);
        waiter.resolve(entry);
      }
    }
  }

  function stopExecution(entry: Entry, error?: string, cause?: string): void {
    settle(entry, { status: 'ABORTED', error, cause });
    entry.abortRun();
  }

  async function notify(entry: Entry): Promise<void> {
    if (closing || !options.onStatusChange) return;
    try {
      await options.onStatusChange(statusChangeEvent(entry.record, arnParts));
    } catch (error) {
      console.error(`[step-functions] onStatusChange failed for ${entry.record.executionArn}:`, error);
    }
  }

  function entryArrival(key: string): { promise: Promise<Entry>; cancel(): void } {
    const existing = findEntry(key);
    if (existing) return { promise: Promise.resolve(existing), cancel: () => undefined };
    const { promise, resolve } = Promise.withResolvers<Entry>();
    const waiter = { key, resolve };
    arrivals.add(waiter);
    return { promise, cancel: () => arrivals.delete(waiter) };
  }

  async function waitForExecution(arnOrName: string, timeoutMs = 30_000): Promise<LocalExecution> {
    const arrival = entryArrival(arnOrName);
    const message = `Execution ${arnOrName} did not end within ${timeoutMs} ms`;
    try {
      return await withTimeout(
        arrival.promise.then(async (entry) => {
          await entry.done;
          return entry.record;
        }),
        timeoutMs,
        message,
      );
    } finally {
      arrival.cancel();
    }
  }

  const api = apiOperations({ options, startExecution, stopExecution, findEntry, entries: () => [...entries.values()] });
  const server = createServer((request, response) => void serveAwsJson(PROTOCOL, api, request, response));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    endpoint: `http://127.0.0.1:${port}`,
    executions: records,
    waitForExecution,
    async close() {
      // Ending running executions releases their timers (task and state machine timeouts).
      closing = true;
      for (const entry of entries.values()) {
        if (entry.record.status === 'RUNNING') stopExecution(entry, 'Local.Closed', 'The local Step Functions stand-in was closed');
      }
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

type Outcome = Pick<LocalExecution, 'status' | 'output' | 'error' | 'cause'>;

function settle(entry: Entry, outcome: Outcome): void {
  const { record } = entry;
  if (record.status !== 'RUNNING') return;
  Object.assign(record, withoutUndefined(outcome), { stopDate: new Date() });
  entry.stopSignal.abort();
}

function outcomeOfFailure(error: unknown): Outcome {
  if (error instanceof ExecutionAbortedError) return { status: 'ABORTED' };
  if (error instanceof ExecutionTimeoutError) return { status: 'TIMED_OUT', error: 'States.Timeout' };
  const failure = error instanceof ExecutionError && error.cause instanceof Error ? error.cause : error;
  if (!(failure instanceof Error)) return { status: 'FAILED', error: 'Error', cause: String(failure) };
  // A Fail state without Error/Cause: AWS reports neither, the library fills in placeholders.
  return {
    status: 'FAILED',
    error: failure.name === FAIL_STATE_DEFAULT_ERROR ? undefined : failure.name,
    cause: failure.message === FAIL_STATE_DEFAULT_CAUSE ? undefined : failure.message,
  };
}

async function collectHistory(eventLogs: EventLogs, history: StateEntered[]): Promise<void> {
  for await (const event of eventLogs) {
    if (event.type !== 'StateEntered') continue;
    const entered: StateEntered = { name: event.state.name, type: event.state.type, enteredAt: event.timestamp };
    if (event.index !== undefined) entered.mapIndex = event.index;
    history.push(entered);
  }
}

function statusChangeEvent(record: LocalExecution, arnParts: StateMachineArnParts): ExecutionStatusChangeEvent {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Step Functions Execution Status Change',
    source: 'aws.states',
    account: arnParts.account,
    time: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    region: arnParts.region,
    resources: [record.executionArn],
    detail: {
      executionArn: record.executionArn,
      stateMachineArn: record.stateMachineArn,
      name: record.name,
      status: record.status,
      startDate: record.startDate.getTime(),
      stopDate: record.stopDate?.getTime() ?? null,
      input: JSON.stringify(record.input),
      output: record.status === 'SUCCEEDED' ? JSON.stringify(record.output ?? null) : null,
      error: record.error ?? null,
      cause: record.cause ?? null,
    },
  };
}

interface StateMachineArnParts {
  region: string;
  account: string;
  name: string;
  executionPrefix: string;
}

function parseStateMachineArn(arn: string): StateMachineArnParts {
  const match = /^arn:([^:]+):states:([^:]+):([^:]+):stateMachine:([^:]+)$/.exec(arn);
  if (!match) throw new Error(`Not a state machine ARN: ${arn}`);
  const [, partition, region = '', account = '', name = ''] = match;
  return { region, account, name, executionPrefix: `arn:${partition}:states:${region}:${account}:execution:${name}` };
}

// ---------------------------------------------------------------------------------------------
// Definition walking and Task state routing
// ---------------------------------------------------------------------------------------------

type AnyState = Record<string, unknown> & { Type?: string };
type Machine = { States?: Record<string, AnyState>; TimeoutSeconds?: number };

// State names are unique across a whole state machine (ASL rule), Map/Parallel branches included,
// which is what makes the library's name-keyed overrides safe.
function forEachState(machine: Machine, visit: (name: string, state: AnyState) => void): void {
  for (const [name, state] of Object.entries(machine.States ?? {})) {
    visit(name, state);
    const iterator = (state.ItemProcessor ?? state.Iterator) as Machine | undefined;
    if (iterator) forEachState(iterator, visit);
    for (const branch of (state.Branches ?? []) as Machine[]) forEachState(branch, visit);
  }
}

/**
 * aws-local-stepfunctions gives every Task state without TimeoutSeconds a 60 s timeout (AWS: none,
 * the Lambda's own timeout applies), and Node timers overflow past ~24.8 days. Make the implicit
 * timeout effectively infinite and clamp the explicit ones.
 */
function localizedDefinition(source: object): Machine {
  const definition = structuredClone(source) as Machine;
  if ((definition.TimeoutSeconds ?? 0) > MAX_TIMER_SECONDS) delete definition.TimeoutSeconds;
  forEachState(definition, (_name, state) => {
    if (state.Type !== 'Task' || state.TimeoutSecondsPath !== undefined) return;
    state.TimeoutSeconds = Math.min(Number(state.TimeoutSeconds ?? MAX_TIMER_SECONDS), MAX_TIMER_SECONDS);
  });
  return definition;
}

function retryOverrides(definition: Machine, retryIntervalMs: number | undefined): Record<string, number> {
  const overrides: Record<string, number> = {};
  if (retryIntervalMs === undefined) return overrides;
  forEachState(definition, (name, state) => {
    if (Array.isArray(state.Retry)) overrides[name] = retryIntervalMs;
  });
  return overrides;
}

interface TaskContext {
  invokeFunction: LocalStepFunctionsOptions['invokeFunction'];
  dynamoDb?: DynamoDBClient;
  /** Aborted when the execution ends (stopped, timed out): pending tasks give up. */
  signal: AbortSignal;
}

function taskHandlers(definition: Machine, context: TaskContext): TaskHandlers {
  const handlers: TaskHandlers = {};
  forEachState(definition, (name, state) => {
    if (state.Type !== 'Task') return;
    const handler = taskHandlerFor(String(state.Resource), context);
    // Every Task is overridden: otherwise the library would call the real AWS Lambda API.
    handlers[name] = (input) => untilStopped(context.signal, () => handler(input));
  });
  return handlers;
}

function taskHandlerFor(resource: string, context: TaskContext): TaskHandler {
  const functionLogicalId = functionLogicalIdFromArn(resource);
  if (functionLogicalId) return (input) => invokeLambda(context, functionLogicalId, input);
  if (/^arn:[^:]+:states:::lambda:invoke$/.test(resource)) return (input) => lambdaInvokeIntegration(context, input);
  const dynamoAction = /^arn:[^:]+:states:::dynamodb:(getItem|putItem|updateItem|deleteItem)$/.exec(resource)?.[1];
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

async function invokeLambda(context: TaskContext, functionLogicalId: string, payload: unknown): Promise<JsonValue> {
  try {
    // Payload and result cross a JSON boundary in AWS: no shared references, undefined → null.
    const result = await context.invokeFunction(functionLogicalId, jsonCopy(payload));
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
  const request = (isPlainObject(input) ? input : {}) as { FunctionName?: unknown; Payload?: unknown; InvocationType?: unknown };
  const functionLogicalId = functionLogicalIdFromArn(String(request.FunctionName)) ?? String(request.FunctionName);
  const payload = request.Payload ?? {};
  if (request.InvocationType === 'Event') {
    invokeLambda(context, functionLogicalId, payload).catch((error: unknown) =>
      console.error(`[step-functions] async invoke of ${functionLogicalId} failed:`, error),
    );
    return invokeResponse(202, '');
  }
  return invokeResponse(200, await invokeLambda(context, functionLogicalId, payload));
}

function invokeResponse(statusCode: number, payload: JsonValue): JsonValue {
  const requestId = randomUUID();
  return {
    ExecutedVersion: '$LATEST',
    Payload: payload,
    SdkHttpMetadata: {
      HttpHeaders: { 'Content-Type': 'application/json', 'X-Amz-Executed-Version': '$LATEST', 'x-amzn-RequestId': requestId },
      HttpStatusCode: statusCode,
    },
    SdkResponseMetadata: { RequestId: requestId },
    StatusCode: statusCode,
  };
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
    case 'updateItem':
      return client.send(new UpdateItemCommand(input as unknown as UpdateItemCommandInput));
    default:
      return client.send(new DeleteItemCommand(input as unknown as DeleteItemCommandInput));
  }
}

// ---------------------------------------------------------------------------------------------
// Step Functions API (AWS JSON 1.0: POST /, X-Amz-Target: AWSStepFunctions.<Operation>)
// ---------------------------------------------------------------------------------------------

type Operation = (request: Record<string, unknown>) => Record<string, unknown>;

interface ApiContext {
  options: LocalStepFunctionsOptions;
  startExecution(name: string, rawInput: string, input: JsonValue): Entry;
  stopExecution(entry: Entry, error?: string, cause?: string): void;
  findEntry(executionArn: string): Entry | undefined;
  entries(): Entry[];
}

function apiOperations(api: ApiContext): Record<string, Operation> {
  const requireStateMachine = (arn: unknown) => {
    if (arn !== api.options.stateMachineArn) {
      throw new ApiError('StateMachineDoesNotExist', `State Machine Does Not Exist: '${String(arn)}'`);
    }
  };
  const requireExecution = (arn: unknown): Entry => {
    const entry = typeof arn === 'string' && arn.includes(':execution:') ? api.findEntry(arn) : undefined;
    if (!entry) throw new ApiError('ExecutionDoesNotExist', `Execution Does Not Exist: '${String(arn)}'`);
    return entry;
  };
  return {
    StartExecution(request) {
      requireStateMachine(request.stateMachineArn);
      const name = request.name === undefined ? randomUUID() : validExecutionName(request.name);
      const rawInput = typeof request.input === 'string' ? request.input : '{}';
      const existing = api.findEntry(name);
      // Idempotent for STANDARD workflows only while the execution runs with the same input;
      // a closed execution or another input is ExecutionAlreadyExists (StartExecution API docs).
      if (existing && (existing.record.status !== 'RUNNING' || existing.rawInput !== rawInput)) {
        throw new ApiError('ExecutionAlreadyExists', `Execution Already Exists: '${existing.record.executionArn}'`);
      }
      const { record } = existing ?? api.startExecution(name, rawInput, parseExecutionInput(rawInput));
      return { executionArn: record.executionArn, startDate: epochSeconds(record.startDate) };
    },
    StopExecution(request) {
      const entry = requireExecution(request.executionArn);
      if (entry.record.status === 'RUNNING') {
        api.stopExecution(entry, optionalString(request.error), optionalString(request.cause));
      }
      return { stopDate: epochSeconds(entry.record.stopDate ?? new Date()) };
    },
    DescribeExecution(request) {
      return describe(requireExecution(request.executionArn).record);
    },
    ListExecutions(request) {
      requireStateMachine(request.stateMachineArn);
      const matching = api
        .entries()
        .map((entry) => entry.record)
        .filter((record) => request.statusFilter === undefined || record.status === request.statusFilter)
        .sort((a, b) => b.startDate.getTime() - a.startDate.getTime());
      const offset = Number(request.nextToken ?? 0);
      const pageSize = Number(request.maxResults) > 0 ? Number(request.maxResults) : 100;
      const page = matching.slice(offset, offset + pageSize);
      const nextToken = offset + pageSize < matching.length ? String(offset + pageSize) : undefined;
      return withoutUndefined({ executions: page.map(listItem), nextToken });
    },
  };
}

function describe(record: LocalExecution): Record<string, unknown> {
  const succeeded = record.status === 'SUCCEEDED';
  return withoutUndefined({
    executionArn: record.executionArn,
    stateMachineArn: record.stateMachineArn,
    name: record.name,
    status: record.status,
    startDate: epochSeconds(record.startDate),
    stopDate: record.stopDate && epochSeconds(record.stopDate),
    input: JSON.stringify(record.input),
    inputDetails: { included: true },
    output: succeeded ? JSON.stringify(record.output ?? null) : undefined,
    outputDetails: succeeded ? { included: true } : undefined,
    error: record.error,
    cause: record.cause,
  });
}

function listItem(record: LocalExecution): Record<string, unknown> {
  return withoutUndefined({
    executionArn: record.executionArn,
    stateMachineArn: record.stateMachineArn,
    name: record.name,
    status: record.status,
    startDate: epochSeconds(record.startDate),
    stopDate: record.stopDate && epochSeconds(record.stopDate),
  });
}

function validExecutionName(name: unknown): string {
  // AWS: 1-80 characters, no whitespace, brackets, wildcards, special or control characters.
  const forbidden = /[\s<>{}[\]?*"#%\\^|~`$&,;:/\u0000-\u001f\u007f-\u009f]/;
  if (typeof name !== 'string' || name.length < 1 || name.length > 80 || forbidden.test(name)) {
    throw new ApiError('InvalidName', `Invalid Name: '${String(name)}'`);
  }
  return name;
}

function parseExecutionInput(rawInput: string): JsonValue {
  try {
    return JSON.parse(rawInput) as JsonValue;
  } catch {
    throw new ApiError('InvalidExecutionInput', `Invalid State Machine Execution Input: '${rawInput}'`);
  }
}

// ---------------------------------------------------------------------------------------------
// EventBridge pattern matching (the subset CDK rules use)
// ---------------------------------------------------------------------------------------------

/**
 * Matches an event against an EventBridge event pattern: nested objects, arrays of allowed values
 * (an array in the event matches if any element does), and the prefix / suffix /
 * equals-ignore-case / anything-but / exists / numeric operators.
 */
export function matchesEventPattern(pattern: object, event: object): boolean {
  const fields = event as Record<string, unknown>;
  return Object.entries(pattern).every(([key, rule]) => matchesField(rule, fields[key]));
}

function matchesField(rule: unknown, value: unknown): boolean {
  if (Array.isArray(rule)) return matchesAnyCondition(rule, value);
  if (!isPlainObject(rule)) throw new Error(`Invalid event pattern rule: ${JSON.stringify(rule)}`);
  if (value === undefined) return matchesEventPattern(rule, {});
  return isPlainObject(value) && matchesEventPattern(rule, value);
}

function matchesAnyCondition(conditions: unknown[], value: unknown): boolean {
  // A missing field only matches { exists: false }.
  if (value === undefined) return conditions.some((condition) => isPlainObject(condition) && condition.exists === false);
  const values = Array.isArray(value) ? value : [value];
  return conditions.some((condition) => values.some((item) => matchesCondition(condition, item)));
}

function matchesCondition(condition: unknown, value: unknown): boolean {
  if (!isPlainObject(condition)) return condition === value;
  const [operator, operand] = Object.entries(condition)[0] ?? [];
  switch (operator) {
    case 'exists':
      return operand === true;
    case 'prefix':
      return typeof value === 'string' && typeof operand === 'string' && value.startsWith(operand);
    case 'suffix':
      return typeof value === 'string' && typeof operand === 'string' && value.endsWith(operand);
    case 'equals-ignore-case':
      return typeof value === 'string' && typeof operand === 'string' && value.toLowerCase() === operand.toLowerCase();
    case 'anything-but':
      return !matchesAnythingButOperand(operand, value);
    case 'numeric':
      return typeof value === 'number' && matchesNumericRange(operand as unknown[], value);
    default:
      throw new Error(`Unsupported event pattern operator: ${JSON.stringify(condition)}`);
  }
}

function matchesAnythingButOperand(operand: unknown, value: unknown): boolean {
  if (Array.isArray(operand)) return operand.includes(value);
  if (isPlainObject(operand)) return matchesCondition(operand, value);
  return operand === value;
}

function matchesNumericRange(range: unknown[], value: number): boolean {
  const comparisons: Record<string, (bound: number) => boolean> = {
    '=': (bound) => value === bound,
    '>': (bound) => value > bound,
    '>=': (bound) => value >= bound,
    '<': (bound) => value < bound,
    '<=': (bound) => value <= bound,
  };
  for (let i = 0; i < range.length; i += 2) {
    const compare = comparisons[String(range[i])];
    if (!compare || !compare(Number(range[i + 1]))) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------

function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, item]) => item !== undefined)) as T;
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

function optionalString(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function epochSeconds(date: Date): number {
  return date.getTime() / 1000;
}

function withTimeout<T>(promise: Promise<T>, timeoutMs: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(message)), timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
