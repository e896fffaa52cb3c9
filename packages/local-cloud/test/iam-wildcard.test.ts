// Requests AWS authorizes against "*": the local IAM compares the policies' resource patterns with
// the string "*" itself, as AWS does, so a grant that names resources never allows them. Each quirk
// on a small template of one role, so the policy under test is the only one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLocalIam, type AwsHttpRequest, type Decision } from '../src/iam/index.ts';

const CLUSTER = 'arn:aws:ecs:local:000000000000:cluster/sandboxes';
const OTHER_CLUSTER = 'arn:aws:ecs:local:000000000000:cluster/other';
const IN_CLUSTER = { ArnEquals: { 'ecs:cluster': CLUSTER } };

/** A template of one role whose one policy holds these statements. */
function roleWith(...statements: object[]) {
  const iam = createLocalIam({
    Resources: {
      Role: { Type: 'AWS::IAM::Role', Properties: { AssumeRolePolicyDocument: {} } },
      Policy: {
        Type: 'AWS::IAM::Policy',
        Properties: { PolicyName: 'p', Roles: [{ Ref: 'Role' }], PolicyDocument: { Version: '2012-10-17', Statement: statements } },
      },
    },
  });
  return (request: AwsHttpRequest): Promise<Decision> => iam.authorizeRequest({ role: 'Role' }, request);
}

const ecs = (operation: string, body: object): AwsHttpRequest => ({
  service: 'ecs',
  method: 'POST',
  url: '/',
  headers: { 'x-amz-target': `AmazonEC2ContainerServiceV20141113.${operation}` },
  body: Buffer.from(JSON.stringify(body)),
});
const listTasks = (cluster = CLUSTER) => ecs('ListTasks', { cluster, startedBy: 'threadwork-sandbox' });

test('ListTasks of a cluster: a grant on its container instances does not allow it; AWS denies it "on resource: *"', async () => {
  const authorize = roleWith({
    Effect: 'Allow',
    Action: 'ecs:ListTasks',
    Resource: 'arn:aws:ecs:local:000000000000:container-instance/sandboxes/*',
    Condition: IN_CLUSTER,
  });
  const denied = await authorize(listTasks());
  assert.equal(denied.allowed, false);
  assert.match(denied.message, /is not authorized to perform: ecs:ListTasks on resource: \* because no identity-based policy allows/);
  // Listing one container instance's tasks is authorized on that instance, which the grant names.
  const onInstance = ecs('ListTasks', { cluster: CLUSTER, containerInstance: 'i-1' });
  assert.equal((await authorize(onInstance)).allowed, true);
});

test('ListTasks of a cluster: "*" with ecs:cluster allows it for that cluster, not for another', async () => {
  const authorize = roleWith({ Effect: 'Allow', Action: 'ecs:ListTasks', Resource: '*', Condition: IN_CLUSTER });
  assert.equal((await authorize(listTasks())).allowed, true);
  assert.equal((await authorize(listTasks(OTHER_CLUSTER))).allowed, false);
});

test('a request on "*" is matched by patterns that match the string "*" (*, ?), not by ARN patterns or policy variables', async () => {
  for (const [resource, allowed] of [
    ['*', true],
    ['?', true],
    ['arn:aws:ecs:*:*:*', false],
    ['arn:*', false],
    ['${aws:username}', false],
    ['${*}', true],
  ] as const) {
    const authorize = roleWith({ Effect: 'Allow', Action: 'ecs:ListTasks', Resource: resource });
    assert.equal((await authorize(listTasks())).allowed, allowed, resource);
  }
});

test('on "*": a Deny naming resources does not apply, a Deny on "*" does; NotResource applies unless it matches "*"', async () => {
  const allowAll = { Effect: 'Allow', Action: 'ecs:ListTasks', Resource: '*' };
  const denyNamed = { Effect: 'Deny', Action: 'ecs:ListTasks', Resource: 'arn:aws:ecs:local:000000000000:container-instance/*' };
  assert.equal((await roleWith(allowAll, denyNamed)(listTasks())).allowed, true);
  const denyAll = await roleWith(allowAll, { ...denyNamed, Resource: '*' })(listTasks());
  assert.equal(denyAll.allowed, false);
  assert.match(denyAll.message, /with an explicit deny/);
  const notResource = (NotResource: string) => roleWith({ Effect: 'Allow', Action: 'ecs:ListTasks', NotResource });
  assert.equal((await notResource('arn:aws:ecs:local:000000000000:container-instance/*')(listTasks())).allowed, true);
  assert.equal((await notResource('*')(listTasks())).allowed, false);
});

test('an action the reference authorizes against "*" only (DescribeTaskDefinition): a grant naming a task definition never allows it', async () => {
  const request = ecs('DescribeTaskDefinition', { taskDefinition: 'sandbox' });
  const named = roleWith({
    Effect: 'Allow',
    Action: 'ecs:DescribeTaskDefinition',
    Resource: 'arn:aws:ecs:local:000000000000:task-definition/sandbox:*',
  });
  const denied = await named(request);
  assert.equal(denied.allowed, false);
  assert.equal(denied.resource, '*');
  assert.equal((await roleWith({ Effect: 'Allow', Action: 'ecs:DescribeTaskDefinition', Resource: '*' })(request)).allowed, true);
});
