// The executions of the local state machine: each runs in aws-local-stepfunctions, and its record
// (status, output, the states it entered) is what the API and the tests read.
import {
  ExecutionAbortedError,
  ExecutionError,
  ExecutionTimeoutError,
  StateMachine,
  type StateMachineDefinition,
} from 'aws-local-stepfunctions';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { withoutUndefined } from '../aws-protocol.ts';
import { localizedDefinition, retryOverrides } from './definition.ts';
import { statusChangeEvent, type ExecutionStatusChangeEvent } from './status-event.ts';
import { taskHandlers, type JsonValue } from './tasks.ts';
import { createTaskTokens, newTaskToken } from './task-tokens.ts';
import type { LocalExecution, StateEntered } from './execution-record.ts';

export interface Execution {
  record: LocalExecution;
  rawInput: string;
  /** Aborted when the execution ends: unblocks Task states still waiting on a function. */
  stopSignal: AbortController;
  abortRun(): void;
  /** Settles after the terminal status is recorded and onStatusChange has returned. */
  done: Promise<void>;
}

export interface ExecutionsOptions {
  /** ASL, e.g. from definitionFromTemplate. JSONPath only (no JSONata). */
  definition: object;
  stateMachineArn: string;
  /** Invokes a function by ARN (qualified by version or alias, or not) or name, as the state machine's role. */
  invokeFunction(functionArn: string, payload: unknown): Promise<unknown>;
  /** Executes arn:aws:states:::dynamodb:* Task states. */
  dynamoDb?: DynamoDBClient;
  onStatusChange?(event: ExecutionStatusChangeEvent): void | Promise<void>;
  /** Overrides every Retry wait (ms), so tests are fast. Default: the definition's intervals. */
  retryIntervalMs?: number;
}

type EventLogs = ReturnType<StateMachine['run']>['eventLogs'];
type Outcome = Pick<LocalExecution, 'status' | 'output' | 'error' | 'cause'>;

// What aws-local-stepfunctions reports for a Fail state without Error / Cause.
const FAIL_STATE_DEFAULT_ERROR = 'FailStateError';
const FAIL_STATE_DEFAULT_CAUSE = 'Execution failed because of a Fail state';

export function createExecutions(options: ExecutionsOptions) {
  const arnParts = parseStateMachineArn(options.stateMachineArn);
  const build = (source: object) => {
    const definition = localizedDefinition(source);
    return { definition, machine: new StateMachine(definition as unknown as StateMachineDefinition) };
  };
  // A deploy changes the definition for executions started after it; running ones keep theirs.
  let current = build(options.definition);
  const byArn = new Map<string, Execution>();
  const records = new Map<string, LocalExecution>();
  const arrivals = new Set<{ key: string; resolve(execution: Execution): void }>();
  const tokens = createTaskTokens();
  let closing = false;

  function find(arnOrName: string): Execution | undefined {
    return byArn.get(arnOrName) ?? [...byArn.values()].find((execution) => execution.record.name === arnOrName);
  }

  function start(name: string, rawInput: string, input: JsonValue): Execution {
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
    const { definition, machine } = current;
    // `$$.Task`: the object the context holds is the one the callback handler renews the Token of.
    const task = { Token: newTaskToken() };
    const run = machine.run(input, {
      overrides: {
        taskResourceLocalHandlers: taskHandlers(definition, {
          ...options,
          signal: stopSignal.signal,
          callbacks: { tokens, executionArn, task },
        }),
        retryIntervalOverrides: retryOverrides(definition, options.retryIntervalMs),
      },
      context: {
        Execution: { Id: executionArn, Name: name },
        StateMachine: { Id: options.stateMachineArn, Name: arnParts.name },
        Task: task,
      },
    });
    const historyDone = collectHistory(run.eventLogs, record.history);
    const execution: Execution = { record, rawInput, stopSignal, abortRun: run.abort, done: Promise.resolve() };
    execution.done = run.result
      .then(
        (output) => settle(execution, { status: 'SUCCEEDED', output }),
        (error: unknown) => settle(execution, outcomeOfFailure(error)),
      )
      .then(() => historyDone)
      .then(() => notify(execution));
    byArn.set(executionArn, execution);
    records.set(executionArn, record);
    announce(execution);
    return execution;
  }

  function announce(execution: Execution): void {
    for (const waiter of arrivals) {
      if (waiter.key === execution.record.executionArn || waiter.key === execution.record.name) {
        arrivals.delete(waiter);
        waiter.resolve(execution);
      }
    }
  }

  function stop(execution: Execution, error?: string, cause?: string): void {
    settle(execution, { status: 'ABORTED', error, cause });
    execution.abortRun();
  }

  async function notify(execution: Execution): Promise<void> {
    if (closing || !options.onStatusChange) return;
    try {
      await options.onStatusChange(statusChangeEvent(execution.record, arnParts));
    } catch (error) {
      console.error(`[step-functions] onStatusChange failed for ${execution.record.executionArn}:`, error);
    }
  }

  function arrivalOf(arnOrName: string): { promise: Promise<Execution>; cancel(): void } {
    const existing = find(arnOrName);
    if (existing) return { promise: Promise.resolve(existing), cancel: () => undefined };
    const { promise, resolve } = Promise.withResolvers<Execution>();
    const waiter = { key: arnOrName, resolve };
    arrivals.add(waiter);
    return { promise, cancel: () => arrivals.delete(waiter) };
  }

  /** Resolves once the execution (by ARN or name) has ended and onStatusChange has returned. */
  async function waitFor(arnOrName: string, timeoutMs = 30_000): Promise<LocalExecution> {
    const arrival = arrivalOf(arnOrName);
    const ended = arrival.promise.then(async (execution) => {
      await execution.done;
      return execution.record;
    });
    try {
      return await withTimeout(ended, timeoutMs, `Execution ${arnOrName} did not end within ${timeoutMs} ms`);
    } finally {
      arrival.cancel();
    }
  }

  /** Ends running executions: releases their timers (task and state machine timeouts). */
  function stopAll(): void {
    closing = true;
    for (const execution of byArn.values()) {
      if (execution.record.status === 'RUNNING') stop(execution, 'Local.Closed', 'The local Step Functions stand-in was closed');
    }
  }

  /** What a deploy does to the state machine: executions started from now on use this definition. */
  function updateDefinition(source: object): void {
    current = build(source);
  }

  return {
    records: records as ReadonlyMap<string, LocalExecution>,
    tokens,
    find,
    start,
    stop,
    waitFor,
    stopAll,
    updateDefinition,
    all: () => [...byArn.values()],
  };
}

export type Executions = ReturnType<typeof createExecutions>;

function parseStateMachineArn(arn: string) {
  const match = /^arn:([^:]+):states:([^:]+):([^:]+):stateMachine:([^:]+)$/.exec(arn);
  if (!match) throw new Error(`Not a state machine ARN: ${arn}`);
  const [, partition, region = '', account = '', name = ''] = match;
  return { region, account, name, executionPrefix: `arn:${partition}:states:${region}:${account}:execution:${name}` };
}

function settle(execution: Execution, outcome: Outcome): void {
  const { record } = execution;
  if (record.status !== 'RUNNING') return;
  Object.assign(record, withoutUndefined(outcome), { stopDate: new Date() });
  execution.stopSignal.abort();
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

function withTimeout<T>(promise: Promise<T>, timeoutMs: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(message)), timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
