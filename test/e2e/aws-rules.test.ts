// The local cloud refuses what AWS refuses: each function calls AWS as its own role (from the
// synthesized template), through front doors that evaluate the role's policies, and a deployment
// starts empty, as after the first `cdk deploy`.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { gate } from '../../packages/local-cloud/src/bedrock.ts';
import { startTestStack } from '../support/local-stack.ts';
import { eventually } from '../support/eventually.ts';

/* eslint-disable @typescript-eslint/no-explicit-any -- CloudFormation template JSON */
type Template = { Resources: Record<string, { Type: string; Properties?: any }> };

// One stack serves the tests that leave the template as it is: the fresh-deployment test runs first on
// it (so it is empty), and the deploy in the middle of a run last (it leaves a new version behind).
let shared: Awaited<ReturnType<typeof startTestStack>> | undefined;
const sharedStack = async () => (shared ??= await startTestStack());
after(() => shared?.stop());

const use = (name: string, input: Record<string, unknown>) => ({ name, input, toolUseId: `tu-${Math.random().toString(36).slice(2, 10)}` });

test('a fresh deployment (empty bucket, empty table) answers its first mention, with a tool call, and nothing is denied', async () => {
  const stack = await sharedStack();
  const { s3, dynamodb } = stack.cloud.clients;
  assert.equal((await s3.send(new ListObjectsV2Command({ Bucket: stack.cloud.names.bucket }))).KeyCount ?? 0, 0);
  assert.equal((await dynamodb.send(new ScanCommand({ TableName: stack.cloud.names.table }))).Count, 0);

  stack.bedrock.script({ toolUses: [use('bash', { command: 'echo first words' })] }, { text: 'All set up.' });
  const posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> are you there?' });
  await eventually(
    () => stack.slack.messages.thread(posted.channel, posted.threadTs).some((m) => m.bot_id && m.text === 'All set up.'),
    60_000,
    'the first answer',
  );
  const toolResult = JSON.stringify(stack.bedrock.requests.at(-1)?.body.messages);
  assert.match(toolResult, /first words/, 'the tool ran in the sandbox');
  assert.deepEqual(
    stack.cloud.awsCalls.filter((c) => c.denied),
    [],
    'no call was denied',
  );
  assert.ok(
    stack.cloud.awsCalls.some((c) => c.caller !== 'operator'),
    'the functions called AWS as their own roles',
  );
});

/** The template without the statements of `roleLogicalId`'s policies that allow `action`. */
function withoutStatement(template: Template, roleLogicalId: string, action: RegExp): Template {
  for (const resource of Object.values(template.Resources)) {
    if (resource.Type !== 'AWS::IAM::Policy') continue;
    if (!JSON.stringify(resource.Properties.Roles).includes(roleLogicalId)) continue;
    const statements = resource.Properties.PolicyDocument.Statement as { Action: string | string[] }[];
    resource.Properties.PolicyDocument.Statement = statements.filter((s) => ![s.Action].flat().some((a) => action.test(a)));
  }
  return template;
}

test('a permission removed from the template fails end to end as on AWS: AccessDenied, and the thread is told', async (t) => {
  let agentStepRole = '';
  const stack = await startTestStack({
    transformTemplate: (template) => {
      const fn = Object.entries(template.Resources).find(
        ([id, r]) => r.Type === 'AWS::Lambda::Function' && id.startsWith('AgentRunAgentStep'),
      );
      agentStepRole = fn![1].Properties.Role['Fn::GetAtt'][0];
      return withoutStatement(template, agentStepRole, /^bedrock:InvokeModel/);
    },
  });
  t.after(() => stack.stop());
  stack.bedrock.script({ text: 'never said' });
  const posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> hello' });
  await eventually(
    () =>
      stack.slack.messages
        .thread(posted.channel, posted.threadTs)
        .some((m) => m.bot_id && /This deployment may not call the model/.test(m.text)),
    60_000,
    'the access message',
  );
  assert.equal(stack.bedrock.requests.length, 0, 'the request never reached a model');
  assert.ok(agentStepRole);
});

/** The template without `action` in the statements of `roleLogicalId`'s policies (their other actions stay). */
function withoutAction(template: Template, roleLogicalId: string, action: string): Template {
  for (const resource of Object.values(template.Resources)) {
    if (resource.Type !== 'AWS::IAM::Policy') continue;
    if (!JSON.stringify(resource.Properties.Roles).includes(roleLogicalId)) continue;
    for (const statement of resource.Properties.PolicyDocument.Statement as { Action: string | string[] }[]) {
      statement.Action = [statement.Action].flat().filter((a) => a !== action);
    }
  }
  return template;
}

test('a failed sync tells the thread plainly, without the role, its ARN or a path; the details are in the logs', async (t) => {
  const logs: string[] = [];
  const stack = await startTestStack({
    env: { LOG_LEVEL: 'error' },
    onLog: (_, line) => logs.push(line),
    transformTemplate: (template) => {
      const fn = Object.entries(template.Resources).find(([id, r]) => r.Type === 'AWS::Lambda::Function' && id.startsWith('SandboxStep'));
      // sandbox-step may still read the thread's files, but not write the changed ones back.
      return withoutAction(template, fn![1].Properties.Role['Fn::GetAtt'][0], 's3:PutObject');
    },
  });
  t.after(() => stack.stop());
  stack.bedrock.script({ toolUses: [use('write', { path: 'notes.txt', content: 'to be saved\n' })] }, { text: 'never said' });
  const posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> write the notes down' });
  const told = await eventually(
    () =>
      stack.slack.messages
        .thread(posted.channel, posted.threadTs)
        .find((m) => m.bot_id && /Saving the files of this thread's sandbox failed/.test(m.text)),
    90_000,
    'the failure message',
  );
  assert.equal(told.text, "Saving the files of this thread's sandbox failed, so I stopped. The thread still works: please try again.");
  const inThread = JSON.stringify(stack.slack.messages.thread(posted.channel, posted.threadTs).filter((m) => m.bot_id));
  for (const internal of ['arn:', 'assumed-role', 'AccessDenied', 'notes.txt', 'scratch', 'redacted']) {
    assert.ok(!inThread.includes(internal), `the thread shows ${internal}: ${inThread}`);
  }
  const failure = logs.find((line) => line.includes('"run failed"'));
  assert.ok(failure, logs.join('\n'));
  assert.match(failure, /WorkspaceSyncError/);
  assert.match(failure, /AccessDenied/);
  assert.match(failure, /assumed-role/);
});

/**
 * What new agent-step code does to the template: the function's configuration changes, and CDK
 * names its current version after a hash of it, so the version resource gets a new logical id.
 */
function newAgentStepCode(template: Template): Template {
  const [versionId] = Object.entries(template.Resources).find(
    ([id, r]) => r.Type === 'AWS::Lambda::Version' && id.startsWith('AgentRunAgentStepCurrentVersion'),
  )!;
  const renamed = JSON.parse(JSON.stringify(template).replaceAll(versionId, `${versionId}Next`)) as Template;
  const [, fn] = Object.entries(renamed.Resources).find(
    ([id, r]) => r.Type === 'AWS::Lambda::Function' && id.startsWith('AgentRunAgentStep'),
  )!;
  fn.Properties.Environment.Variables.CODE_REVISION = '2';
  return renamed;
}

test('a message over the byte limit is refused with the limit named, and nothing runs', async () => {
  const stack = await sharedStack();
  const modelCalls = stack.bedrock.requests.length;
  const runs = stack.cloud.stepFunctions.executions.size;
  // 40,000 characters, as Slack allows, but four bytes each.
  const posted = await stack.slack.postUserMessage({ text: `<@U0LOCALBOT> ${'😀'.repeat(39_980)}` });
  await eventually(
    () => stack.slack.messages.thread(posted.channel, posted.threadTs).some((m) => m.bot_id && /the limit is 128 KB/.test(m.text)),
    30_000,
    'the refusal',
  );
  assert.equal(stack.bedrock.requests.length, modelCalls);
  assert.equal(stack.cloud.stepFunctions.executions.size, runs);
});

test('long messages (40,000 CJK characters) run whole, queued or not, and every execution input stays a few KB', async () => {
  const stack = await sharedStack();
  const modelCalls = stack.bedrock.requests.length;
  const runsBefore = stack.cloud.stepFunctions.executions.size;
  const storedBefore = stack.cloud.awsCalls.filter((c) => c.operation === 'PutObject' && /^Dispatch/.test(c.caller)).length;
  const long = (mark: string) => `${mark} ${'語'.repeat(40_000 - mark.length - 1)}`;
  const held = gate();
  stack.bedrock.script({ text: 'First read.', hold: held.promise }, { text: 'Second read.' }, { text: 'Third read.' });
  const first = await stack.slack.postUserMessage({ text: `<@U0LOCALBOT> ${long('first')}` });
  await eventually(() => stack.bedrock.requests.length === modelCalls + 1, 30_000, 'the first model call');
  // Two more wait in the thread's queue, in its actor item, while the first runs.
  await stack.slack.postUserMessage({ text: long('second'), threadTs: first.threadTs });
  await stack.slack.postUserMessage({ text: long('third'), threadTs: first.threadTs });
  const storedByDispatch = () => stack.cloud.awsCalls.filter((c) => c.operation === 'PutObject' && /^Dispatch/.test(c.caller));
  await eventually(() => storedByDispatch().length >= storedBefore + 3, 30_000, 'the three texts stored by dispatch');
  held.release();
  await eventually(
    () => stack.slack.messages.thread(first.channel, first.threadTs).some((m) => m.text === 'Third read.'),
    90_000,
    'the third answer',
  );
  for (const [i, mark] of ['first', 'second', 'third'].entries()) {
    const said = JSON.stringify(stack.bedrock.requests[modelCalls + i]?.body.messages);
    assert.ok(said.includes(long(mark)), `the model got the whole ${mark} message`);
  }
  for (const execution of [...stack.cloud.stepFunctions.executions.values()].slice(runsBefore)) {
    const bytes = Buffer.byteLength(JSON.stringify(execution.input));
    assert.ok(bytes < 16 * 1024, `execution input of ${bytes} bytes`);
  }
});

test('a deploy in the middle of a run: the run finishes on the version it started with, the next run uses the new one', async () => {
  const stack = await sharedStack();
  const agentStep = (version: number) =>
    stack.cloud.lambda.invocations.filter((i) => i.functionId.startsWith('AgentRunAgentStep') && i.version === version).length;
  const modelCalls = stack.bedrock.requests.length;
  const runsBefore = stack.cloud.stepFunctions.executions.size;
  const held = gate();
  stack.bedrock.script(
    { toolUses: [use('bash', { command: 'echo before the deploy' })], hold: held.promise },
    { text: 'Finished on the old version.' },
  );
  const first = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> a long job' });
  await eventually(() => stack.bedrock.requests.length === modelCalls + 1, 30_000, 'the first model call');

  await stack.cloud.redeploy({ transformTemplate: newAgentStepCode });
  const beforeRelease = agentStep(1);
  held.release();
  const runs = () => [...stack.cloud.stepFunctions.executions.values()].slice(runsBefore);
  await eventually(() => runs()[0]?.status !== 'RUNNING', 60_000, 'the first run to end');
  assert.equal(runs()[0]?.status, 'SUCCEEDED', `the first run ended ${runs()[0]?.status}: ${runs()[0]?.error} ${runs()[0]?.cause}`);
  assert.ok(agentStep(1) > beforeRelease, 'its later steps ran on version 1');
  assert.equal(agentStep(2), 0, 'nothing of the first run ran on version 2');
  const afterFirstRun = agentStep(1);
  assert.ok(
    stack.slack.messages.thread(first.channel, first.threadTs).some((m) => m.text === 'Finished on the old version.'),
    'the answer reached the thread',
  );

  stack.bedrock.script({ text: 'New version here.' });
  const second = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> and now?' });
  await eventually(
    () => stack.slack.messages.thread(second.channel, second.threadTs).some((m) => m.text === 'New version here.'),
    60_000,
    'the second answer',
  );
  assert.ok(agentStep(2) > 0, 'the next run ran on version 2');
  assert.equal(agentStep(1), afterFirstRun, 'and not on version 1');
});
