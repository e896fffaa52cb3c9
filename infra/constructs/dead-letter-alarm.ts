// A queue that only fills when something could not be delivered or processed: a CloudWatch alarm
// goes to ALARM as soon as one message is waiting in it. The stack routes it, like every alarm, to
// the AlarmTopic.
import { Duration } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';

export function createDeadLetterAlarm(scope: Construct, id: string, queue: IQueue, description: string): Alarm {
  return new Alarm(scope, id, {
    alarmDescription: description,
    metric: queue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5), statistic: 'Maximum' }),
    comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
    threshold: 0,
    evaluationPeriods: 1,
    // SQS stops reporting an idle queue's metrics; no data means no messages.
    treatMissingData: TreatMissingData.NOT_BREACHING,
  });
}
