// The idle reaper: every minute, stops the sandbox tasks whose thread has not used them for
// sandboxIdleMinutes, and any sandbox task that no record owns (an orphan, after a grace period). Fargate bills per second while a
// task runs, so an idle sandbox costs nothing once reaped. A missed tick is simply made up by the next
// one, so the schedule target needs no dead-letter queue.
import { Duration } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { FUNCTION_ENTRIES } from '../function-entries.ts';
import { createAgentFunction } from './agent-function.ts';
import type { SandboxTask } from './sandbox-task.ts';
import { grantTableActions } from './state-table.ts';
import { handlerEnvironment, sandboxReaperEnv } from '../../shared/env.ts';

export const REAPER_INTERVAL = Duration.minutes(1);

export interface SandboxReaperProps {
  readonly table: ITable;
  readonly task: SandboxTask;
  readonly idleMinutes: number;
  readonly logRetention: RetentionDays;
}

export class SandboxReaper extends Construct {
  readonly handler: NodejsFunction;
  readonly rule: Rule;

  constructor(scope: Construct, id: string, props: SandboxReaperProps) {
    super(scope, id);
    this.handler = createAgentFunction(this, 'Handler', {
      entry: FUNCTION_ENTRIES.sandboxReaper,
      description: 'Stops sandbox tasks that have been idle for the configured number of minutes',
      timeout: Duration.seconds(60),
      logRetention: props.logRetention,
      environment: handlerEnvironment(sandboxReaperEnv, {
        TABLE_NAME: props.table.tableName,
        SANDBOX_CLUSTER_ARN: props.task.cluster.clusterArn,
        SANDBOX_IDLE_MINUTES: String(props.idleMinutes),
      }),
    });
    // Lists the sandbox records (one partition), claims one for stopping, forgets it once stopped.
    grantTableActions(props.table, this.handler, ['Query', 'UpdateItem', 'DeleteItem']);
    props.task.grantSweep(this.handler);

    this.rule = new Rule(this, 'Schedule', {
      description: 'Stops idle sandbox tasks',
      schedule: Schedule.rate(REAPER_INTERVAL),
    });
    // The next tick retries anyway: one attempt, and an event older than the interval is dropped.
    this.rule.addTarget(new LambdaFunction(this.handler, { retryAttempts: 0, maxEventAge: REAPER_INTERVAL }));
  }
}
