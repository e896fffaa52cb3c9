// The agent run's state machine definition. The agent-step handler relies on this exact shape:
//
//   Start --($.loop.next present: a run handed over from an earlier execution)--> NextStep
//         \--(otherwise)--> Prepare -> NextStep
//   (Prepare's invocation goes on into the run's first model step when prepare returns "model"; and a
//   Prepare or Model invocation whose step ends the run, other than by a stop, finishes it there and
//   returns $.loop.released: a plain reply is one task state, Prepare. A run stopped before or during
//   a step still goes through Finish, when its execution was not stopped too.)
//   NextStep --($.loop.released present: the step finished the run)--> RunSucceeded
//            |--($.loop.next == "model")----> Model
//            |--($.loop.next == "tool")-----> Tool        -> NextStep
//            |--($.loop.next == "sandbox")--> SandboxTool -> NextStep
//            |--($.loop.next == "progress")-> ToolProgress -> NextStep (back to SandboxTool)
//            |--($.loop.next == "reach")----> ReachTool   -> NextStep
//            |--($.loop.next == "connect")--> Connect     -> NextStep
//            |--($.loop.next == "approval")-> AwaitApproval -> Tool
//            |--($.loop.next == "subagents")-> AwaitSubagents -> Tool
//            |--($.loop.next == "handoff")--> Handoff -> HandedOff (a fresh execution goes on)
//            \--(otherwise)----------------> Finish -> RunSucceeded
//   AwaitApproval --Catch States.Timeout, ApprovalNotWaiting (input kept)--> Tool
//   AwaitSubagents --Catch States.Timeout (input kept)--> Tool
//   any task --Catch States.ALL ($.error)--> HandleFailure -> RunFailed
//   HandleFailure --Catch States.ALL--> RunFailed
//
// Every task invokes a function with {"action": <step>, "state": <whole state>} and stores the result
// under $.loop, so the run object given as execution input stays intact. SandboxTool invokes the
// sandbox-step function (in the sandbox VPC); ReachTool and Connect invoke the reach-step function
// (web_fetch and MCP calls; Connect lists a run's MCP tools once, sent there by the run's first
// model step, so a run without MCP servers takes no extra state); every other task invokes agent-step.
// AwaitApproval is the exception: it invokes agent-step with `.waitForTaskToken` (the step stores the
// token in the approval record and posts the approval message) and then waits, holding no Lambda,
// until a decision is sent with the token or $.loop.approval.timeoutSeconds pass. It keeps its input,
// so the Tool step that follows reads the decision from the approval record, whichever way it came.
// AwaitSubagents waits the same way for the child runs (executions of this same state machine) that
// a run's subagent calls started: the last child to end sends the token (shared/run/subagents/), and
// the Tool step that follows gives each call its child's answer, or stops a child still working.
// ToolProgress is where a long command's last line reaches the thread's status: SandboxTool, which
// cannot reach the chat from its VPC, returns "progress" when the command still runs after a wait
// and printed a new line; ToolProgress (agent-step) shows it and returns "sandbox", and SandboxTool
// attaches to the same command. A command that ends within the first wait never goes through it.
// JSONPath, not JSONata: the local Step Functions runner ignores JSONata.
import { Duration } from 'aws-cdk-lib';
import {
  Choice,
  Condition,
  Fail,
  type IChainable,
  IntegrationPattern,
  JitterType,
  JsonPath,
  Succeed,
  TaskInput,
  Timeout,
} from 'aws-cdk-lib/aws-stepfunctions';
import { LambdaInvoke } from 'aws-cdk-lib/aws-stepfunctions-tasks';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { Construct } from 'constructs';
import { APPROVAL_NOT_WAITING, type ContinuingStep, type NextValue, type StepAction } from '../../shared/run/step-contract.ts';

/** The state that runs each value of $.loop.next that leads to another step. */
export const NEXT_STEPS = {
  model: 'Model',
  tool: 'Tool',
  sandbox: 'SandboxTool',
  progress: 'ToolProgress',
  reach: 'ReachTool',
  connect: 'Connect',
} as const satisfies Record<ContinuingStep, string>;

export const RUN_FAILED_ERROR = 'AgentRunFailed';

export interface AgentRunFunctions {
  /** Published version of the agent-step function. */
  readonly agentStep: IFunction;
  /** Published version of the sandbox-step function. */
  readonly sandboxStep: IFunction;
  /** Published version of the reach-step function. */
  readonly reachStep: IFunction;
}

export function agentRunDefinition(scope: Construct, functions: AgentRunFunctions): IChainable {
  // Many threads at once can exhaust Lambda concurrency; a throttled step waits, it does not fail the run.
  const throttled = {
    errors: ['Lambda.TooManyRequestsException'],
    interval: Duration.seconds(2),
    backoffRate: 2,
    maxAttempts: 8,
    maxDelay: Duration.seconds(60),
    jitterStrategy: JitterType.FULL,
  };
  const step = (id: string, action: StepAction, lambdaFunction: IFunction = functions.agentStep) =>
    LambdaInvoke.jsonPath(scope, id, {
      lambdaFunction,
      payload: TaskInput.fromObject({ action, 'state.$': '$' }),
      payloadResponseOnly: true,
      resultPath: '$.loop',
      // retryOnServiceExceptions stays on: transient Lambda service errors are retried with backoff.
    }).addRetry(throttled);

  const runFailed = Fail.jsonPath(scope, 'RunFailed', {
    error: RUN_FAILED_ERROR,
    cause: 'The agent run failed; the error is in the execution history',
  });
  const handleFailure = step('HandleFailure', 'fail');
  handleFailure.next(runFailed);
  // If the failure handler fails too, end the run anyway: the run-ended rule cleans up after it.
  handleFailure.addCatch(runFailed, { errors: ['States.ALL'], resultPath: '$.error' });

  const prepare = step('Prepare', 'prepare');
  const model = step(NEXT_STEPS.model, 'model');
  const tool = step(NEXT_STEPS.tool, 'tool');
  const sandboxTool = step(NEXT_STEPS.sandbox, 'tool', functions.sandboxStep);
  const toolProgress = step(NEXT_STEPS.progress, 'progress');
  const reachTool = step(NEXT_STEPS.reach, 'tool', functions.reachStep);
  const connect = step(NEXT_STEPS.connect, 'connect', functions.reachStep);
  const finish = step('Finish', 'finish');
  // Long runs continue in a fresh execution well before Step Functions' 25,000-event history limit.
  const handoff = step('Handoff', 'handoff');
  // A wait: agent-step is invoked with the task token (it stores it where the waited-for end will find
  // it), then the state holds no Lambda until the token is sent back or `timeoutPath`'s seconds pass.
  const waitForToken = (id: string, action: 'approval' | 'subagents', timeoutPath: string) =>
    LambdaInvoke.jsonPath(scope, id, {
      lambdaFunction: functions.agentStep,
      integrationPattern: IntegrationPattern.WAIT_FOR_TASK_TOKEN,
      payload: TaskInput.fromObject({ action: action satisfies StepAction, 'state.$': '$', taskToken: JsonPath.taskToken }),
      taskTimeout: Timeout.at(timeoutPath),
      resultPath: JsonPath.DISCARD,
    }).addRetry(throttled);
  const awaitApproval = waitForToken('AwaitApproval', 'approval', '$.loop.approval.timeoutSeconds');
  // Timed out, already decided, or its message could not be posted (then denied): the Tool step says which.
  awaitApproval.addCatch(tool, { errors: ['States.Timeout', APPROVAL_NOT_WAITING], resultPath: JsonPath.DISCARD });
  const awaitSubagents = waitForToken('AwaitSubagents', 'subagents', '$.loop.subagents.timeoutSeconds');
  // The run's time ran out first: the Tool step stops the children still working and says so.
  awaitSubagents.addCatch(tool, { errors: ['States.Timeout'], resultPath: JsonPath.DISCARD });
  for (const task of [
    prepare,
    model,
    tool,
    sandboxTool,
    toolProgress,
    reachTool,
    connect,
    awaitApproval,
    awaitSubagents,
    finish,
    handoff,
  ]) {
    task.addCatch(handleFailure, { errors: ['States.ALL'], resultPath: '$.error' });
  }

  // isPresent first: a Choice on a missing path is a runtime error, not "otherwise".
  const nextIs = (value: NextValue) => Condition.and(Condition.isPresent('$.loop.next'), Condition.stringEquals('$.loop.next', value));
  const runSucceeded = new Succeed(scope, 'RunSucceeded');
  const nextStep = Choice.jsonPath(scope, 'NextStep')
    .when(Condition.isPresent('$.loop.released'), runSucceeded)
    .when(nextIs('model'), model)
    .when(nextIs('tool'), tool)
    .when(nextIs('sandbox'), sandboxTool)
    .when(nextIs('progress'), toolProgress)
    .when(nextIs('reach'), reachTool)
    .when(nextIs('connect'), connect)
    .when(nextIs('approval'), awaitApproval)
    .when(nextIs('subagents'), awaitSubagents)
    .when(nextIs('handoff'), handoff.next(new Succeed(scope, 'HandedOff')))
    .otherwise(finish.next(runSucceeded));
  // The tool steps and Connect return to the choice: the handler decides what follows (more tools, the model, finish).
  for (const task of [tool, sandboxTool, toolProgress, reachTool, connect]) task.next(nextStep);
  awaitApproval.next(tool);
  awaitSubagents.next(tool);

  model.next(nextStep);
  prepare.next(nextStep);
  return Choice.jsonPath(scope, 'Start').when(Condition.isPresent('$.loop.next'), nextStep).otherwise(prepare);
}
