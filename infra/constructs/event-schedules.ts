// Where the schedules of event files live. The scheduler function creates, updates and deletes them
// at runtime (one per event file, named after its key) in one EventBridge Scheduler schedule group;
// each names the scheduler function as its target, this construct's role as the role EventBridge
// Scheduler assumes to invoke it, and this construct's queue as its dead-letter queue.
//
// The target is the scheduler function's ARN computed from its name, so the role, the function's
// environment and the function's own IAM policy can all name each other without a cycle.
import { ArnFormat, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import { Effect, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { type CfnScheduleGroup, ScheduleGroup } from 'aws-cdk-lib/aws-scheduler';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { derivedName } from '../stack-names.ts';
import { createDeadLetterAlarm } from './dead-letter-alarm.ts';

export interface EventSchedulesProps {
  /** Name of the function every schedule invokes (the function is created with exactly this name). */
  readonly targetFunctionName: string;
}

export class EventSchedules extends Construct {
  readonly group: ScheduleGroup;
  /** The group's name as a reference to it (Ref), so whatever uses the name is created after the group. */
  readonly groupName: string;
  /** The ARN pattern of every schedule in the group: what the scheduler function may manage. */
  readonly scheduleArns: string;
  readonly targetFunctionName: string;
  /** The target function's ARN, computed from its name. */
  readonly targetArn: string;
  /** The role EventBridge Scheduler assumes to invoke the target and to write to the dead-letter queue. */
  readonly role: Role;
  readonly deadLetterQueue: Queue;
  readonly deadLetterAlarm: Alarm;

  constructor(scope: Construct, id: string, props: EventSchedulesProps) {
    super(scope, id);
    const stack = Stack.of(this);

    const groupName = derivedName('scheduleGroup', stack.stackName);
    this.group = new ScheduleGroup(this, 'Group', {
      scheduleGroupName: groupName,
      // Its schedules invoke this stack's function: without the stack they have nothing to invoke,
      // and a retained group would block a new deployment under the same name.
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.groupName = (this.group.node.defaultChild as CfnScheduleGroup).ref;
    this.scheduleArns = stack.formatArn({ service: 'scheduler', resource: 'schedule', resourceName: `${groupName}/*` });

    this.targetFunctionName = props.targetFunctionName;
    this.targetArn = stack.formatArn({
      service: 'lambda',
      resource: 'function',
      resourceName: props.targetFunctionName,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });

    // SSE-SQS (not KMS): EventBridge Scheduler can deliver to it without a key policy.
    this.deadLetterQueue = new Queue(this, 'DeadLetters', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });

    // Only schedules of this account's group may assume the role (confused-deputy protection).
    this.role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('scheduler.amazonaws.com', {
        conditions: {
          StringEquals: { 'aws:SourceAccount': stack.account, 'aws:SourceArn': this.group.scheduleGroupArn },
        },
      }),
      description: 'Assumed by EventBridge Scheduler: invokes the scheduler function, dead-letters undeliverable firings',
    });
    this.role.addToPolicy(new PolicyStatement({ effect: Effect.ALLOW, actions: ['lambda:InvokeFunction'], resources: [this.targetArn] }));
    this.role.addToPolicy(
      new PolicyStatement({ effect: Effect.ALLOW, actions: ['sqs:SendMessage'], resources: [this.deadLetterQueue.queueArn] }),
    );

    this.deadLetterAlarm = createDeadLetterAlarm(
      this,
      'DeadLettersAlarm',
      this.deadLetterQueue,
      'A scheduled event could not be delivered to the scheduler function after its retries; the firing waits in the schedule dead-letter queue (kept 14 days).',
    );
  }
}
