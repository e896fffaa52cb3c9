// The Step Functions calls subagents need beyond starting a run: resuming the parent that waits for
// them (its task token), and stopping a child whose parent no longer waits.
import { SendTaskSuccessCommand, StopExecutionCommand, type SFNClient } from '@aws-sdk/client-sfn';
import { isExecutionDoesNotExist, isTaskGone } from '../../aws/errors.ts';
import { executionArnFor } from '../control.ts';

export interface ChildExecutions {
  /** Resumes a run waiting in AwaitSubagents; nothing when it no longer waits. */
  resume(token: string): Promise<void>;
  /** Stops a child's execution; nothing when it has ended or never started. */
  stop(runId: string, cause: string): Promise<void>;
}

export function childExecutions(sfn: SFNClient, stateMachineArn: string): ChildExecutions {
  return {
    async resume(token) {
      try {
        await sfn.send(new SendTaskSuccessCommand({ taskToken: token, output: '{}' }));
      } catch (error) {
        if (!isTaskGone(error) && (error as Error).name !== 'InvalidToken') throw error;
      }
    },
    async stop(runId, cause) {
      try {
        await sfn.send(new StopExecutionCommand({ executionArn: executionArnFor(stateMachineArn, runId), error: 'Stopped', cause }));
      } catch (error) {
        if (!isExecutionDoesNotExist(error)) throw error;
      }
    },
  };
}
