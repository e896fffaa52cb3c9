// The alarms of the runtime, beside the dead-letter alarms the event constructs make for their own
// queues. Every alarm of the stack notifies the AlarmTopic (the stack routes them there). Each says in
// its description what happened and where to look. Periods are 5 minutes unless said otherwise.
import { Duration } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, MathExpression, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { IStateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { createDeadLetterAlarm } from './dead-letter-alarm.ts';
import { REAPER_INTERVAL } from './sandbox-reaper.ts';
import { runtimeMetric } from './runtime-metrics.ts';

const PERIOD = Duration.minutes(5);

/** Model calls answered with ThrottlingException, in percent of all attempts, that raise the alarm. */
export const MODEL_THROTTLE_ALARM_PERCENT = 10;

export interface AlarmsProps {
  readonly inbox: IQueue;
  /** How long a received inbox message stays invisible: a failed one comes back after it. */
  readonly inboxVisibilityTimeout: Duration;
  readonly inboxDeadLetters: IQueue;
  readonly runEndedDeadLetters: IQueue;
  readonly stateMachine: IStateMachine;
  /** The runtime's functions by role; each gets its errors-and-throttles alarm. */
  readonly functions: Readonly<Record<string, IFunction>>;
  readonly runTimeoutMinutes: number;
  readonly sandboxIdleMinutes: number;
  readonly dailyCostAlarmUsd: number;
}

export class Alarms extends Construct {
  readonly inboxDeadLetters: Alarm;
  readonly runEndedDeadLetters: Alarm;
  readonly inboxOldestMessage: Alarm;
  readonly executionsFailed: Alarm;
  readonly executionsTimedOut: Alarm;
  /** By function role. */
  readonly functionErrors: Record<string, Alarm>;
  readonly modelThrottling: Alarm;
  readonly dailyCost: Alarm;
  readonly sandboxAge: Alarm;

  constructor(scope: Construct, id: string, props: AlarmsProps) {
    super(scope, id);
    const aboveZero = { threshold: 0, comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD, evaluationPeriods: 1 };
    // Metrics without data points mean nothing happened (no failure, no message, no sandbox).
    const quietIsFine = { treatMissingData: TreatMissingData.NOT_BREACHING };

    this.inboxDeadLetters = createDeadLetterAlarm(
      this,
      'InboxDeadLetters',
      props.inboxDeadLetters,
      'A prompt failed dispatch on every receive; it waits in the inbox dead-letter queue (kept 14 days). See the dispatch function logs.',
    );
    this.runEndedDeadLetters = createDeadLetterAlarm(
      this,
      'RunEndedDeadLetters',
      props.runEndedDeadLetters,
      'The clean-up after a failed, timed-out or aborted run could not be delivered to the run-ended function; the thread may stay busy. The event waits in the run-ended dead-letter queue (kept 14 days).',
    );

    // Dispatch takes inbox messages within seconds; a message whose batch failed comes back after the
    // visibility timeout. One older than two of those has failed twice, or nothing consumes the inbox.
    const oldestAge = props.inboxVisibilityTimeout.toSeconds() * 2;
    this.inboxOldestMessage = new Alarm(this, 'InboxOldestMessage', {
      alarmDescription: `The oldest prompt in the inbox has waited over ${oldestAge / 60} minutes: dispatch is failing or not consuming. See the dispatch function logs and its errors.`,
      metric: props.inbox.metricApproximateAgeOfOldestMessage({ period: PERIOD, statistic: 'Maximum' }),
      threshold: oldestAge,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      ...quietIsFine,
    });

    this.executionsFailed = new Alarm(this, 'ExecutionsFailed', {
      alarmDescription:
        'An agent run (Step Functions execution) failed outside its own failure handling. See the execution in the Step Functions console.',
      metric: props.stateMachine.metricFailed({ period: PERIOD, statistic: 'Sum' }),
      ...aboveZero,
      ...quietIsFine,
    });
    this.executionsTimedOut = new Alarm(this, 'ExecutionsTimedOut', {
      alarmDescription: `An agent run reached the run timeout (runTimeoutMinutes, ${props.runTimeoutMinutes} minutes) and was ended by Step Functions.`,
      metric: props.stateMachine.metricTimedOut({ period: PERIOD, statistic: 'Sum' }),
      ...aboveZero,
      ...quietIsFine,
    });

    // One alarm per function: two metrics each, within the ten an alarm on metric math may use.
    this.functionErrors = Object.fromEntries(
      Object.entries(props.functions).map(([role, fn]) => [
        role,
        new Alarm(this, `${role[0]!.toUpperCase()}${role.slice(1)}Errors`, {
          alarmDescription: `The ${role} function failed (Errors) or was throttled (Throttles). See its log group.`,
          metric: new MathExpression({
            expression: 'errors + throttles',
            usingMetrics: {
              errors: fn.metricErrors({ period: PERIOD, statistic: 'Sum' }),
              throttles: fn.metricThrottles({ period: PERIOD, statistic: 'Sum' }),
            },
            period: PERIOD,
          }),
          ...aboveZero,
          ...quietIsFine,
        }),
      ]),
    );

    // The runtime's own count (ModelThrottles), not AWS/Bedrock InvocationThrottles: that one is per
    // model id and counts every application of the account calling that model, and an inference
    // profile's calls are counted under the Region that served them. This one counts exactly this
    // deployment's attempts, retried ones included: each is a wait the thread's user sat through. The
    // rate is throttled attempts over all attempts (answered steps plus throttles); a handful of
    // throttles in a quiet period is noise, so it must hold for two periods in three.
    this.modelThrottling = new Alarm(this, 'ModelThrottling', {
      alarmDescription: `Over ${MODEL_THROTTLE_ALARM_PERCENT}% of the model calls were throttled by Bedrock (ThrottlingException): runs slow down and may fail. Ask for a higher Bedrock quota or use a cross-Region inference profile.`,
      metric: new MathExpression({
        expression: '100 * throttles / (throttles + steps)',
        usingMetrics: {
          throttles: runtimeMetric(this, 'ModelThrottles', { statistic: 'Sum', period: PERIOD }),
          steps: runtimeMetric(this, 'ModelSteps', { statistic: 'Sum', period: PERIOD }),
        },
        period: PERIOD,
      }),
      threshold: MODEL_THROTTLE_ALARM_PERCENT,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 3,
      datapointsToAlarm: 2,
      ...quietIsFine,
    });

    this.dailyCost = new Alarm(this, 'DailyCost', {
      alarmDescription: `Model and sandbox cost of one day is over ${props.dailyCostAlarmUsd} USD (dailyCostAlarmUsd). The dashboard's top channels by cost shows where it went.`,
      metric: runtimeMetric(this, 'CostUsd', { statistic: 'Sum', period: Duration.days(1) }),
      threshold: props.dailyCostAlarmUsd,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      ...quietIsFine,
    });

    // A sandbox serves one run at a time, and a run lasts at most runTimeoutMinutes; the reaper stops
    // it within sandboxIdleMinutes (plus one sweep) of its last use. A sandbox older than that sum has
    // outlived a whole run and its idle timeout: either its thread's runs follow one another without
    // a pause (legitimate, but it is a sandbox billed for over an hour) or the reaper failed to stop it.
    const maxAgeSeconds = (props.runTimeoutMinutes + props.sandboxIdleMinutes) * 60 + REAPER_INTERVAL.toSeconds();
    this.sandboxAge = new Alarm(this, 'SandboxAge', {
      alarmDescription: `A sandbox task has run for over ${maxAgeSeconds / 60} minutes (runTimeoutMinutes + sandboxIdleMinutes + one reaper sweep): a thread keeps it busy, or the reaper cannot stop it. aws ecs list-tasks on the SandboxClusterName output lists them.`,
      metric: runtimeMetric(this, 'OldestSandboxAge', { statistic: 'Maximum', period: PERIOD }),
      threshold: maxAgeSeconds,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      ...quietIsFine,
    });
  }
}
