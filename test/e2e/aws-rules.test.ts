// The local cloud refuses what AWS refuses: each function calls AWS as its own role (from the
// synthesized template), through front doors that evaluate the role's policies, and a deployment
// starts empty, as after the first `cdk deploy`.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { startTestStack } from '../support/local-stack.ts';
import { eventually } from '../support/eventually.ts';

/* eslint-disable @typescript-eslint/no-explicit-any -- CloudFormation template JSON */
type Template = { Resources: Record<string, { Type: string; Properties?: any }> };

const use = (name: string, input: Record<string, unknown>) => ({ name, input, toolUseId: `tu-${Math.random().toString(36).slice(2, 10)}` });

test('a fresh deployment (empty bucket, empty table) answers its first mention, with a tool call, and nothing is denied', async (t) => {
  const stack = await startTestStack();
  t.after(() => stack.stop());
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
    () => stack.slack.messages.thread(posted.channel, posted.threadTs).some((m) => m.bot_id && /can't reach the model/.test(m.text)),
    60_000,
    'the access message',
  );
  assert.equal(stack.bedrock.requests.length, 0, 'the request never reached a model');
  assert.ok(agentStepRole);
});
