// The local IAM against the real synthesized stack: what each function's role may and may not do,
// as AWS would decide it from the same policies.
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { synthesizeLocalStack, type SynthesizedStack } from '../src/cloud/synth.ts';
import { createLocalIam, deniedResponse, type AwsHttpRequest, type LocalIam, type Principal } from '../src/iam/index.ts';
import { rolePolicies } from '../src/iam/policies.ts';
import { localPhysicalName, resolveCloudFormation } from '../src/resources.ts';
import type { FunctionRole } from '../../../infra/function-entries.ts';

type Template = SynthesizedStack['template'];

let template: Template;
let logicalIds: Record<FunctionRole, string>;
let iam: LocalIam;
let names: { table: string; bucket: string; stateMachine: string; inbox: string; cluster: string; taskDefinition: string; modelId: string };

const onlyOf = (type: string) => {
  const ids = Object.entries(template.Resources).filter(([, r]) => r.Type === type);
  assert.equal(ids.length, 1, type);
  return ids[0]![0];
};
const ref = (id: string) => String(resolveCloudFormation(template, { Ref: id }));
const arnOf = (id: string) => String(resolveCloudFormation(template, { 'Fn::GetAtt': [id, 'Arn'] }));
const roleOf = (fn: FunctionRole): Principal => ({ role: iam.roleOf(logicalIds[fn])! });
const allowed = async (fn: FunctionRole, action: string, resource: string, context?: Record<string, string | string[]>) =>
  (await iam.authorize(roleOf(fn), { action, resource, context })).allowed;
const json = (service: string, target: string, body: object): AwsHttpRequest => ({
  service,
  method: 'POST',
  url: '/',
  headers: { 'x-amz-target': target },
  body: Buffer.from(JSON.stringify(body)),
});
const bedrock = (modelId: string): AwsHttpRequest => ({
  service: 'bedrock',
  method: 'POST',
  url: `/model/${encodeURIComponent(modelId)}/converse-stream`,
  headers: {},
  body: Buffer.from('{}'),
});

before(async () => {
  const stack = await synthesizeLocalStack();
  template = stack.template;
  logicalIds = stack.logicalIds as Record<FunctionRole, string>;
  iam = createLocalIam(template);
  const table = onlyOf('AWS::DynamoDB::Table');
  const machine = onlyOf('AWS::StepFunctions::StateMachine');
  const agentStepEnv = template.Resources[logicalIds.agentStep]!.Properties.Environment.Variables;
  names = {
    table: arnOf(table),
    bucket: arnOf(stack.dataBucketId),
    stateMachine: ref(machine),
    inbox: arnOf(stack.inboxId),
    cluster: arnOf(onlyOf('AWS::ECS::Cluster')),
    taskDefinition: ref(onlyOf('AWS::ECS::TaskDefinition')),
    modelId: String(agentStepEnv.BEDROCK_MODEL_ID),
  };
});

test('every role is read with its policies; only CDK’s deploy-time roles attach AWS managed policies', async () => {
  assert.equal(iam.roles.size, Object.values(template.Resources).filter((r) => r.Type === 'AWS::IAM::Role').length);
  const unevaluable = iam.errors.map((error) => /^Role (\S+)/.exec(error)?.[1]);
  assert.deepEqual(unevaluable.sort(), ['CustomVpcRestrictDefaultSGCustomResourceProviderRole26592FE0']);
  for (const fn of Object.keys(logicalIds) as FunctionRole[]) assert.ok(!unevaluable.includes(iam.roleOf(logicalIds[fn])), fn);
  await assert.rejects(
    iam.authorize({ role: unevaluable[0]! }, { action: 's3:GetObject', resource: `${names.bucket}/k` }),
    /AWS managed policies/,
  );
});

test('each function’s policies allow what each of their unconditional statements names (resolution and validation hold)', async () => {
  const policies = rolePolicies(template);
  const misfits = new Set<string>();
  for (const fn of Object.keys(logicalIds) as FunctionRole[]) {
    const role = policies.get(iam.roleOf(logicalIds[fn])!)!;
    for (const { policy } of role.policies) {
      for (const statement of [policy.Statement].flat() as {
        Action: string | string[];
        Resource: string | string[];
        Condition?: object;
      }[]) {
        if (statement.Condition) continue;
        for (const action of [statement.Action].flat()) {
          for (const resource of [statement.Resource].flat()) {
            assert.doesNotMatch(resource, /local-[A-Za-z0-9]+\.[A-Z][A-Za-z]*$|\[object/, `${fn}: ${resource} is resolved`);
            // A pattern's instance: a log group's ":*" is its streams; any other "*", some name.
            const concrete =
              resource === '*' ? '*' : resource.replace(/(:log-group:[^:]+):\*$/, '$1:log-stream:example').replaceAll('*', 'example');
            const decision = await allowed(fn, action, concrete).catch((error: Error) => {
              if (!error.message.includes('no.resource.types')) throw error;
              misfits.add(`${action} on ${resource.replace(/^.*:/, '')}`);
              return true;
            });
            assert.ok(decision, `${fn} may ${action} on ${concrete}`);
          }
        }
      }
    }
  }
  // No dead grants: every unconditional statement names a resource its actions take.
  assert.deepEqual([...misfits], []);
});

test('agent-step: the table, and the configured model through its profile, but not another model nor the model directly', async () => {
  for (const action of ['dynamodb:GetItem', 'dynamodb:UpdateItem']) assert.ok(await allowed('agentStep', action, names.table));
  assert.match(names.modelId, /^global\./);
  assert.ok((await iam.authorizeRequest(roleOf('agentStep'), bedrock(names.modelId))).allowed);
  const other = await iam.authorizeRequest(roleOf('agentStep'), bedrock('global.anthropic.claude-opus-4-1-20250805-v1:0'));
  assert.equal(other.allowed, false);
  assert.match(other.message, /inference-profile\/global\.anthropic\.claude-opus/);
  const direct = names.modelId.replace(/^global\./, '');
  assert.equal((await iam.authorizeRequest(roleOf('agentStep'), bedrock(direct))).allowed, false, 'only through the profile');
});

test('agent-step: RunTask of the sandbox task definition in the sandbox cluster, with its tags and roles; not in another cluster', async () => {
  const run = (cluster: string) =>
    json('ecs', 'AmazonEC2ContainerServiceV20141113.RunTask', {
      cluster,
      taskDefinition: names.taskDefinition,
      tags: [{ key: 'threadwork:thread', value: 't1' }],
    });
  const decision = await iam.authorizeRequest(roleOf('agentStep'), run(names.cluster));
  assert.ok(decision.allowed, decision.message);
  assert.equal(decision.action, 'iam:PassRole', 'the last authorization: the task definition’s roles are passed');
  assert.equal((await iam.authorizeRequest(roleOf('agentStep'), run(names.cluster.replace(/[^/]+$/, 'other')))).allowed, false);
});

test('agent-step: RunTask of the sandbox family runs any revision of it (a deploy replaces revisions), no other family', async () => {
  const family = localPhysicalName(template, onlyOf('AWS::ECS::TaskDefinition'));
  const agentStepEnv = template.Resources[logicalIds.agentStep]!.Properties.Environment.Variables;
  assert.equal(agentStepEnv.SANDBOX_TASK_DEFINITION_FAMILY, family, 'agent-step runs the family, not a revision');
  const run = (taskDefinition: string) =>
    iam.authorizeRequest(
      roleOf('agentStep'),
      json('ecs', 'AmazonEC2ContainerServiceV20141113.RunTask', { cluster: names.cluster, taskDefinition }),
    );
  const byFamily = await run(family);
  assert.ok(byFamily.allowed, byFamily.message);
  for (const revision of [names.taskDefinition, names.taskDefinition.replace(/:1$/, ':2'), `${family}:7`]) {
    assert.ok((await run(revision)).allowed, revision);
  }
  assert.equal((await run('OtherFamily')).allowed, false);
});

test('dispatch: starts executions of the state machine and reads settings.json; nothing else of the bucket', async () => {
  assert.ok(await allowed('dispatch', 'states:StartExecution', names.stateMachine));
  assert.equal(names.stateMachine, 'arn:aws:states:local:000000000000:stateMachine:Threadwork-AgentRun');
  assert.ok(await allowed('dispatch', 's3:GetObject', `${names.bucket}/settings.json`));
  assert.equal(await allowed('dispatch', 's3:GetObject', `${names.bucket}/skills/x/SKILL.md`), false);
});

test('dispatch may list the bucket, so a missing settings.json (a fresh deployment) answers 404, not 403', async () => {
  assert.equal(await allowed('dispatch', 's3:ListBucket', names.bucket), true);
  assert.equal(await iam.missingKeyStatus(roleOf('dispatch'), names.bucket), 404);
  assert.equal(await iam.missingKeyStatus(roleOf('agentStep'), names.bucket), 404);
  assert.equal(await iam.missingKeyStatus('operator', names.bucket), 404);
});

test("the webhooks: what their code needs (the table, the inbox, their own platform's secret, stopping runs)", async () => {
  const secretOf = (platform: string) =>
    ref(Object.entries(template.Resources).find(([id, r]) => r.Type === 'AWS::SecretsManager::Secret' && id.startsWith(platform))![0]);
  const own = { webhook: secretOf('Slack'), teamsWebhook: secretOf('Teams') };
  for (const [fn, other] of [
    ['webhook', own.teamsWebhook],
    ['teamsWebhook', own.webhook],
  ] as const) {
    for (const action of ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem']) {
      assert.ok(await allowed(fn, action, names.table), `${fn}: ${action}`);
    }
    assert.ok(await allowed(fn, 'sqs:SendMessage', names.inbox), fn);
    assert.ok(await allowed(fn, 'secretsmanager:GetSecretValue', own[fn]), fn);
    assert.equal(await allowed(fn, 'secretsmanager:GetSecretValue', other), false, `${fn}: the other platform's secret`);
    assert.ok(await allowed(fn, 'states:StopExecution', 'arn:aws:states:local:000000000000:execution:Threadwork-AgentRun:r1'), fn);
    assert.equal(await allowed(fn, 'states:StartExecution', names.stateMachine), false, fn);
    assert.equal(await allowed(fn, 'sqs:ReceiveMessage', names.inbox), false, fn);
  }
});

test('the MCP secrets (<stack>/mcp/*): the reach step and the OAuth function read them and no other secret; no other function reads them', async () => {
  const read = (fn: FunctionRole, name: string) =>
    iam.authorizeRequest(roleOf(fn), json('secretsmanager', 'secretsmanager.GetSecretValue', { SecretId: name }));
  const mcp = 'Threadwork/mcp/orders-token';
  assert.ok((await read('reachStep', mcp)).allowed);
  assert.ok((await read('reachStep', 'Threadwork/mcp/team/nested')).allowed);
  const slackSecret = ref(
    Object.entries(template.Resources).find(([id, r]) => r.Type === 'AWS::SecretsManager::Secret' && id.startsWith('Slack'))![0],
  );
  // An operator's OAuth client (oauthClient: "${secret:NAME}").
  assert.ok((await read('mcpOAuth', mcp)).allowed);
  for (const outside of ['Threadwork/other', 'Threadwork/mcpx/token', 'Other/mcp/orders-token', slackSecret]) {
    assert.equal((await read('reachStep', outside)).allowed, false, `reach step: ${outside}`);
    assert.equal((await read('mcpOAuth', outside)).allowed, false, `OAuth function: ${outside}`);
  }
  for (const fn of Object.keys(logicalIds) as FunctionRole[]) {
    if (fn !== 'reachStep' && fn !== 'mcpOAuth') assert.equal((await read(fn, mcp)).allowed, false, `${fn} reads an MCP secret`);
  }
  assert.equal(
    await allowed('reachStep', 'secretsmanager:PutSecretValue', 'arn:aws:secretsmanager:local:000000000000:secret:Threadwork/mcp/x-abcdef'),
    false,
  );
});

test("the table: item actions only, as each function calls them (no Scan, batch writes, batch reads but dispatch's and agent-step's, or deletes where unused)", async () => {
  for (const action of ['dynamodb:Scan', 'dynamodb:BatchWriteItem', 'dynamodb:BatchGetItem', 'dynamodb:DescribeTable']) {
    for (const fn of Object.keys(logicalIds) as FunctionRole[]) {
      // Dispatch reads a prompt's actor item and the pause flag in one BatchGetItem (shared/admission);
      // agent-step's prepare the actor item and the channel's workspace version.
      const needs = (fn === 'dispatch' || fn === 'agentStep') && action === 'dynamodb:BatchGetItem';
      assert.equal(await allowed(fn, action, names.table), needs, `${fn}: ${action}`);
    }
  }
  assert.equal(await allowed('sandboxStep', 'dynamodb:DeleteItem', names.table), false);
  assert.equal(await allowed('sandboxStep', 'dynamodb:PutItem', names.table), false);
  assert.equal(await allowed('webhook', 'dynamodb:Query', names.table), false);
  assert.ok(await allowed('sandboxReaper', 'dynamodb:Query', names.table));
});

test('sandbox-reaper: stops tasks of the sandbox cluster only (ecs:cluster)', async () => {
  const task = names.cluster.replace(':cluster/', ':task/') + '/abc';
  const stop = (cluster: string) => json('ecs', 'AmazonEC2ContainerServiceV20141113.StopTask', { cluster, task });
  assert.ok((await iam.authorizeRequest(roleOf('sandboxReaper'), stop(names.cluster))).allowed);
  assert.equal((await iam.authorizeRequest(roleOf('sandboxReaper'), stop(names.cluster.replace(/[^/]+$/, 'other')))).allowed, false);
});

test("the reaper's orphan sweep and the teardown list the sandbox cluster's tasks (authorized on \"*\", as AWS does), no other cluster's", async () => {
  const teardown = Object.entries(template.Resources).find(
    ([id, r]) => r.Type === 'AWS::Lambda::Function' && id.startsWith('SandboxTeardownStopTasksHandler'),
  )!;
  const teardownRole = { role: iam.roleOf(teardown[0])! };
  const list = (cluster: string) =>
    json('ecs', 'AmazonEC2ContainerServiceV20141113.ListTasks', { cluster, startedBy: 'threadwork-sandbox' });
  for (const principal of [roleOf('sandboxReaper'), teardownRole]) {
    const decision = await iam.authorizeRequest(principal, list(names.cluster));
    assert.ok(decision.allowed, decision.message);
    assert.equal(decision.resource, '*');
    assert.equal((await iam.authorizeRequest(principal, list(names.cluster.replace(/[^/]+$/, 'other')))).allowed, false);
  }
});

test('scheduler: schedules in its own group, passing the schedules role to EventBridge Scheduler only', async () => {
  const group = localPhysicalName(template, onlyOf('AWS::Scheduler::ScheduleGroup'));
  const schedulesRole = arnOf('EventSchedulesRole9EE8DBF1');
  const create = (groupName: string): AwsHttpRequest => ({
    service: 'scheduler',
    method: 'POST',
    url: '/schedules/file-1',
    headers: {},
    body: Buffer.from(JSON.stringify({ GroupName: groupName, Target: { Arn: 'x', RoleArn: schedulesRole } })),
  });
  assert.ok((await iam.authorizeRequest(roleOf('scheduler'), create(group))).allowed);
  assert.equal((await iam.authorizeRequest(roleOf('scheduler'), create('default'))).allowed, false);
  const passed = (service: string) => allowed('scheduler', 'iam:PassRole', schedulesRole, { 'iam:PassedToService': service });
  assert.deepEqual([await passed('scheduler.amazonaws.com'), await passed('ecs-tasks.amazonaws.com')], [true, false]);
});

test('removing one statement from a copy of the template makes its request denied', async () => {
  const copy = structuredClone(template);
  const policy = Object.values(copy.Resources).find(
    (r) =>
      r.Type === 'AWS::IAM::Policy' && r.Properties.Roles.some((role: { Ref: string }) => role.Ref === iam.roleOf(logicalIds.dispatch)),
  )!;
  const statements = policy.Properties.PolicyDocument.Statement as { Action: unknown }[];
  policy.Properties.PolicyDocument.Statement = statements.filter((s) => s.Action !== 'states:StartExecution');
  assert.equal(policy.Properties.PolicyDocument.Statement.length, statements.length - 1);
  const trimmed = createLocalIam(copy);
  const start = json('states', 'AWSStepFunctions.StartExecution', { stateMachineArn: names.stateMachine, input: '{}' });
  assert.ok((await iam.authorizeRequest(roleOf('dispatch'), start)).allowed);
  const denied = await trimmed.authorizeRequest({ role: iam.roleOf(logicalIds.dispatch)! }, start);
  assert.equal(denied.allowed, false);
  const dispatchRole = localPhysicalName(template, iam.roleOf(logicalIds.dispatch)!);
  assert.equal(
    denied.message,
    `User: arn:aws:sts::000000000000:assumed-role/${dispatchRole}/${logicalIds.dispatch} is not authorized to perform: states:StartExecution on resource: ${names.stateMachine} because no identity-based policy allows the states:StartExecution action`,
  );
  assert.deepEqual(JSON.parse(deniedResponse('states', denied).body), { __type: 'AccessDeniedException', message: denied.message });
});

test('access keys: one per role, known keys sign as the role, any other key is the operator; decisions are cached', async () => {
  const role = iam.roleOf(logicalIds.webhook)!;
  const keys = iam.accessKeyFor(role);
  assert.match(keys.accessKeyId, /^ASIA[0-9A-F]{16}$/);
  assert.notEqual(iam.accessKeyFor(iam.roleOf(logicalIds.dispatch)!).accessKeyId, keys.accessKeyId);
  assert.deepEqual(iam.principalOf(keys.accessKeyId), { role });
  assert.equal(iam.principalOf('local'), 'operator');
  assert.equal(iam.principalOf(undefined), 'operator');
  assert.ok((await iam.authorize('operator', { action: 'dynamodb:DeleteTable', resource: names.table })).allowed);
  assert.throws(() => iam.accessKeyFor('Nope'), /No role Nope/);
  const authorization = { action: 'dynamodb:GetItem', resource: names.table };
  assert.equal(await iam.authorize({ role }, authorization), await iam.authorize({ role }, authorization));
});
