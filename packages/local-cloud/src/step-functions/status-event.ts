// The event EventBridge gets when an execution ends: the local cloud matches its rules against it.
import { randomUUID } from 'node:crypto';
import type { ExecutionStatus, LocalExecution } from './execution-record.ts';

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

export function statusChangeEvent(record: LocalExecution, where: { region: string; account: string }): ExecutionStatusChangeEvent {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Step Functions Execution Status Change',
    source: 'aws.states',
    account: where.account,
    time: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    region: where.region,
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
