// Declared triggers (`triggers` in cdk.json): each becomes an EventBridge rule on the account's
// default bus whose target is the scheduler function. The rule's input transformer hands the
// function the trigger's runtime part beside the whole event (`<aws.events.event.json>`), so the
// function needs no copy of the declarations. An S3 source is the "Object Created" events of a
// bucket with EventBridge notifications on, and the function may read exactly that bucket and prefix.
// Each trigger has its own dead-letter queue (events EventBridge could not deliver) and alarm.
import { Duration, Stack } from 'aws-cdk-lib';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import { type CfnRule, type EventPattern, Rule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { runtimeOf, s3EventPattern, type TriggerDeclaration } from '../../shared/triggers/declaration.ts';
import { createDeadLetterAlarm } from './dead-letter-alarm.ts';

export interface TriggersProps {
  readonly triggers: readonly TriggerDeclaration[];
  /** The scheduler function, which turns a firing into a prompt. */
  readonly handler: IFunction;
}

export interface DeclaredTrigger {
  readonly declaration: TriggerDeclaration;
  readonly rule: Rule;
  readonly deadLetterQueue: Queue;
  readonly alarm: Alarm;
  /** The objects an S3 trigger's function may read. */
  readonly objectArns?: string;
}

/**
 * JSON for an input template: EventBridge replaces `<name>` placeholders anywhere in the template,
 * so angle brackets in the trigger's own text are written as JSON escapes, which it leaves alone.
 */
const templateJson = (value: unknown) => JSON.stringify(value).replace(/</g, '\\u003c').replace(/>/g, '\\u003e');

/** An EventBridge pattern as written (`detail-type`) in CDK's form (`detailType`), which renders it back. */
function toCdkPattern(pattern: Record<string, unknown>): EventPattern {
  const { 'detail-type': detailType, ...rest } = pattern;
  return { ...rest, ...(detailType === undefined ? {} : { detailType }) } as EventPattern;
}

export class Triggers extends Construct {
  readonly declared: DeclaredTrigger[];

  constructor(scope: Construct, id: string, props: TriggersProps) {
    super(scope, id);
    const stack = Stack.of(this);
    this.declared = props.triggers.map((declaration) => {
      const scope = new Construct(this, declaration.name);
      const pattern = declaration.source.s3 ? s3EventPattern(declaration.source.s3) : declaration.source.eventPattern!;
      const rule = new Rule(scope, 'Rule', {
        description: `Trigger ${declaration.name}: its events start agent runs`.slice(0, 512),
        eventPattern: toCdkPattern(pattern),
      });
      const cfnRule = rule.node.defaultChild as CfnRule;
      // SSE-SQS (not KMS): EventBridge can deliver to it without a key policy.
      const deadLetterQueue = new Queue(scope, 'DeadLetters', {
        encryption: QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        retentionPeriod: Duration.days(14),
      });
      rule.addTarget(new LambdaFunction(props.handler, { retryAttempts: 3, maxEventAge: Duration.hours(1), deadLetterQueue }));
      cfnRule.addPropertyOverride('Targets.0.InputTransformer', {
        InputTemplate: `{"trigger": ${templateJson(runtimeOf(declaration))}, "event": <aws.events.event.json>}`,
      });
      const alarm = createDeadLetterAlarm(
        scope,
        'DeadLettersAlarm',
        deadLetterQueue,
        `An event of trigger ${declaration.name} could not be delivered to the scheduler function after its retries; it waits in the trigger's dead-letter queue (kept 14 days).`,
      );
      let objectArns: string | undefined;
      if (declaration.source.s3) {
        const { bucket, prefix } = declaration.source.s3;
        objectArns = stack.formatArn({ service: 's3', region: '', account: '', resource: bucket, resourceName: `${prefix ?? ''}*` });
        props.handler.addToRolePolicy(new PolicyStatement({ effect: Effect.ALLOW, actions: ['s3:GetObject'], resources: [objectArns] }));
      }
      return { declaration, rule, deadLetterQueue, alarm, ...(objectArns ? { objectArns } : {}) };
    });
  }
}
