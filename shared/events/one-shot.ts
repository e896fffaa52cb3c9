// A one-time schedule the scheduler function sets for itself (a trigger's rate-limit summary at the
// end of its window): at() in UTC, deleted after it fires, with the same retries and dead-letter
// queue as event files' schedules. Creating one that exists already is a success: it is the same one.
import { CreateScheduleCommand, type SchedulerClient } from '@aws-sdk/client-scheduler';
import { isConflict } from '../aws/errors.ts';

export interface ScheduleTargetDeps {
  scheduler: SchedulerClient;
  groupName: string;
  /** The role EventBridge Scheduler assumes to invoke the target. */
  roleArn: string;
  /** The function each schedule invokes with its firing. */
  targetArn: string;
  deadLetterArn: string;
}

/** The largest Target.Input EventBridge Scheduler takes: 256 KB, counted in UTF-8 bytes. */
export const MAX_SCHEDULE_INPUT_BYTES = 256 * 1024;

/** What every schedule of the group invokes: the function, with the firing, retried, dead-lettered. */
export function scheduleTarget(deps: ScheduleTargetDeps, input: unknown) {
  return {
    Arn: deps.targetArn,
    RoleArn: deps.roleArn,
    Input: JSON.stringify(input),
    RetryPolicy: { MaximumRetryAttempts: 3, MaximumEventAgeInSeconds: 3600 },
    DeadLetterConfig: { Arn: deps.deadLetterArn },
  };
}

/** `at()` wants the UTC wall time to the second, without a zone suffix. */
const atExpression = (at: Date) => `at(${at.toISOString().slice(0, 19)})`;

export async function scheduleOnce(deps: ScheduleTargetDeps, name: string, at: Date, input: unknown, description: string): Promise<void> {
  try {
    await deps.scheduler.send(
      new CreateScheduleCommand({
        Name: name,
        GroupName: deps.groupName,
        Description: description.slice(0, 512),
        ScheduleExpression: atExpression(at),
        ScheduleExpressionTimezone: 'UTC',
        FlexibleTimeWindow: { Mode: 'OFF' },
        State: 'ENABLED',
        ActionAfterCompletion: 'DELETE',
        Target: scheduleTarget(deps, input),
      }),
    );
  } catch (error) {
    if (!isConflict(error)) throw error;
  }
}
