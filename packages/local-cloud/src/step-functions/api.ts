// The Step Functions API operations the product calls (StartExecution, StopExecution,
// DescribeExecution, SendTaskSuccess, SendTaskFailure) and ListExecutions, on the local executions. The AWS JSON 1.0 protocol
// around them is serveAwsJson's.
import { randomUUID } from 'node:crypto';
import { ApiError, epochSeconds, withoutUndefined, type AwsJsonOperation } from '../aws-protocol.ts';
import type { LocalExecution } from './execution-record.ts';
import type { Execution, Executions } from './executions.ts';
import { STATE_DATA_LIMIT, type JsonValue } from './tasks.ts';

export function stepFunctionsOperations(stateMachineArn: string, executions: Executions): Record<string, AwsJsonOperation> {
  const requireStateMachine = (arn: unknown) => {
    if (arn !== stateMachineArn) throw new ApiError('StateMachineDoesNotExist', `State Machine Does Not Exist: '${String(arn)}'`);
  };
  const requireExecution = (arn: unknown): Execution => {
    const execution = typeof arn === 'string' && arn.includes(':execution:') ? executions.find(arn) : undefined;
    if (!execution) throw new ApiError('ExecutionDoesNotExist', `Execution Does Not Exist: '${String(arn)}'`);
    return execution;
  };
  return {
    StartExecution(request) {
      requireStateMachine(request.stateMachineArn);
      const name = request.name === undefined ? randomUUID() : validExecutionName(request.name);
      const rawInput = typeof request.input === 'string' ? request.input : '{}';
      const inputBytes = Buffer.byteLength(rawInput);
      if (inputBytes > STATE_DATA_LIMIT) {
        throw new ApiError(
          'ValidationException',
          `1 validation error detected: Value at 'input' failed to satisfy constraint: Member must have length less than or equal to ${STATE_DATA_LIMIT} (the input is ${inputBytes} bytes)`,
        );
      }
      const existing = executions.find(name);
      // Idempotent for STANDARD workflows only while the execution runs with the same input;
      // a closed execution or another input is ExecutionAlreadyExists.
      if (existing && (existing.record.status !== 'RUNNING' || existing.rawInput !== rawInput)) {
        throw new ApiError('ExecutionAlreadyExists', `Execution Already Exists: '${existing.record.executionArn}'`);
      }
      const { record } = existing ?? executions.start(name, rawInput, parseExecutionInput(rawInput));
      return { executionArn: record.executionArn, startDate: epochSeconds(record.startDate) };
    },
    StopExecution(request) {
      const execution = requireExecution(request.executionArn);
      if (execution.record.status === 'RUNNING') executions.stop(execution, optionalString(request.error), optionalString(request.cause));
      return { stopDate: epochSeconds(execution.record.stopDate ?? new Date()) };
    },
    DescribeExecution(request) {
      const { record } = requireExecution(request.executionArn);
      return withoutUndefined({
        ...summary(record),
        input: JSON.stringify(record.input),
        output: record.status === 'SUCCEEDED' ? JSON.stringify(record.output ?? null) : undefined,
        error: record.error,
        cause: record.cause,
      });
    },
    SendTaskSuccess(request) {
      const output = typeof request.output === 'string' ? request.output : undefined;
      if (output === undefined)
        throw new ApiError(
          'ValidationException',
          "1 validation error detected: Value null at 'output' failed to satisfy constraint: Member must not be null",
        );
      if (Buffer.byteLength(output) > STATE_DATA_LIMIT) {
        throw new ApiError(
          'ValidationException',
          `1 validation error detected: Value at 'output' failed to satisfy constraint: Member must have length less than or equal to ${STATE_DATA_LIMIT}`,
        );
      }
      let parsed: JsonValue;
      try {
        parsed = JSON.parse(output) as JsonValue;
      } catch {
        throw new ApiError('InvalidOutput', `Invalid Output: '${output}'`);
      }
      executions.tokens.answer(request.taskToken, { output: parsed });
      return {};
    },
    SendTaskFailure(request) {
      const error = optionalString(request.error) ?? '';
      const cause = optionalString(request.cause) ?? '';
      // AWS: error up to 256 characters, cause up to 32,768.
      if (error.length > 256 || cause.length > 32_768) throw new ApiError('ValidationException', 'The error or cause is too long');
      executions.tokens.answer(request.taskToken, { error, cause });
      return {};
    },
    ListExecutions(request) {
      requireStateMachine(request.stateMachineArn);
      const matching = executions
        .all()
        .map((execution) => execution.record)
        .filter((record) => request.statusFilter === undefined || record.status === request.statusFilter)
        .sort((a, b) => b.startDate.getTime() - a.startDate.getTime());
      return { executions: matching.map((record) => withoutUndefined(summary(record))) };
    },
  };
}

function summary(record: LocalExecution) {
  return {
    executionArn: record.executionArn,
    stateMachineArn: record.stateMachineArn,
    name: record.name,
    status: record.status,
    startDate: epochSeconds(record.startDate),
    stopDate: record.stopDate && epochSeconds(record.stopDate),
  };
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

function optionalString(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}
