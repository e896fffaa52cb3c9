// A deploy that rebuilds the sandbox image while a run is in flight: CloudFormation replaces the task
// definition (a new revision, the old one deregistered), and the run goes on with the agent-step
// version it started with. That version must still be able to start a sandbox: it runs the task
// definition's family (its latest ACTIVE revision), which its role may run in every revision.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ECSClient, InvalidParameterException, RunTaskCommand } from '@aws-sdk/client-ecs';
import { gate, type RecordedRequest } from '../../packages/local-cloud/src/bedrock.ts';
import { resourcesOfType, type Template } from '../../packages/local-cloud/src/cloud/resources.ts';
import { resolveCloudFormation } from '../../packages/local-cloud/src/resources.ts';
import { putData } from '../support/data-bucket.ts';
import { eventually } from '../support/eventually.ts';
import { startTestStack } from '../support/local-stack.ts';
import { toolTurn } from '../support/scripted-run.ts';

/** The text of the tool results the model was sent back in this request. */
const toolResults = (request: RecordedRequest | undefined) =>
  (request?.body.messages ?? []).flatMap((m) => (m.content ?? []).flatMap((b) => (b.toolResult?.content ?? []).map((c) => c.text ?? '')));

/** What a new sandbox image does to the template: the task definition's container image changes, nothing else. */
function newSandboxImage(template: Template): Template {
  const [, definition] = resourcesOfType(template, 'AWS::ECS::TaskDefinition')[0]!;
  definition.Properties.ContainerDefinitions[0].Image = '000000000000.dkr.ecr.local.amazonaws.com/sandbox:rebuilt';
  return template;
}

const taskDefinitionArn = (template: Template) =>
  String(resolveCloudFormation(template, { Ref: resourcesOfType(template, 'AWS::ECS::TaskDefinition')[0]![0] }));

test('a run started before a deploy that rebuilds the sandbox image starts its sandbox after it, and so does the next run', async (t) => {
  const stack = await startTestStack();
  t.after(() => stack.stop());
  // No early start: the run's first sandbox starts at its tool call, after the deploy.
  await putData(stack, 'settings.json', { sandbox: { startEarly: false } });
  const agentStep = (version: number) =>
    stack.cloud.lambda.invocations.filter((i) => i.functionId.startsWith('AgentRunAgentStep') && i.version === version).length;
  const held = gate();
  stack.bedrock.script(
    { ...toolTurn('bash', { command: 'echo ran-after-the-deploy | tr a-z A-Z' }), hold: held.promise },
    { text: 'Finished.' },
    toolTurn('bash', { command: 'echo the-next-run | tr a-z A-Z' }),
    { text: 'Next run finished.' },
  );
  const first = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> a long job' });
  await eventually(() => stack.bedrock.requests.length === 1, 30_000, 'the first model call');
  assert.equal(stack.cloud.ecs.tasks.size, 0, 'no sandbox yet');
  const revision1 = taskDefinitionArn(stack.cloud.template);
  assert.match(revision1, /:task-definition\/[\w-]+:1$/);

  await stack.cloud.redeploy({ transformTemplate: newSandboxImage });
  const revision2 = taskDefinitionArn(stack.cloud.template);
  assert.equal(revision2, revision1.replace(/:1$/, ':2'), 'CloudFormation registered the next revision');
  const operator = new ECSClient({
    endpoint: stack.cloud.ecs.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  t.after(() => operator.destroy());
  await assert.rejects(
    operator.send(
      new RunTaskCommand({
        cluster: stack.cloud.ecs.clusterArn,
        taskDefinition: revision1,
        networkConfiguration: { awsvpcConfiguration: { subnets: ['subnet-1'] } },
      }),
    ),
    (error: Error) => error instanceof InvalidParameterException && error.message === 'TaskDefinition is inactive',
    'and deregistered the one it replaced',
  );

  const beforeRelease = agentStep(1);
  held.release();
  const runs = () => [...stack.cloud.stepFunctions.executions.values()];
  await eventually(() => runs()[0]?.status !== 'RUNNING', 90_000, 'the first run to end');
  assert.equal(runs()[0]?.status, 'SUCCEEDED', `the first run ended ${runs()[0]?.status}: ${runs()[0]?.error} ${runs()[0]?.cause}`);
  assert.ok(agentStep(1) > beforeRelease, 'its tool call ran on the agent-step version it started with');
  assert.match(toolResults(stack.bedrock.requests[1]).join('\n'), /^RAN-AFTER-THE-DEPLOY$/m, 'the tool ran in a sandbox');
  const tasks = () => [...stack.cloud.ecs.tasks.values()];
  assert.deepEqual(
    tasks().map((task) => task.taskDefinitionArn),
    [revision2],
    'on the new revision',
  );
  assert.ok(
    stack.slack.messages.thread(first.channel, first.threadTs).some((m) => m.text === 'Finished.'),
    'the answer reached the thread',
  );

  const second = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> and again' });
  await eventually(
    () => stack.slack.messages.thread(second.channel, second.threadTs).some((m) => m.text === 'Next run finished.'),
    90_000,
    'the next answer',
  );
  assert.match(toolResults(stack.bedrock.requests.at(-1)).join('\n'), /^THE-NEXT-RUN$/m);
  assert.ok(tasks().length === 2 && tasks().every((task) => task.taskDefinitionArn === revision2));
  assert.deepEqual(
    stack.cloud.awsCalls.filter((c) => c.denied),
    [],
    'no call was denied',
  );
});
