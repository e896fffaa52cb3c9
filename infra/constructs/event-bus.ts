// The event bus (design: "Event bus"): one scheduler function for three inputs.
//
//   S3 notifications   events/*.json created or removed in the data bucket -> the file's schedule is
//                      created, updated or deleted (or the event fires now); a bad file gets a
//                      *.error.json beside it; a file created under uploads/ starts a thread
//   schedule firings   EventBridge Scheduler invokes the function with the firing (see EventSchedules)
//   bus events         events on the custom bus whose detail has `text` -> a prompt
//
// All three invoke the function asynchronously. What EventBridge cannot deliver lands in the rule's
// dead-letter queue; what the function fails on after Lambda's retries lands in a failed-invocations
// queue. Each queue has an alarm.
import { type CfnResource, Duration, Stack } from 'aws-cdk-lib';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { EventBus, Rule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { Effect, PolicyStatement, type Role } from 'aws-cdk-lib/aws-iam';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { SqsDestination } from 'aws-cdk-lib/aws-lambda-destinations';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { EventType, type IBucket } from 'aws-cdk-lib/aws-s3';
import { LambdaDestination } from 'aws-cdk-lib/aws-s3-notifications';
import { type IQueue, Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct, type IConstruct } from 'constructs';
import { FUNCTION_ENTRIES } from '../function-entries.ts';
import { ROOT_KEYS } from '../../shared/ids.ts';
import { derivedName } from '../stack-names.ts';
import { createAgentFunction } from './agent-function.ts';
import { giveLogGroup, writeLogsOnlyTo } from './custom-resource-functions.ts';
import { createDeadLetterAlarm } from './dead-letter-alarm.ts';
import type { EventSchedules } from './event-schedules.ts';
import { CHAT_STATE_ACTIONS, grantTableActions } from './state-table.ts';
import { grantSendToInbox } from './inbox.ts';
import { useChatSecrets, type ChatSecrets } from './chat-secrets.ts';
import { handlerEnvironment, schedulerEnv } from '../../shared/env.ts';

/** Where event files live in the data bucket, and what they are called. */
export const EVENT_FILES = { prefix: 'events/', suffix: '.json' } as const;
/** Where files that start a thread in their channel are put (shared/triggers/uploads.ts). */
export const UPLOAD_FILES = { prefix: 'uploads/' } as const;

/** Construct id prefix of the handler CDK adds once per stack for bucket notifications. */
const NOTIFICATIONS_HANDLER_ID = 'BucketNotificationsHandler';

/** The scheduler function's schedule management actions, on the group's schedules only. */
export const SCHEDULE_ACTIONS = [
  'scheduler:CreateSchedule',
  'scheduler:UpdateSchedule',
  'scheduler:DeleteSchedule',
  'scheduler:GetSchedule',
];

export interface AgentEventBusProps {
  readonly schedules: EventSchedules;
  readonly bucket: IBucket;
  readonly table: ITable;
  readonly inbox: IQueue;
  readonly chatSecrets: ChatSecrets;
  readonly logRetention: RetentionDays;
}

export class AgentEventBus extends Construct {
  readonly handler: NodejsFunction;
  /** The data bucket's event files (and their *.error.json): all the function may read, write or delete there. */
  readonly eventFileArns: string;
  /** Uploads (and their NAME.prompt.txt), which the function reads. */
  readonly uploadArns: string;
  /** Threads' attachments/, where the function copies an upload's or a trigger's file. */
  readonly attachmentArns: string;
  readonly bus: EventBus;
  readonly rule: Rule;
  /** Bus events EventBridge could not deliver to the function. */
  readonly deadLetterQueue: Queue;
  /** Asynchronous invocations (of any of the three inputs) that failed after Lambda's retries. */
  readonly failedInvocations: Queue;
  readonly alarms: Alarm[];
  /**
   * CDK's stack-wide BucketNotificationsHandler (a custom resource function with its own role) that
   * writes the bucket's notification configuration at deploy time. Exposed for nag acknowledgements.
   */
  readonly notificationsHandler: IConstruct;

  constructor(scope: Construct, id: string, props: AgentEventBusProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const { schedules, bucket } = props;

    this.handler = createAgentFunction(this, 'Handler', {
      entry: FUNCTION_ENTRIES.scheduler,
      description: 'Turns event files into schedules and schedule firings and bus events into prompts',
      timeout: Duration.seconds(60),
      memorySize: 512,
      logRetention: props.logRetention,
      environment: handlerEnvironment(schedulerEnv, {
        TABLE_NAME: props.table.tableName,
        DATA_BUCKET: bucket.bucketName,
        INBOX_QUEUE_URL: props.inbox.queueUrl,
        SCHEDULE_GROUP_NAME: schedules.groupName,
        SCHEDULER_ROLE_ARN: schedules.role.roleArn,
        SCHEDULER_TARGET_ARN: schedules.targetArn,
        SCHEDULE_DLQ_ARN: schedules.deadLetterQueue.queueArn,
      }),
    });
    // Named, so schedules (and the schedule role) can name it by its computed ARN.
    (this.handler.node.defaultChild as CfnFunction).functionName = schedules.targetFunctionName;

    // Chat SDK state and the firing ledger; prompts go to the inbox like a person's message.
    grantTableActions(props.table, this.handler, CHAT_STATE_ACTIONS);
    grantSendToInbox(props.inbox, this.handler);
    useChatSecrets(this.handler, props.chatSecrets);

    // Event files only: read them, write and delete the *.error.json beside a bad one.
    this.eventFileArns = bucket.arnForObjects(`${EVENT_FILES.prefix}*`);
    this.handler.addToRolePolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'],
        resources: [this.eventFileArns],
      }),
    );
    // settings.json: the deployment's limits on event files (minEventIntervalMinutes).
    this.handler.addToRolePolicy(
      new PolicyStatement({ effect: Effect.ALLOW, actions: ['s3:GetObject'], resources: [bucket.arnForObjects(ROOT_KEYS.settings)] }),
    );
    // Uploads: read the file and its instructions; copy it into the new thread's attachments/.
    this.uploadArns = bucket.arnForObjects(`${UPLOAD_FILES.prefix}*`);
    this.attachmentArns = bucket.arnForObjects('*/attachments/*');
    this.handler.addToRolePolicy(new PolicyStatement({ effect: Effect.ALLOW, actions: ['s3:GetObject'], resources: [this.uploadArns] }));
    this.handler.addToRolePolicy(
      new PolicyStatement({ effect: Effect.ALLOW, actions: ['s3:PutObject'], resources: [this.attachmentArns] }),
    );
    // A removed file is recognised by GetObject's 404 NoSuchKey, which S3 answers only to a caller
    // allowed to list the bucket (anyone else gets 403 AccessDenied). Listing shows keys, not content.
    this.handler.addToRolePolicy(new PolicyStatement({ effect: Effect.ALLOW, actions: ['s3:ListBucket'], resources: [bucket.bucketArn] }));

    // Managing the group's schedules, and handing them the schedule role (to EventBridge Scheduler only).
    this.handler.addToRolePolicy(
      new PolicyStatement({ effect: Effect.ALLOW, actions: SCHEDULE_ACTIONS, resources: [schedules.scheduleArns] }),
    );
    this.handler.addToRolePolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['iam:PassRole'],
        resources: [schedules.role.roleArn],
        conditions: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
      }),
    );

    // Input 1: event files. Created covers new files and edits; removed deletes the schedule.
    const filter = { prefix: EVENT_FILES.prefix, suffix: EVENT_FILES.suffix };
    const destination = new LambdaDestination(this.handler);
    bucket.addEventNotification(EventType.OBJECT_CREATED, destination, filter);
    bucket.addEventNotification(EventType.OBJECT_REMOVED, destination, filter);
    bucket.addEventNotification(EventType.OBJECT_CREATED, destination, { prefix: UPLOAD_FILES.prefix });
    const notificationsHandler = stack.node.children.find((c) => c.node.id.startsWith(NOTIFICATIONS_HANDLER_ID));
    if (!notificationsHandler) throw new Error('the bucket notifications handler was not created');
    this.notificationsHandler = notificationsHandler;
    // It runs during deploys only: its logs get the deployment's retention, its role writes only there
    // (in place of AWSLambdaBasicExecutionRole) besides s3:PutBucketNotification on this bucket.
    const handlerLogs = giveLogGroup(
      this,
      'NotificationsHandlerLogs',
      notificationsHandler.node.findChild('Resource') as CfnResource,
      props.logRetention,
    );
    writeLogsOnlyTo(notificationsHandler.node.findChild('Role') as Role, handlerLogs);

    // Input 3: the custom bus. Any event whose detail has `text`; the function checks the rest.
    this.bus = new EventBus(this, 'Bus', {
      eventBusName: derivedName('eventBus', stack.stackName),
      description: 'Events with detail {text, threadId | adapterId + channelId} become prompts to the agent',
    });
    // SSE-SQS (not KMS): EventBridge can deliver to it without a key policy.
    this.deadLetterQueue = new Queue(this, 'DeadLetters', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    this.rule = new Rule(this, 'Rule', {
      eventBus: this.bus,
      description: 'Bus events with a text: a prompt for a thread or a channel',
      eventPattern: { detail: { text: [{ exists: true }] } },
    });
    // No input transformation: the function gets the whole event (source, detail-type, id, detail).
    this.rule.addTarget(new LambdaFunction(this.handler, { retryAttempts: 3, deadLetterQueue: this.deadLetterQueue }));

    // All inputs: an invocation that still fails after Lambda's two retries is kept, not dropped.
    this.failedInvocations = new Queue(this, 'FailedInvocations', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    this.handler.configureAsyncInvoke({ retryAttempts: 2, onFailure: new SqsDestination(this.failedInvocations) });

    this.alarms = [
      createDeadLetterAlarm(
        this,
        'DeadLettersAlarm',
        this.deadLetterQueue,
        'A bus event could not be delivered to the scheduler function after its retries; it waits in the bus rule dead-letter queue (kept 14 days).',
      ),
      createDeadLetterAlarm(
        this,
        'FailedInvocationsAlarm',
        this.failedInvocations,
        'The scheduler function failed on an event file notification, a schedule firing or a bus event after its retries; the invocation waits in the failed-invocations queue (kept 14 days).',
      ),
    ];
  }
}
