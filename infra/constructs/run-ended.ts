// Cleanup for runs that end without reaching their own Finish or HandleFailure step (timed out,
// aborted by a stop, or failed in a way no Catch saw): an EventBridge rule on the execution's
// status change invokes run-ended, which releases the thread's lease and starts the next queued
// prompt. Deliveries EventBridge cannot make are kept in a dead-letter queue.
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Duration } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Rule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { IStateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { FUNCTION_ENTRIES } from '../function-entries.ts';
import { createAgentFunction } from './agent-function.ts';
import { grantObjectReadWrite } from './data-bucket.ts';
import { CHAT_STATE_ACTIONS, grantTableActions } from './state-table.ts';
import { useChatSecrets, type ChatSecrets } from './chat-secrets.ts';
import { agentEnv, handlerEnvironment } from '../../shared/env.ts';

/** Execution statuses after which no step of the run will clean up by itself. */
export const UNFINISHED_RUN_STATUSES = ['FAILED', 'TIMED_OUT', 'ABORTED'];

export interface RunEndedProps {
  readonly stateMachine: IStateMachine;
  /** Every execution of the state machine: a stopped run stops the subagents it started. */
  readonly executionArns: string;
  readonly table: ITable;
  readonly bucket: IBucket;
  readonly chatSecrets: ChatSecrets;
  readonly logRetention: RetentionDays;
}

export class RunEnded extends Construct {
  readonly handler: NodejsFunction;
  readonly rule: Rule;
  readonly deadLetterQueue: Queue;

  constructor(scope: Construct, id: string, props: RunEndedProps) {
    super(scope, id);

    this.handler = createAgentFunction(this, 'Handler', {
      entry: FUNCTION_ENTRIES.runEnded,
      description: 'Releases the thread lease after a failed, timed-out or aborted run',
      timeout: Duration.seconds(60),
      logRetention: props.logRetention,
      environment: handlerEnvironment(agentEnv, {
        TABLE_NAME: props.table.tableName,
        STATE_MACHINE_ARN: props.stateMachine.stateMachineArn,
        DATA_BUCKET: props.bucket.bucketName,
      }),
    });
    // Chat SDK state, the actor's release, the reply ledger.
    grantTableActions(props.table, this.handler, CHAT_STATE_ACTIONS);
    props.stateMachine.grantStartExecution(this.handler);
    // A subagent that ended here resumes its waiting parent (the task token is the capability); a run
    // that ended here stops the subagents it started.
    this.handler.addToRolePolicy(new PolicyStatement({ actions: ['states:SendTaskSuccess'], resources: ['*'] }));
    this.handler.addToRolePolicy(new PolicyStatement({ actions: ['states:StopExecution'], resources: [props.executionArns] }));
    grantObjectReadWrite(props.bucket, this.handler);
    useChatSecrets(this.handler, props.chatSecrets);

    // SSE-SQS (not KMS): EventBridge can deliver to it without a key policy.
    this.deadLetterQueue = new Queue(this, 'DeadLetters', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });

    this.rule = new Rule(this, 'Rule', {
      description: 'An agent run ended without cleaning up after itself',
      eventPattern: {
        source: ['aws.states'],
        detailType: ['Step Functions Execution Status Change'],
        detail: {
          status: UNFINISHED_RUN_STATUSES,
          stateMachineArn: [props.stateMachine.stateMachineArn],
        },
      },
    });
    this.rule.addTarget(
      new LambdaFunction(this.handler, {
        retryAttempts: 8,
        maxEventAge: Duration.hours(2),
        deadLetterQueue: this.deadLetterQueue,
      }),
    );
  }
}
