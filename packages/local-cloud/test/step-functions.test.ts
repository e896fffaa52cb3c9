import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  DescribeExecutionCommand,
  ExecutionAlreadyExists,
  InvalidToken,
  ListExecutionsCommand,
  SendTaskFailureCommand,
  SendTaskSuccessCommand,
  SFNClient,
  StartExecutionCommand,
  StateMachineDoesNotExist,
  StopExecutionCommand,
  TaskDoesNotExist,
  TaskTimedOut,
  type DescribeExecutionCommandOutput,
} from '@aws-sdk/client-sfn';
import { CreateTableCommand, DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { App, Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as events from 'aws-cdk-lib/aws-events';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import {
  startLocalStepFunctions,
  type ExecutionStatusChangeEvent,
  type LocalStepFunctions,
  type LocalStepFunctionsOptions,
} from '../src/step-functions/index.ts';
import {
  definitionFromTemplate,
  functionLogicalIdFromArn,
  localFunctionArn,
  localStateMachineArn,
  resolveIntrinsics,
} from '../src/template.ts';
import { matchesEventPattern } from '../src/event-pattern.ts';
import { startDynamoDbLocal } from '../src/emulators.ts';

// ---------------------------------------------------------------------------------------------
// A hand-written template: Step (Lambda version, Retry/Catch) → More? (Choice loop) → Finish
// (lambda:invoke integration); failures go HandleFailure → Failed (Fail state).
// ---------------------------------------------------------------------------------------------

const MACHINE_ID = 'RunMachine';
const STATE_MACHINE_ARN = localStateMachineArn(MACHINE_ID);

const stateMachineJson = (parts: Record<string, string>) => [
  '{"StartAt":"Step","TimeoutSeconds":',
  parts.timeout ?? '300',
  ',"States":{',
  '"Step":{"Type":"Task","Resource":"',
  { Ref: 'WorkerFnCurrentVersion1234' },
  '","Parameters":{"remaining.$":"$.remaining","table":"',
  { Ref: 'RunsTable' },
  '","region":"',
  { Ref: 'AWS::Region' },
  '"},"Retry":[{"ErrorEquals":["Transient"],"IntervalSeconds":5,"MaxAttempts":2,"BackoffRate":2}],',
  '"Catch":[{"ErrorEquals":["States.ALL"],"ResultPath":"$.error","Next":"HandleFailure"}],"Next":"More?"},',
  '"More?":{"Type":"Choice","Choices":[{"Variable":"$.remaining","NumericGreaterThan":0,"Next":"Step"}],"Default":"Finish"},',
  '"Finish":{"Type":"Task","Resource":"arn:',
  { Ref: 'AWS::Partition' },
  ':states:::lambda:invoke","Parameters":{"FunctionName":"',
  { 'Fn::GetAtt': ['WorkerFn', 'Arn'] },
  '","Payload.$":"$"},"OutputPath":"$.Payload","End":true},',
  '"HandleFailure":{"Type":"Task","Resource":"',
  { 'Fn::GetAtt': ['FailureFn', 'Arn'] },
  '","Next":"Failed"},',
  '"Failed":{"Type":"Fail","Error":"RunFailed","Cause":"the run failed"}}}',
];

function handmadeTemplate(parts: Record<string, string> = {}) {
  return {
    Resources: {
      WorkerFn: { Type: 'AWS::Lambda::Function', Properties: {} },
      WorkerFnCurrentVersion1234: { Type: 'AWS::Lambda::Version', Properties: { FunctionName: { Ref: 'WorkerFn' } } },
      FailureFn: { Type: 'AWS::Lambda::Function', Properties: {} },
      RunsTable: { Type: 'AWS::DynamoDB::Table', Properties: {} },
      [MACHINE_ID]: {
        Type: 'AWS::StepFunctions::StateMachine',
        Properties: { DefinitionString: { 'Fn::Join': ['', stateMachineJson(parts)] } },
      },
    },
  };
}

type Invoke = LocalStepFunctionsOptions['invokeFunction'];

interface Harness {
  sfn: LocalStepFunctions;
  client: SFNClient;
  calls: { fn: string; payload: unknown }[];
  statusEvents: ExecutionStatusChangeEvent[];
}

async function startHarness(
  t: TestContext,
  definition: object,
  stateMachineArn: string,
  invoke: Invoke,
  extra: Partial<LocalStepFunctionsOptions> = {},
): Promise<Harness> {
  const calls: Harness['calls'] = [];
  const statusEvents: ExecutionStatusChangeEvent[] = [];
  const local = await startLocalStepFunctions({
    definition,
    stateMachineArn,
    retryIntervalMs: 1,
    // Tasks name the function by ARN (qualified or not); these tests speak of the function's name.
    invokeFunction: (arn, payload) => {
      const fn = functionLogicalIdFromArn(arn) ?? arn;
      calls.push({ fn, payload });
      return invoke(fn, payload);
    },
    onStatusChange: (event) => {
      statusEvents.push(event);
    },
    ...extra,
  });
  const client = new SFNClient({
    endpoint: local.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  t.after(async () => {
    client.destroy();
    await local.close();
  });
  return { sfn: local, client, calls, statusEvents };
}

async function handmadeHarness(t: TestContext, invoke: Invoke, parts: Record<string, string> = {}): Promise<Harness> {
  const { definition } = definitionFromTemplate(handmadeTemplate(parts));
  return startHarness(t, definition, STATE_MACHINE_ARN, invoke);
}

// As Step, the worker decrements `remaining`; as Finish (remaining 0) it echoes what it got.
const countdown: Invoke = async (fn, payload) => {
  const input = payload as { remaining: number };
  if (fn === 'WorkerFn' && input.remaining > 0) return { ...input, remaining: input.remaining - 1 };
  return { finishedBy: fn, received: payload };
};

async function describe(client: SFNClient, executionArn: string): Promise<DescribeExecutionCommandOutput> {
  return client.send(new DescribeExecutionCommand({ executionArn }));
}

function deferred<T = unknown>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((res) => {
    resolve = res;
  });
  return { promise, resolve };
}

// Resolves once `predicate` holds; the execution runs in the background on the same event loop.
async function eventually(predicate: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

// ---------------------------------------------------------------------------------------------
// Template resolution
// ---------------------------------------------------------------------------------------------

test('definitionFromTemplate resolves Lambda functions, versions, tables and pseudo parameters', () => {
  const { definition, stateMachineLogicalId } = definitionFromTemplate(handmadeTemplate());
  assert.equal(stateMachineLogicalId, MACHINE_ID);
  const states = (definition as { States: Record<string, Record<string, unknown>> }).States;
  const workerArn = 'arn:aws:lambda:local:000000000000:function:WorkerFn';
  assert.equal(states.Step?.Resource, workerArn, 'a Version resolves to its function');
  assert.deepEqual(states.Step?.Parameters, { 'remaining.$': '$.remaining', table: 'local-RunsTable', region: 'local' });
  assert.equal(states.Finish?.Resource, 'arn:aws:states:::lambda:invoke');
  assert.deepEqual(states.Finish?.Parameters, { FunctionName: workerArn, 'Payload.$': '$' });
  assert.equal(states.HandleFailure?.Resource, localFunctionArn('FailureFn'));

  const named = handmadeTemplate();
  Object.assign(named.Resources.RunsTable.Properties, { TableName: 'runs' });
  const namedStates = (definitionFromTemplate(named, MACHINE_ID).definition as { States: Record<string, { Parameters?: object }> }).States;
  assert.deepEqual(namedStates.Step?.Parameters, { 'remaining.$': '$.remaining', table: 'runs', region: 'local' });
  assert.throws(() => definitionFromTemplate(named, 'Nope'), /No AWS::StepFunctions::StateMachine/);
});

test('functionLogicalIdFromArn reads the function name, with or without a qualifier', () => {
  assert.equal(functionLogicalIdFromArn(localFunctionArn('WorkerFn')), 'WorkerFn');
  assert.equal(functionLogicalIdFromArn('arn:aws:lambda:us-east-1:123456789012:function:WorkerFn:7'), 'WorkerFn');
  assert.equal(functionLogicalIdFromArn('arn:aws:states:::lambda:invoke'), undefined);
});

// ---------------------------------------------------------------------------------------------
// Executions through the real SDK client
// ---------------------------------------------------------------------------------------------

test('a run loops through the Choice until done and succeeds with the Finish output', async (t) => {
  const h = await handmadeHarness(t, countdown);
  const started = await h.client.send(
    new StartExecutionCommand({ stateMachineArn: STATE_MACHINE_ARN, name: 'run-loop', input: JSON.stringify({ remaining: 3 }) }),
  );
  assert.equal(started.executionArn, 'arn:aws:states:local:000000000000:execution:RunMachine:run-loop');
  assert.ok(started.startDate instanceof Date);

  const record = await h.sfn.waitForExecution('run-loop', 5_000);
  assert.equal(record.status, 'SUCCEEDED');
  const described = await describe(h.client, started.executionArn!);
  assert.equal(described.status, 'SUCCEEDED');
  assert.deepEqual(JSON.parse(described.output!), {
    finishedBy: 'WorkerFn',
    received: { remaining: 0, table: 'local-RunsTable', region: 'local' },
  });
  assert.deepEqual(JSON.parse(described.input!), { remaining: 3 });
  assert.ok(described.stopDate instanceof Date);
  assert.deepEqual(
    h.calls.map((call) => call.fn),
    ['WorkerFn', 'WorkerFn', 'WorkerFn', 'WorkerFn'],
  );
  assert.deepEqual(
    record.history.map((state) => state.name),
    ['Step', 'More?', 'Step', 'More?', 'Step', 'More?', 'Finish'],
  );
  assert.equal(h.statusEvents.length, 1);
  assert.equal(h.statusEvents[0]?.detail.status, 'SUCCEEDED');
  assert.equal(h.statusEvents[0]?.detail.output, described.output);
});

test('StartExecution is idempotent by name and input while running; other input or a closed run conflicts', async (t) => {
  const gate = deferred();
  const h = await handmadeHarness(t, async (fn, payload) => {
    await gate.promise;
    return countdown(fn, payload);
  });
  const start = (input: object) =>
    h.client.send(new StartExecutionCommand({ stateMachineArn: STATE_MACHINE_ARN, name: 'run-1', input: JSON.stringify(input) }));

  const first = await start({ remaining: 1 });
  const again = await start({ remaining: 1 });
  assert.equal(again.executionArn, first.executionArn);
  assert.equal(again.startDate?.getTime(), first.startDate?.getTime());

  await assert.rejects(start({ remaining: 2 }), (error: Error) => {
    assert.ok(error instanceof ExecutionAlreadyExists);
    assert.equal(error.name, 'ExecutionAlreadyExists');
    return true;
  });

  gate.resolve(undefined);
  const record = await h.sfn.waitForExecution(first.executionArn!, 5_000);
  assert.equal(record.status, 'SUCCEEDED');
  assert.equal(h.sfn.executions.size, 1);
  assert.equal(h.calls.length, 2, 'one Step and one Finish: the duplicate start did not run again');

  // As in AWS: a closed execution's name cannot be reused (for 90 days), even with the same input.
  await assert.rejects(start({ remaining: 1 }), { name: 'ExecutionAlreadyExists' });
});

test('StopExecution aborts a run whose task is blocked, and reports ABORTED', async (t) => {
  const gate = deferred();
  t.after(() => gate.resolve(undefined));
  const h = await handmadeHarness(t, async (fn, payload) => {
    await gate.promise;
    return countdown(fn, payload);
  });
  const { executionArn } = await h.client.send(
    new StartExecutionCommand({ stateMachineArn: STATE_MACHINE_ARN, input: JSON.stringify({ remaining: 2 }) }),
  );
  await eventually(() => h.calls.length === 1);
  assert.equal((await describe(h.client, executionArn!)).status, 'RUNNING');

  const stopped = await h.client.send(new StopExecutionCommand({ executionArn, error: 'UserCancelled', cause: 'stopped by test' }));
  const described = await describe(h.client, executionArn!);
  assert.equal(described.status, 'ABORTED');
  assert.equal(described.error, 'UserCancelled');
  assert.equal(described.cause, 'stopped by test');
  assert.equal(described.output, undefined);
  assert.equal(described.stopDate?.getTime(), stopped.stopDate?.getTime());

  await h.sfn.waitForExecution(executionArn!, 5_000);
  assert.equal(h.statusEvents.length, 1);
  const event = h.statusEvents[0]!;
  assert.equal(event.source, 'aws.states');
  assert.equal(event['detail-type'], 'Step Functions Execution Status Change');
  assert.deepEqual(event.resources, [executionArn]);
  assert.equal(event.detail.status, 'ABORTED');
  assert.equal(event.detail.error, 'UserCancelled');
  assert.equal(event.detail.stateMachineArn, STATE_MACHINE_ARN);
  assert.equal(typeof event.detail.startDate, 'number');
  assert.equal(event.detail.input, JSON.stringify({ remaining: 2 }));

  // The blocked function finishing later does not move the aborted run on.
  gate.resolve(undefined);
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(h.calls.length, 1);
  assert.equal((await describe(h.client, executionArn!)).status, 'ABORTED');
  // Stopping a closed execution is a no-op.
  const again = await h.client.send(new StopExecutionCommand({ executionArn }));
  assert.equal(again.stopDate?.getTime(), stopped.stopDate?.getTime());
});

class TransientError extends Error {
  override name = 'Transient';
}

test('a custom error is retried per Retry, then caught by Catch States.ALL, then the Fail state fails the run', async (t) => {
  const h = await handmadeHarness(t, async (fn, payload) => {
    if (fn === 'WorkerFn') throw new TransientError('try again later');
    return { handled: payload };
  });
  const { executionArn } = await h.client.send(
    new StartExecutionCommand({ stateMachineArn: STATE_MACHINE_ARN, input: JSON.stringify({ remaining: 1 }) }),
  );
  const record = await h.sfn.waitForExecution(executionArn!, 5_000);

  assert.deepEqual(
    h.calls.map((call) => call.fn),
    ['WorkerFn', 'WorkerFn', 'WorkerFn', 'FailureFn'],
    'the first attempt plus MaxAttempts=2 retries, then the Catch handler',
  );
  const handled = h.calls[3]?.payload as { remaining: number; error: { Error: string; Cause: string } };
  assert.equal(handled.remaining, 1);
  assert.equal(handled.error.Error, 'Transient');
  const cause = JSON.parse(handled.error.Cause) as { errorType: string; errorMessage: string; trace: string[] };
  assert.equal(cause.errorType, 'Transient');
  assert.equal(cause.errorMessage, 'try again later');
  assert.ok(Array.isArray(cause.trace) && cause.trace.length > 0);

  assert.equal(record.status, 'FAILED');
  assert.equal(record.error, 'RunFailed');
  assert.equal(record.cause, 'the run failed');
  assert.deepEqual(
    record.history.map((state) => state.name),
    ['Step', 'HandleFailure', 'Failed'],
  );
  assert.equal(h.statusEvents[0]?.detail.status, 'FAILED');
  assert.equal(h.statusEvents[0]?.detail.error, 'RunFailed');
});

test('an uncaught function error fails the run with the Lambda error name and cause, and emits the event', async (t) => {
  const h = await handmadeHarness(t, async (fn) => {
    if (fn === 'WorkerFn') throw new Error('worker broke');
    throw new TypeError('handler broke too');
  });
  const { executionArn } = await h.client.send(
    new StartExecutionCommand({ stateMachineArn: STATE_MACHINE_ARN, name: 'broken', input: '{"remaining":1}' }),
  );
  await h.sfn.waitForExecution('broken', 5_000);
  assert.deepEqual(
    h.calls.map((call) => call.fn),
    ['WorkerFn', 'FailureFn'],
    'a plain Error does not match the Transient retrier',
  );
  const described = await describe(h.client, executionArn!);
  assert.equal(described.status, 'FAILED');
  assert.equal(described.error, 'TypeError');
  assert.equal((JSON.parse(described.cause!) as { errorMessage: string }).errorMessage, 'handler broke too');

  assert.equal(h.statusEvents.length, 1);
  const { detail } = h.statusEvents[0]!;
  assert.equal(detail.status, 'FAILED');
  assert.equal(detail.error, 'TypeError');
  assert.equal(detail.cause, described.cause);
  assert.equal(detail.output, null);
  assert.ok(detail.stopDate !== null && detail.stopDate >= detail.startDate);
});

test('TimeoutSeconds of the state machine ends a run TIMED_OUT', async (t) => {
  const gate = deferred();
  t.after(() => gate.resolve(undefined));
  const h = await handmadeHarness(t, () => gate.promise, { timeout: '1' });
  const { executionArn } = await h.client.send(new StartExecutionCommand({ stateMachineArn: STATE_MACHINE_ARN, input: '{"remaining":1}' }));
  const record = await h.sfn.waitForExecution(executionArn!, 5_000);
  assert.equal(record.status, 'TIMED_OUT');
  assert.equal(record.error, 'States.Timeout');
  assert.equal((await describe(h.client, executionArn!)).status, 'TIMED_OUT');
  assert.equal(h.statusEvents[0]?.detail.status, 'TIMED_OUT');
});

// ---------------------------------------------------------------------------------------------
// The callback pattern: Ask (lambda:invoke.waitForTaskToken, its timeout from the input) → Done;
// a States.Timeout goes to TimedOut, any other failure to Failed.
// ---------------------------------------------------------------------------------------------

const CALLBACK_MACHINE_ARN = localStateMachineArn('CallbackMachine');
const callbackDefinition = {
  StartAt: 'Ask',
  States: {
    Ask: {
      Type: 'Task',
      Resource: 'arn:aws:states:::lambda:invoke.waitForTaskToken',
      Parameters: { FunctionName: localFunctionArn('AskFn'), Payload: { 'question.$': '$.question', 'token.$': '$$.Task.Token' } },
      TimeoutSecondsPath: '$.waitSeconds',
      ResultPath: '$.answer',
      Catch: [
        { ErrorEquals: ['States.Timeout'], ResultPath: '$.error', Next: 'TimedOut' },
        { ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'Failed' },
      ],
      Next: 'Done',
    },
    Done: { Type: 'Succeed' },
    TimedOut: { Type: 'Succeed' },
    Failed: { Type: 'Fail', Error: 'Refused' },
  },
};

async function callbackHarness(t: TestContext, invoke: Invoke = async () => ({ ignored: true })) {
  const h = await startHarness(t, callbackDefinition, CALLBACK_MACHINE_ARN, invoke);
  const start = async (waitSeconds = 300) => {
    const before = h.calls.length;
    const { executionArn } = await h.client.send(
      new StartExecutionCommand({ stateMachineArn: CALLBACK_MACHINE_ARN, input: JSON.stringify({ question: 'may I?', waitSeconds }) }),
    );
    await eventually(() => h.calls.length > before);
    const token = (h.calls.at(-1)!.payload as { token: string }).token;
    return { executionArn: executionArn!, token };
  };
  return { ...h, start };
}

test('waitForTaskToken: the function gets $$.Task.Token, the run waits for SendTaskSuccess, whose output is the result; the token then acts no more', async (t) => {
  const h = await callbackHarness(t);
  const first = await h.start();
  assert.equal(h.calls[0]!.fn, 'AskFn');
  assert.equal((h.calls[0]!.payload as { question: string }).question, 'may I?');
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal((await describe(h.client, first.executionArn)).status, 'RUNNING', "the function's own result does not end the wait");
  // Each wait has its own token.
  const second = await h.start();
  assert.notEqual(second.token, first.token);

  await h.client.send(new SendTaskSuccessCommand({ taskToken: first.token, output: JSON.stringify({ approved: true }) }));
  const record = await h.sfn.waitForExecution(first.executionArn, 5_000);
  assert.equal(record.status, 'SUCCEEDED');
  assert.deepEqual((record.output as { answer: unknown }).answer, { approved: true });
  assert.deepEqual(
    record.history.map((state) => state.name),
    ['Ask', 'Done'],
  );
  assert.equal((await describe(h.client, second.executionArn)).status, 'RUNNING', 'the other wait goes on');

  // A replayed answer, a token never issued, a malformed token.
  await assert.rejects(h.client.send(new SendTaskSuccessCommand({ taskToken: first.token, output: '{}' })), TaskTimedOut);
  await assert.rejects(h.client.send(new SendTaskSuccessCommand({ taskToken: 'A'.repeat(64), output: '{}' })), TaskDoesNotExist);
  await assert.rejects(h.client.send(new SendTaskSuccessCommand({ taskToken: 'not a token', output: '{}' })), InvalidToken);
  await assert.rejects(
    h.client.send(new SendTaskSuccessCommand({ taskToken: second.token, output: 'not json' })),
    (error: Error) => error.name === 'InvalidOutput',
  );

  await h.client.send(new SendTaskFailureCommand({ taskToken: second.token, error: 'Denied', cause: 'no, thank you' }));
  const failed = await h.sfn.waitForExecution(second.executionArn, 5_000);
  assert.equal(failed.status, 'FAILED');
  assert.equal(failed.error, 'Refused');
  assert.deepEqual(
    failed.history.map((state) => state.name),
    ['Ask', 'Failed'],
  );
});

test('waitForTaskToken: no answer within TimeoutSecondsPath (read from the state input) is States.Timeout; a late answer is TaskTimedOut', async (t) => {
  const h = await callbackHarness(t);
  const { executionArn, token } = await h.start(1);
  const record = await h.sfn.waitForExecution(executionArn, 10_000);
  assert.equal(record.status, 'SUCCEEDED');
  assert.deepEqual(
    record.history.map((state) => state.name),
    ['Ask', 'TimedOut'],
  );
  assert.equal((record.output as { error: { Error: string } }).error.Error, 'States.Timeout');
  await assert.rejects(h.client.send(new SendTaskSuccessCommand({ taskToken: token, output: '{}' })), TaskTimedOut);
});

test('waitForTaskToken: StopExecution ends a waiting execution and its token; a function error fails the task', async (t) => {
  const h = await callbackHarness(t, async (_fn, payload) => {
    if ((payload as { question: string }).question === 'fail') throw Object.assign(new Error('could not ask'), { name: 'AskFailed' });
    return {};
  });
  const { executionArn, token } = await h.start();
  await h.client.send(new StopExecutionCommand({ executionArn, error: 'Stopped', cause: 'by test' }));
  const record = await h.sfn.waitForExecution(executionArn, 5_000);
  assert.equal(record.status, 'ABORTED');
  await assert.rejects(h.client.send(new SendTaskSuccessCommand({ taskToken: token, output: '{}' })), TaskTimedOut);

  const failing = await h.client.send(
    new StartExecutionCommand({ stateMachineArn: CALLBACK_MACHINE_ARN, input: JSON.stringify({ question: 'fail', waitSeconds: 300 }) }),
  );
  const failed = await h.sfn.waitForExecution(failing.executionArn!, 5_000);
  assert.equal(failed.status, 'FAILED');
  assert.match(JSON.stringify(failed.history.map((state) => state.name)), /"Ask","Failed"/);
});

test('an onStatusChange that throws is logged, and the server keeps serving', async (t) => {
  const { definition } = definitionFromTemplate(handmadeTemplate());
  const h = await startHarness(t, definition, STATE_MACHINE_ARN, countdown, {
    onStatusChange: () => {
      throw new Error('listener broke');
    },
  });
  const originalError = console.error;
  const logged: unknown[][] = [];
  console.error = (...args: unknown[]) => logged.push(args);
  t.after(() => {
    console.error = originalError;
  });
  const { executionArn } = await h.client.send(new StartExecutionCommand({ stateMachineArn: STATE_MACHINE_ARN, input: '{"remaining":1}' }));
  await h.sfn.waitForExecution(executionArn!, 5_000);
  console.error = originalError;
  assert.equal(logged.length, 1);
  assert.equal((await describe(h.client, executionArn!)).status, 'SUCCEEDED');
});

test('API errors: unknown state machine, unknown execution, unknown operation; ListExecutions filters', async (t) => {
  const h = await handmadeHarness(t, countdown);
  await assert.rejects(
    h.client.send(new StartExecutionCommand({ stateMachineArn: localStateMachineArn('Other'), input: '{}' })),
    (error: Error) => error instanceof StateMachineDoesNotExist,
  );
  await assert.rejects(describe(h.client, 'arn:aws:states:local:000000000000:execution:RunMachine:nope'), {
    name: 'ExecutionDoesNotExist',
  });
  await assert.rejects(h.client.send(new StartExecutionCommand({ stateMachineArn: STATE_MACHINE_ARN, input: 'not json' })), {
    name: 'InvalidExecutionInput',
  });

  const response = await fetch(h.sfn.endpoint, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-amz-json-1.0', 'X-Amz-Target': 'AWSStepFunctions.Frobnicate' },
    body: '{}',
  });
  assert.equal(response.status, 400);
  assert.equal(((await response.json()) as { __type: string }).__type, 'UnknownOperationException');

  await h.client.send(new StartExecutionCommand({ stateMachineArn: STATE_MACHINE_ARN, name: 'listed', input: '{"remaining":1}' }));
  await h.sfn.waitForExecution('listed', 5_000);
  const succeeded = await h.client.send(new ListExecutionsCommand({ stateMachineArn: STATE_MACHINE_ARN, statusFilter: 'SUCCEEDED' }));
  assert.deepEqual(
    succeeded.executions?.map((execution) => execution.name),
    ['listed'],
  );
  const failed = await h.client.send(new ListExecutionsCommand({ stateMachineArn: STATE_MACHINE_ARN, statusFilter: 'FAILED' }));
  assert.deepEqual(failed.executions, []);
});

test('Task states inside Map and Parallel branches are routed too', async (t) => {
  const definition = {
    StartAt: 'EachItem',
    States: {
      EachItem: {
        Type: 'Map',
        ItemsPath: '$.items',
        ItemProcessor: {
          ProcessorConfig: { Mode: 'INLINE' },
          StartAt: 'Double',
          States: { Double: { Type: 'Task', Resource: localFunctionArn('Doubler'), End: true } },
        },
        ResultPath: '$.doubled',
        Next: 'Both',
      },
      Both: {
        Type: 'Parallel',
        Branches: [
          {
            StartAt: 'Sum',
            States: {
              Sum: {
                Type: 'Task',
                Resource: 'arn:aws:states:::lambda:invoke',
                Parameters: { FunctionName: localFunctionArn('Summer'), 'Payload.$': '$.doubled' },
                ResultSelector: { 'sum.$': '$.Payload', 'status.$': '$.StatusCode' },
                End: true,
              },
            },
          },
          { StartAt: 'Echo', States: { Echo: { Type: 'Pass', End: true, Result: 'echo' } } },
        ],
        End: true,
      },
    },
  };
  const h = await startHarness(t, definition, STATE_MACHINE_ARN, async (fn, payload) =>
    fn === 'Doubler' ? (payload as number) * 2 : (payload as number[]).reduce((a, b) => a + b, 0),
  );
  // Waiting may begin before the execution exists.
  const finished = h.sfn.waitForExecution('mapped', 5_000);
  await h.client.send(new StartExecutionCommand({ stateMachineArn: STATE_MACHINE_ARN, name: 'mapped', input: '{"items":[1,2,3]}' }));
  const record = await finished;
  assert.equal(record.status, 'SUCCEEDED', `${record.error}: ${record.cause}`);
  assert.deepEqual(record.output, [{ sum: 12, status: 200 }, 'echo']);
  assert.deepEqual(
    record.history
      .filter((state) => state.name === 'Double')
      .map((state) => state.mapIndex)
      .sort(),
    [0, 1, 2],
  );
});

// ---------------------------------------------------------------------------------------------
// A state machine synthesized by CDK
// ---------------------------------------------------------------------------------------------

function synthesizedStack() {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'LocalSfnTest');
  const fn = new lambda.Function(stack, 'Turn', {
    runtime: lambda.Runtime.NODEJS_24_X,
    handler: 'index.handler',
    code: lambda.Code.fromInline('exports.handler = async (event) => event;'),
  });
  const turn = new tasks.LambdaInvoke(stack, 'RunTurn', { lambdaFunction: fn.currentVersion, payloadResponseOnly: true });
  const loop = new sfn.Choice(stack, 'Continue?')
    .when(sfn.Condition.booleanEquals('$.done', false), turn)
    .otherwise(new sfn.Succeed(stack, 'Done'));
  const machine = new sfn.StateMachine(stack, 'AgentLoop', {
    definitionBody: sfn.DefinitionBody.fromChainable(turn.next(loop)),
    timeout: Duration.minutes(15),
  });
  new events.Rule(stack, 'RunEnded', {
    eventPattern: {
      source: ['aws.states'],
      detailType: ['Step Functions Execution Status Change'],
      detail: { status: ['FAILED', 'TIMED_OUT', 'ABORTED'], stateMachineArn: [machine.stateMachineArn] },
    },
  });
  return Template.fromStack(stack).toJSON();
}

function resourceOfType(template: Record<string, unknown>, type: string): [string, { Properties: Record<string, unknown> }] {
  const resources = template.Resources as Record<string, { Type: string; Properties: Record<string, unknown> }>;
  const found = Object.entries(resources).find(([, resource]) => resource.Type === type);
  assert.ok(found, `no ${type} in the template`);
  return found;
}

test('a CDK-synthesized state machine runs through the SDK; its Lambda retrier and EventBridge rule behave like AWS', async (t) => {
  const template = synthesizedStack();
  const { definition, stateMachineLogicalId } = definitionFromTemplate(template);
  const [functionId] = resourceOfType(template, 'AWS::Lambda::Function');
  const stateMachineArn = localStateMachineArn(stateMachineLogicalId);

  // Turn 1 hits a Lambda service error (CDK's default retrier covers it); turn 3 throws a function error.
  let turns = 0;
  const h = await startHarness(t, definition, stateMachineArn, async (fn, payload) => {
    assert.equal(fn, functionId);
    turns += 1;
    const input = payload as { turns: number; failAt?: number };
    if (turns === 1) throw Object.assign(new Error('Lambda was busy'), { name: 'Lambda.ServiceException' });
    if (input.failAt === input.turns + 1) throw new Error('model call failed');
    return { ...input, turns: input.turns + 1, done: input.turns + 1 >= 3 };
  });

  const ok = await h.client.send(
    new StartExecutionCommand({ stateMachineArn, name: 'cdk-ok', input: JSON.stringify({ turns: 0, done: false }) }),
  );
  assert.equal((await h.sfn.waitForExecution(ok.executionArn!, 5_000)).status, 'SUCCEEDED');
  assert.deepEqual(JSON.parse((await describe(h.client, ok.executionArn!)).output!), { turns: 3, done: true });
  assert.equal(turns, 4, 'three turns plus one retry of the Lambda.ServiceException');

  const bad = await h.client.send(
    new StartExecutionCommand({ stateMachineArn, name: 'cdk-bad', input: JSON.stringify({ turns: 0, done: false, failAt: 2 }) }),
  );
  const failed = await h.sfn.waitForExecution(bad.executionArn!, 5_000);
  assert.equal(failed.status, 'FAILED');
  assert.equal(failed.error, 'Error', 'a function error is not one of the Lambda.* errors CDK retries');
  assert.equal(turns, 6, 'turn 1, then turn 2 failing once, not retried');

  // The rule CDK synthesized, resolved like the rest of the template, selects the failure event only.
  const [, rule] = resourceOfType(template, 'AWS::Events::Rule');
  const pattern = resolveIntrinsics(template, rule.Properties.EventPattern) as object;
  const [succeededEvent, failedEvent] = h.statusEvents;
  assert.equal(succeededEvent?.detail.status, 'SUCCEEDED');
  assert.equal(failedEvent?.detail.status, 'FAILED');
  assert.equal(matchesEventPattern(pattern, failedEvent!), true);
  assert.equal(matchesEventPattern(pattern, succeededEvent!), false);
});

// ---------------------------------------------------------------------------------------------
// DynamoDB service integration (against DynamoDB Local, when Java is available)
// ---------------------------------------------------------------------------------------------

const hasJava = spawnSync('java', ['-version']).status === 0;

test('dynamodb:putItem / updateItem / getItem Task states run the real calls', { skip: !hasJava && 'Java is not installed' }, async (t) => {
  const dynamo = await startDynamoDbLocal();
  const dynamoDb = new DynamoDBClient({
    endpoint: dynamo.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  t.after(async () => {
    dynamoDb.destroy();
    await dynamo.stop();
  });
  await dynamoDb.send(
    new CreateTableCommand({
      TableName: 'runs',
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  const definition = {
    StartAt: 'Put',
    States: {
      Put: {
        Type: 'Task',
        Resource: 'arn:aws:states:::dynamodb:putItem',
        Parameters: { TableName: 'runs', Item: { pk: { 'S.$': '$.id' }, state: { S: 'started' } } },
        ResultPath: null,
        Next: 'Update',
      },
      Update: {
        Type: 'Task',
        Resource: 'arn:aws:states:::dynamodb:updateItem',
        Parameters: {
          TableName: 'runs',
          Key: { pk: { 'S.$': '$.id' } },
          UpdateExpression: 'SET #s = :s',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#s': 'state' },
          ExpressionAttributeValues: { ':s': { S: 'done' } },
        },
        ResultPath: null,
        Next: 'Get',
      },
      Get: {
        Type: 'Task',
        Resource: 'arn:aws:states:::dynamodb:getItem',
        Parameters: { TableName: 'runs', Key: { pk: { 'S.$': '$.id' } } },
        ResultPath: '$.got',
        End: true,
      },
    },
  };
  const h = await startHarness(t, definition, STATE_MACHINE_ARN, countdown, { dynamoDb });
  const { executionArn } = await h.client.send(new StartExecutionCommand({ stateMachineArn: STATE_MACHINE_ARN, input: '{"id":"run-7"}' }));
  const record = await h.sfn.waitForExecution(executionArn!, 10_000);
  assert.equal(record.status, 'SUCCEEDED', `${record.error}: ${record.cause}`);
  assert.deepEqual(record.output, { id: 'run-7', got: { Item: { pk: { S: 'run-7' }, state: { S: 'done' } } } });
  const stored = await dynamoDb.send(new GetItemCommand({ TableName: 'runs', Key: { pk: { S: 'run-7' } } }));
  assert.equal(stored.Item?.state?.S, 'done');
});

// ---------------------------------------------------------------------------------------------
// EventBridge pattern matching
// ---------------------------------------------------------------------------------------------

test('matchesEventPattern handles the operators CDK rules use', () => {
  const arn = STATE_MACHINE_ARN;
  const pattern = {
    source: ['aws.states'],
    'detail-type': ['Step Functions Execution Status Change'],
    detail: { status: ['FAILED', 'TIMED_OUT', 'ABORTED'], stateMachineArn: [arn] },
  };
  const event = (detail: object) => ({
    source: 'aws.states',
    'detail-type': 'Step Functions Execution Status Change',
    detail: { status: 'FAILED', stateMachineArn: arn, ...detail },
  });
  assert.equal(matchesEventPattern(pattern, event({})), true);
  assert.equal(matchesEventPattern(pattern, event({ status: 'ABORTED' })), true);
  assert.equal(matchesEventPattern(pattern, event({ status: 'SUCCEEDED' })), false);
  assert.equal(matchesEventPattern(pattern, event({ stateMachineArn: localStateMachineArn('Other') })), false);
  assert.equal(matchesEventPattern(pattern, { ...event({}), source: 'aws.ec2' }), false);
  assert.equal(matchesEventPattern(pattern, { source: 'aws.states' }), false, 'missing fields do not match');

  assert.equal(matchesEventPattern({ detail: { name: [{ prefix: 'run-' }] } }, event({ name: 'run-1' })), true);
  assert.equal(matchesEventPattern({ detail: { name: [{ prefix: 'run-' }] } }, event({ name: 'job-1' })), false);
  assert.equal(matchesEventPattern({ detail: { status: [{ 'anything-but': ['SUCCEEDED'] }] } }, event({})), true);
  assert.equal(matchesEventPattern({ detail: { status: [{ 'anything-but': ['FAILED'] }] } }, event({})), false);
  assert.equal(matchesEventPattern({ detail: { error: [{ exists: true }] } }, event({ error: 'Boom' })), true);
  assert.equal(matchesEventPattern({ detail: { error: [{ exists: true }] } }, event({})), false);
  assert.equal(matchesEventPattern({ detail: { error: [{ exists: false }] } }, event({})), true);
  assert.equal(matchesEventPattern({ detail: { error: [{ exists: false }] } }, event({ error: 'Boom' })), false);
  assert.equal(matchesEventPattern({ resources: [arn] }, { resources: ['other', arn] }), true, 'arrays match any element');
  assert.equal(matchesEventPattern({ detail: { output: [null] } }, event({ output: null })), true);
});
