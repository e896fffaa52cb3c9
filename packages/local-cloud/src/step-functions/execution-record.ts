// An execution as the local Step Functions records it: what the API, the tests and the bench read.

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
