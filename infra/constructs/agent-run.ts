// One agent run = one Standard Step Functions execution whose steps invoke the agent-step function,
// and the sandbox-step function for sandbox tool calls. Agent-step starts the thread's sandbox task
// (RunTask) but stays outside the VPC: it needs Slack and Bedrock on the internet.
//
// The agent-step function needs the state machine's ARN (to start the next queued prompt when a run
// finishes) while the state machine references the function: a CloudFormation cycle. The state
// machine therefore gets an explicit name and the function is given the ARN computed from it.
import { ArnFormat, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import { DefinitionBody, LogLevel, QueryLanguage, StateMachine, StateMachineType } from 'aws-cdk-lib/aws-stepfunctions';
import { useChatSecrets, type ChatSecrets } from './chat-secrets.ts';
import { Construct } from 'constructs';
import { FUNCTION_ENTRIES } from '../function-entries.ts';
import { derivedName } from '../stack-names.ts';
import { createAgentFunction } from './agent-function.ts';
import { grantObjectReadWrite } from './data-bucket.ts';
import { agentRunDefinition } from './agent-run-definition.ts';
import { bedrockInvokeStatements } from './bedrock-access.ts';
import type { SandboxLauncher } from './sandbox-task.ts';
import { CHAT_STATE_ACTIONS, grantTableActions } from './state-table.ts';
import { agentEnv, handlerEnvironment } from '../../shared/env.ts';

export interface AgentRunProps {
  readonly table: ITable;
  readonly bucket: IBucket;
  readonly chatSecrets: ChatSecrets;
  readonly modelId: string;
  readonly runTimeout: Duration;
  readonly logRetention: RetentionDays;
  /** The function the SandboxTool state invokes (its published version). */
  readonly sandboxStep: NodejsFunction;
  /** The function the ReachTool and Connect states invoke (its published version). */
  readonly reachStep: NodejsFunction;
  /** How agent-step starts, finds and stops sandbox tasks. */
  readonly sandbox: SandboxLauncher;
  /** cdk.json context `hookFunctions`: the operator functions lambda hooks may invoke, and no others. */
  readonly hookFunctions?: readonly string[];
}

export class AgentRun extends Construct {
  readonly agentStep: NodejsFunction;
  /** The Bedrock model or inference profile id the agent-step function may invoke. */
  readonly modelId: string;
  readonly stateMachine: StateMachine;
  /** Equal to stateMachine.stateMachineArn, but computed from the name, so it creates no dependency. */
  readonly stateMachineArn: string;
  /** Every execution of the state machine (executions are named by run id, unknown in advance). */
  readonly executionArns: string;

  constructor(scope: Construct, id: string, props: AgentRunProps) {
    super(scope, id);
    const stack = Stack.of(this);
    this.modelId = props.modelId;
    const stateMachineName = derivedName('stateMachine', stack.stackName);
    this.stateMachineArn = stack.formatArn({
      service: 'states',
      resource: 'stateMachine',
      resourceName: stateMachineName,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    this.executionArns = stack.formatArn({
      service: 'states',
      resource: 'execution',
      resourceName: `${stateMachineName}:*`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });

    this.agentStep = createAgentFunction(this, 'AgentStep', {
      entry: FUNCTION_ENTRIES.agentStep,
      description: 'One step of the agent loop: prepare, model (with tools), finish, fail',
      timeout: Duration.minutes(15),
      memorySize: 1024,
      retainVersions: true,
      logRetention: props.logRetention,
      environment: handlerEnvironment(agentEnv, {
        TABLE_NAME: props.table.tableName,
        DATA_BUCKET: props.bucket.bucketName,
        STATE_MACHINE_ARN: this.stateMachineArn,
        BEDROCK_MODEL_ID: props.modelId,
        ...props.sandbox.launchEnvironment,
        ...(props.hookFunctions?.length ? { HOOK_FUNCTIONS: props.hookFunctions.join(',') } : {}),
      }),
    });
    // Chat SDK state, the actor, the reply ledger, the thread's sandbox record; a model step checks
    // the actor's flags and the ledger inside the transactions that reserve and settle its budgets.
    // BatchGetItem: prepare reads the thread's actor item with the channel's workspace version in one round trip.
    grantTableActions(props.table, this.agentStep, [...CHAT_STATE_ACTIONS, 'ConditionCheckItem', 'BatchGetItem']);
    grantObjectReadWrite(props.bucket, this.agentStep);
    useChatSecrets(this.agentStep, props.chatSecrets);
    this.agentStep.addToRolePolicy(
      new PolicyStatement({ effect: Effect.ALLOW, actions: ['states:StartExecution'], resources: [this.stateMachineArn] }),
    );
    // Subagents: a child's end resumes its waiting parent (the task token is the capability, and IAM
    // has no resource type for it), and a parent stops the children it no longer waits for.
    this.agentStep.addToRolePolicy(new PolicyStatement({ effect: Effect.ALLOW, actions: ['states:SendTaskSuccess'], resources: ['*'] }));
    this.agentStep.addToRolePolicy(
      new PolicyStatement({ effect: Effect.ALLOW, actions: ['states:StopExecution'], resources: [this.executionArns] }),
    );
    for (const statement of bedrockInvokeStatements(this, props.modelId)) {
      this.agentStep.addToRolePolicy(statement);
    }
    props.sandbox.grantLaunch(this.agentStep);
    // Lambda hooks: invoke on the declared ARNs only (a hook naming another is refused by IAM too).
    if (props.hookFunctions?.length) {
      this.agentStep.addToRolePolicy(
        new PolicyStatement({ effect: Effect.ALLOW, actions: ['lambda:InvokeFunction'], resources: [...props.hookFunctions] }),
      );
    }

    const logGroup = new LogGroup(this, 'Logs', {
      logGroupName: derivedName('stateMachineLogGroup', stack.stackName),
      retention: props.logRetention,
      // Named, so a retained group would make the next deploy under the same stack name fail.
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.stateMachine = new StateMachine(this, 'StateMachine', {
      stateMachineName,
      stateMachineType: StateMachineType.STANDARD,
      queryLanguage: QueryLanguage.JSON_PATH,
      // Executions invoke the published version, so a deploy never swaps code under a running run.
      definitionBody: DefinitionBody.fromChainable(
        agentRunDefinition(this, {
          agentStep: this.agentStep.currentVersion,
          sandboxStep: props.sandboxStep.currentVersion,
          reachStep: props.reachStep.currentVersion,
        }),
      ),
      timeout: props.runTimeout,
      // Execution data stays out of the logs: it holds user messages.
      logs: { destination: logGroup, level: LogLevel.ALL, includeExecutionData: false },
      tracingEnabled: true,
      comment: 'One agent run per prompt: prepare, model and tool steps until done, finish',
    });
    // A run invokes the versions it started with; after a deploy those are no longer the ones the
    // definition names, so the role may invoke every version of the three step functions.
    this.stateMachine.addToRolePolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['lambda:InvokeFunction'],
        resources: [`${this.agentStep.functionArn}:*`, `${props.sandboxStep.functionArn}:*`, `${props.reachStep.functionArn}:*`],
      }),
    );
  }
}
