// The one place every alarm of the stack notifies: an SNS topic, encrypted with a key of its own
// (CloudWatch can publish to a topic only under a customer managed key whose policy lets it use the
// key; the AWS managed SNS key's policy cannot be changed) and refusing requests without TLS. With
// the alarmEmail setting, that address is subscribed (SNS mails a confirmation link first).
import { ArnFormat, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { Effect, PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct, type IConstruct } from 'constructs';

export interface AlarmTopicProps {
  /** Subscribed by email when given (deployment setting alarmEmail). */
  readonly email?: string;
}

export class AlarmTopic extends Construct {
  readonly topic: Topic;
  readonly key: Key;

  constructor(scope: Construct, id: string, props: AlarmTopicProps) {
    super(scope, id);
    const stack = Stack.of(this);
    this.key = new Key(this, 'Key', {
      description: 'Encrypts the alarm topic of the agent runtime',
      enableKeyRotation: true,
      // Nothing stays encrypted under it: messages are delivered, not kept.
      removalPolicy: RemovalPolicy.DESTROY,
      pendingWindow: Duration.days(7),
    });
    const cloudWatch = new ServicePrincipal('cloudwatch.amazonaws.com');
    // Only alarms of this account may use the key and publish; the condition keeps another account's
    // alarm from using this topic as its action.
    const thisAccountsAlarms = {
      StringEquals: { 'aws:SourceAccount': stack.account },
      ArnLike: {
        'aws:SourceArn': stack.formatArn({
          service: 'cloudwatch',
          resource: 'alarm',
          resourceName: '*',
          arnFormat: ArnFormat.COLON_RESOURCE_NAME,
        }),
      },
    };
    this.key.addToResourcePolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        principals: [cloudWatch],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
        conditions: thisAccountsAlarms,
      }),
    );
    this.topic = new Topic(this, 'Topic', {
      displayName: `${stack.stackName} alarms`,
      masterKey: this.key,
      enforceSSL: true,
    });
    this.topic.addToResourcePolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        principals: [cloudWatch],
        actions: ['sns:Publish'],
        resources: [this.topic.topicArn],
        conditions: thisAccountsAlarms,
      }),
    );
    if (props.email) this.topic.addSubscription(new EmailSubscription(props.email));
  }

  /** Every alarm under `scope` notifies the topic when it goes to ALARM and when it is OK again. */
  notifyOnEveryAlarmIn(scope: IConstruct): Alarm[] {
    const alarms = scope.node.findAll().filter((c): c is Alarm => c instanceof Alarm);
    const action = new SnsAction(this.topic);
    for (const alarm of alarms) {
      alarm.addAlarmAction(action);
      alarm.addOkAction(action);
    }
    return alarms;
  }
}
