// Dispatch: consumes the FIFO inbox. For each prompt it takes the thread's lease with a conditional
// write on the actor item and starts one Step Functions execution, or queues the prompt behind the
// running one. Failed records are reported one by one so the rest of the batch is not redelivered.
import { Duration } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { IStateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { useChatSecrets, type ChatSecrets } from './chat-secrets.ts';
import { Construct } from 'constructs';
import { FUNCTION_ENTRIES } from '../function-entries.ts';
import { createAgentFunction } from './agent-function.ts';
import { grantOptionalRead, grantWriteKey, grantWriteUnder } from './data-bucket.ts';
import { ROOT_KEYS } from '../../shared/ids.ts';
import { AGENT_DEFINITIONS } from '../../shared/agents/definition.ts';
import { CHAT_STATE_ACTIONS, grantTableActions } from './state-table.ts';
import { dispatchEnv, handlerEnvironment } from '../../shared/env.ts';

/** Every thread's context.jsonl (adapter/channel/thread/context.jsonl). */
export const RUN_CONTEXTS = '*/context.jsonl';

/** Exported because the inbox's visibility timeout is derived from it. */
export const DISPATCH_TIMEOUT = Duration.seconds(30);

export interface DispatchProps {
  readonly inbox: IQueue;
  readonly table: ITable;
  readonly stateMachine: IStateMachine;
  readonly executionArns: string;
  /** settings.json holds the queue depth and per-channel queue mode. */
  readonly bucket: IBucket;
  readonly chatSecrets: ChatSecrets;
  readonly logRetention: RetentionDays;
}

export class Dispatch extends Construct {
  readonly handler: NodejsFunction;

  constructor(scope: Construct, id: string, props: DispatchProps) {
    super(scope, id);

    this.handler = createAgentFunction(this, 'Handler', {
      entry: FUNCTION_ENTRIES.dispatch,
      description: 'Takes the per-thread lease and starts one agent run per prompt',
      timeout: DISPATCH_TIMEOUT,
      logRetention: props.logRetention,
      environment: handlerEnvironment(dispatchEnv, {
        TABLE_NAME: props.table.tableName,
        STATE_MACHINE_ARN: props.stateMachine.stateMachineArn,
        DATA_BUCKET: props.bucket.bucketName,
      }),
    });
    // Chat SDK state, and the actor (its admission transaction puts a marker and updates the actor);
    // Query lists the threads holding run slots when a limit is reached (shared/run/capacity.ts);
    // BatchGetItem reads a prompt's actor item with the pause flag in one round trip (shared/policy/pause.ts);
    // ConditionCheckItem checks the pause flag inside the admission of a thread's first message instead.
    grantTableActions(props.table, this.handler, [...CHAT_STATE_ACTIONS, 'Query', 'BatchGetItem', 'ConditionCheckItem']);
    props.stateMachine.grantStartExecution(this.handler);
    // Interrupt mode stops the running execution; a lease held too long is checked against its execution.
    this.handler.addToRolePolicy(
      new PolicyStatement({ actions: ['states:StopExecution', 'states:DescribeExecution'], resources: [props.executionArns] }),
    );
    // settings.json is optional: a fresh deployment has none.
    grantOptionalRead(props.bucket, this.handler, [ROOT_KEYS.settings]);
    // A long prompt's text is stored before the prompt is queued.
    grantWriteUnder(props.bucket, this.handler, ROOT_KEYS.prompts);
    // Admins change a channel's settings from the chat (`settings set`): that one key, nothing else.
    grantWriteKey(props.bucket, this.handler, ROOT_KEYS.settings);
    // Admins' `runs` shows each running run's model steps and cost so far, from its thread's context.
    grantOptionalRead(props.bucket, this.handler, [RUN_CONTEXTS]);
    // `agents` lists the operators' and the channel's agent definitions, and reports an invalid one beside it.
    grantOptionalRead(props.bucket, this.handler, [...AGENT_DEFINITIONS.files]);
    for (const key of AGENT_DEFINITIONS.errorFiles) grantWriteKey(props.bucket, this.handler, key);
    useChatSecrets(this.handler, props.chatSecrets);

    this.handler.addEventSource(
      new SqsEventSource(props.inbox, {
        // FIFO event sources take at most 10 records per batch and no batching window.
        batchSize: 10,
        reportBatchItemFailures: true,
      }),
    );
  }
}
