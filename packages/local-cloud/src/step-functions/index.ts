// Local stand-in for AWS Step Functions. It runs the state machine synthesized by CDK (its ASL is
// resolved out of the CloudFormation template, see ../template.ts) with aws-local-stepfunctions,
// and serves the part of the Step Functions API that production code calls through
// @aws-sdk/client-sfn (AWS JSON 1.0 protocol), so the same code runs unchanged against
// AWS_ENDPOINT_URL_SFN=<endpoint>.
import { serveAwsJson } from '../aws-protocol.ts';
import { listenLocally } from '../http-server.ts';
import { stepFunctionsOperations } from './api.ts';
import type { LocalExecution } from './execution-record.ts';
import { createExecutions, type ExecutionsOptions } from './executions.ts';

export type { ExecutionStatus, LocalExecution, StateEntered } from './execution-record.ts';
export type { ExecutionStatusChangeEvent } from './status-event.ts';

const PROTOCOL = {
  service: 'step-functions',
  targetPrefix: 'AWSStepFunctions.',
  contentType: 'application/x-amz-json-1.0',
  internalErrorType: 'InternalFailure',
};

export interface LocalStepFunctionsOptions extends ExecutionsOptions {
  port?: number;
}

export interface LocalStepFunctions {
  endpoint: string;
  executions: ReadonlyMap<string, LocalExecution>;
  /** Resolves once the execution (by ARN or name) has ended and onStatusChange has returned. */
  waitForExecution(executionArnOrName: string, timeoutMs?: number): Promise<LocalExecution>;
  /** A deploy's new definition, for executions started after it. */
  updateDefinition(definition: object): void;
  close(): Promise<void>;
}

export async function startLocalStepFunctions(options: LocalStepFunctionsOptions): Promise<LocalStepFunctions> {
  const executions = createExecutions(options);
  const operations = stepFunctionsOperations(options.stateMachineArn, executions);
  const server = await listenLocally((request, response) => void serveAwsJson(PROTOCOL, operations, request, response), {
    port: options.port,
  });
  return {
    endpoint: server.url,
    executions: executions.records,
    waitForExecution: executions.waitFor,
    updateDefinition: executions.updateDefinition,
    async close() {
      executions.stopAll();
      await server.close();
    },
  };
}
