// Starting a run = starting its Step Functions execution, named by the run id so that a duplicate
// start (a redelivered prompt, a retried hand-over) is harmless.
import { StartExecutionCommand, type SFNClient } from '@aws-sdk/client-sfn';
import { isExecutionAlreadyExists } from '../aws/errors.ts';
import type { RunInput } from '../contracts.ts';
import type { JsonLogger } from '../observability/log.ts';
import type { MetricsSink } from '../observability/metrics.ts';
import { countRunStarted } from '../observability/run-metrics.ts';

export function executionStarter(sfn: SFNClient, stateMachineArn: string, logger: JsonLogger, metrics?: MetricsSink, now = Date.now) {
  return async (run: RunInput): Promise<void> => {
    try {
      await sfn.send(new StartExecutionCommand({ stateMachineArn, name: run.executionName ?? run.runId, input: JSON.stringify(run) }));
    } catch (error) {
      // Same name, different input: the run was started before with a different copy of the prompt.
      if (isExecutionAlreadyExists(error)) {
        logger.warn('run already started', { runId: run.runId });
        return;
      }
      throw error;
    }
    logger.info('run started', { runId: run.runId, threadId: run.threadId });
    if (metrics) countRunStarted(metrics, run, now());
  };
}
