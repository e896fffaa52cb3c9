// The agent run's state machine definition. The agent-step handler relies on this exact shape:
//
//   Prepare -> Model -> NextStep --($.loop.next == "model")--> Model
//                               \--(otherwise)--------------> Finish -> RunSucceeded
//   any task --Catch States.ALL ($.error)--> HandleFailure -> RunFailed
//   HandleFailure --Catch States.ALL--> RunFailed
//
// Every task invokes the agent-step function with {"action": <step>, "state": <whole state>} and
// stores the result under $.loop, so the run object given as execution input stays intact.
// JSONPath, not JSONata: the local Step Functions runner ignores JSONata.
import { Duration } from 'aws-cdk-lib';
import { Choice, Condition, Fail, type IChainable, JitterType, Succeed, TaskInput } from 'aws-cdk-lib/aws-stepfunctions';
import { LambdaInvoke } from 'aws-cdk-lib/aws-stepfunctions-tasks';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { Construct } from 'constructs';

export type AgentStepAction = 'prepare' | 'model' | 'finish' | 'fail';

export const RUN_FAILED_ERROR = 'AgentRunFailed';

export function agentRunDefinition(scope: Construct, agentStep: IFunction): IChainable {
  const step = (id: string, action: AgentStepAction) =>
    LambdaInvoke.jsonPath(scope, id, {
      lambdaFunction: agentStep,
      payload: TaskInput.fromObject({ action, 'state.$': '$' }),
      payloadResponseOnly: true,
      resultPath: '$.loop',
      // retryOnServiceExceptions stays on: transient Lambda service errors are retried with backoff.
    }).addRetry({
      // Many threads at once can exhaust Lambda concurrency; a throttled step waits, it does not fail the run.
      errors: ['Lambda.TooManyRequestsException'],
      interval: Duration.seconds(2),
      backoffRate: 2,
      maxAttempts: 8,
      maxDelay: Duration.seconds(60),
      jitterStrategy: JitterType.FULL,
    });

  const runFailed = Fail.jsonPath(scope, 'RunFailed', {
    error: RUN_FAILED_ERROR,
    cause: 'The agent run failed; the error is in the execution history',
  });
  const handleFailure = step('HandleFailure', 'fail');
  handleFailure.next(runFailed);
  // If the failure handler fails too, end the run anyway: the run-ended rule cleans up after it.
  handleFailure.addCatch(runFailed, { errors: ['States.ALL'], resultPath: '$.error' });

  const prepare = step('Prepare', 'prepare');
  const model = step('Model', 'model');
  const finish = step('Finish', 'finish');
  for (const task of [prepare, model, finish]) {
    task.addCatch(handleFailure, { errors: ['States.ALL'], resultPath: '$.error' });
  }

  const nextStep = Choice.jsonPath(scope, 'NextStep')
    // isPresent first: a Choice on a missing path is a runtime error, not "otherwise".
    .when(Condition.and(Condition.isPresent('$.loop.next'), Condition.stringEquals('$.loop.next', 'model')), model)
    .otherwise(finish.next(new Succeed(scope, 'RunSucceeded')));

  return prepare.next(model).next(nextStep);
}
