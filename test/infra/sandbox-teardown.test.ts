// cdk destroy with sandbox tasks running: the teardown custom resource stops every task of the cluster
// on Delete and waits for them, with exactly the ECS permissions on that cluster; and its handler.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DescribeTasksCommand, ListTasksCommand, StopTaskCommand } from '@aws-sdk/client-ecs';
import type { CdkCustomResourceEvent } from 'aws-lambda';
import {
  POLL_INTERVAL_MS,
  type StopSandboxTasksProperties,
  handler,
  stopAllTasks,
} from '../../infra/custom-resources/stop-sandbox-tasks.ts';
import { logicalId, synth } from './synth.ts';

type Resource = { Type: string; Properties: Record<string, unknown>; DependsOn?: string[] };
type Statement = { Action: string | string[]; Resource: unknown; Condition?: unknown };
const list = <T>(value: T | T[] | undefined): T[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

const { stack, template } = synth();
const resources = template.toJSON().Resources as Record<string, Resource>;
const idOf = (construct: Parameters<typeof logicalId>[1]) => logicalId(stack, construct);
const statementsOf = (roleId: string): Statement[] =>
  Object.values(resources)
    .filter((r) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties.Roles) === JSON.stringify([{ Ref: roleId }]))
    .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
const teardown = stack.sandbox.teardown;
const CLUSTER = 'arn:aws:ecs:us-east-1:123456789012:cluster/sandbox';

test('the teardown names the cluster, goes before the VPC and task security group, and after agent-step', () => {
  const resource = resources[idOf(teardown.resource.node.defaultChild!)]!;
  assert.equal(resource.Type, 'Custom::StopSandboxTasks');
  assert.deepEqual(resource.Properties.clusterArn, { 'Fn::GetAtt': [idOf(stack.sandbox.task.cluster), 'Arn'] });
  const dependsOn = resource.DependsOn ?? [];
  const subnets = stack.sandbox.network.vpc
    .selectSubnets(stack.sandbox.network.subnets)
    .subnets.map((s) => idOf(s.node.findChild('Subnet')));
  for (const id of [idOf(stack.sandbox.network.vpc), ...subnets, idOf(stack.sandbox.securityGroups.task)]) {
    assert.ok(dependsOn.includes(id), `deleted before ${id}`);
  }
  assert.ok(
    resources[idOf(stack.functions.agentStep)]!.DependsOn!.includes(idOf(teardown.resource.node.defaultChild!)),
    'agent-step goes first',
  );
});

test("the handler may only list, describe and stop this cluster's tasks (besides its logs and traces)", () => {
  const cluster = { 'Fn::GetAtt': [idOf(stack.sandbox.task.cluster), 'Arn'] };
  const ecs = statementsOf(idOf(teardown.provider.handler.role!)).filter((s) => list(s.Action).some((a) => a.startsWith('ecs:')));
  assert.deepEqual(ecs.map((s) => list(s.Action).sort()).sort(), [['ecs:DescribeTasks', 'ecs:StopTask'], ['ecs:ListTasks']]);
  for (const s of ecs) assert.deepEqual(s.Condition, { ArnEquals: { 'ecs:cluster': cluster } });
  // Listing a whole cluster is authorized against "*" on AWS: a grant of its container instances fails the Delete.
  assert.deepEqual(ecs.find((s) => list(s.Action).includes('ecs:ListTasks'))!.Resource, '*');
  const others = statementsOf(idOf(teardown.provider.handler.role!))
    .flatMap((s) => list(s.Action))
    .filter((a) => !a.startsWith('ecs:'));
  for (const action of others) assert.match(action, /^(logs|xray):/);
  // The framework function only invokes the handler and writes its logs.
  const framework = statementsOf(idOf(teardown.provider.frameworkRole)).flatMap((s) => list(s.Action));
  assert.deepEqual(framework.sort(), ['lambda:GetFunction', 'lambda:InvokeFunction', 'logs:CreateLogStream', 'logs:PutLogEvents']);
});

/** A fake ECS: tasks start RUNNING, StopTask moves them to STOPPING, and they are STOPPED `lag` rounds later. */
function fakeEcs(taskArns: string[], lag = 2) {
  const tasks = new Map(taskArns.map((arn) => [arn, { status: 'RUNNING', roundsLeft: lag }]));
  const calls: string[] = [];
  return {
    calls,
    tasks,
    send: async (command: unknown) => {
      if (command instanceof ListTasksCommand) {
        calls.push(`list ${command.input.desiredStatus}`);
        const want = command.input.desiredStatus;
        const arns = [...tasks].filter(([, t]) => (want === 'RUNNING' ? t.status === 'RUNNING' : t.status !== 'RUNNING')).map(([a]) => a);
        return { taskArns: arns };
      }
      if (command instanceof StopTaskCommand) {
        calls.push(`stop ${command.input.task}`);
        assert.equal(command.input.cluster, CLUSTER);
        tasks.get(command.input.task!)!.status = 'STOPPING';
        return {};
      }
      if (command instanceof DescribeTasksCommand) {
        return {
          tasks: command.input.tasks!.map((arn) => {
            const task = tasks.get(arn)!;
            if (task.status === 'STOPPING' && task.roundsLeft-- <= 0) task.status = 'STOPPED';
            return { taskArn: arn, lastStatus: task.status };
          }),
        };
      }
      throw new Error(`unexpected command ${String(command)}`);
    },
  };
}

test('stopAllTasks: stops every running task, then waits until all are STOPPED', async () => {
  const ecs = fakeEcs(['task/a', 'task/b']);
  let time = 0;
  const sleeps: number[] = [];
  await stopAllTasks(ecs, CLUSTER, { deadline: 60_000, now: () => time, sleep: async (ms) => void (sleeps.push(ms), (time += ms)) });
  assert.deepEqual(
    ecs.calls.filter((c) => c.startsWith('stop')),
    ['stop task/a', 'stop task/b'],
  );
  assert.ok([...ecs.tasks.values()].every((t) => t.status === 'STOPPED'));
  assert.ok(sleeps.length >= 2 && sleeps.every((ms) => ms === POLL_INTERVAL_MS));
});

test('stopAllTasks: a task that starts while waiting is stopped too; nothing running returns at once', async () => {
  const ecs = fakeEcs(['task/a'], 1);
  let rounds = 0;
  await stopAllTasks(ecs, CLUSTER, {
    deadline: 60_000,
    now: () => 0,
    sleep: async () => {
      if (rounds++ === 0) ecs.tasks.set('task/late', { status: 'RUNNING', roundsLeft: 0 });
    },
  });
  assert.deepEqual(
    ecs.calls.filter((c) => c.startsWith('stop')),
    ['stop task/a', 'stop task/late'],
  );
  const idle = fakeEcs([]);
  await stopAllTasks(idle, CLUSTER, { deadline: 0, sleep: async () => assert.fail('no wait') });
  assert.deepEqual(idle.calls, ['list RUNNING', 'list STOPPED']);
});

test('stopAllTasks: fails the Delete, naming the tasks, when they do not stop in time; a missing cluster has nothing to stop', async () => {
  const stuck = fakeEcs(['task/a'], Number.POSITIVE_INFINITY);
  let time = 0;
  await assert.rejects(
    stopAllTasks(stuck, CLUSTER, { deadline: 20_000, now: () => time, sleep: async (ms) => void (time += ms) }),
    /1 sandbox task\(s\) in arn:aws:ecs:us-east-1:123456789012:cluster\/sandbox did not stop in time: task\/a/,
  );
  const gone = { send: async () => Promise.reject(Object.assign(new Error('Cluster not found.'), { name: 'ClusterNotFoundException' })) };
  await stopAllTasks(gone, CLUSTER, { deadline: 0 });
});

test('handler: Create and Update only name the cluster', async () => {
  for (const RequestType of ['Create', 'Update']) {
    const event = {
      RequestType,
      ResourceProperties: { ServiceToken: 'x', clusterArn: CLUSTER },
    } as unknown as CdkCustomResourceEvent<StopSandboxTasksProperties>;
    assert.deepEqual(await handler(event, { getRemainingTimeInMillis: () => assert.fail('no waiting') }), { PhysicalResourceId: CLUSTER });
  }
});

test("what cdk destroy keeps (docs/deploy.md, Removing the stack): the table, the two buckets, and every log group but the state machine's and the image build's", () => {
  const kept = Object.entries(resources as Record<string, Resource & { DeletionPolicy?: string }>)
    .filter(([, r]) => r.DeletionPolicy === 'Retain')
    .map(([id, r]) => [r.Type, id] as const);
  const keptOf = (type: string) => kept.filter(([t]) => t === type).map(([, id]) => id);
  assert.deepEqual(keptOf('AWS::DynamoDB::Table'), [idOf(stack.table)]);
  assert.deepEqual(keptOf('AWS::S3::Bucket').sort(), Object.keys(template.findResources('AWS::S3::Bucket')).sort());
  const logGroups = Object.keys(template.findResources('AWS::Logs::LogGroup'));
  const deleted = [stack.stateMachine.node.scope!.node.findChild('Logs'), stack.sandbox.task.image.build!.projectLogs].map(idOf);
  assert.deepEqual(keptOf('AWS::Logs::LogGroup').sort(), logGroups.filter((id) => !deleted.includes(id)).sort());
  // Nothing else is kept (the step functions' versions are retained across deploys, and go with
  // their function when the stack is deleted); unnamed, the kept log groups are named after the stack.
  assert.deepEqual([...new Set(kept.map(([type]) => type))].sort(), [
    'AWS::DynamoDB::Table',
    'AWS::Lambda::Version',
    'AWS::Logs::LogGroup',
    'AWS::S3::Bucket',
  ]);
  for (const id of keptOf('AWS::Logs::LogGroup')) assert.equal(resources[id]!.Properties.LogGroupName, undefined, id);
});
