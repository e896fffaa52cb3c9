// Old versions of agent-step and sandbox-step (retained across deploys for the runs in flight) are
// pruned on each deploy that publishes one: the custom resource, its exact permissions, its policy,
// and the handler against the local Lambda's versions API behind the local IAM (the template's
// role for the pruning function), with real SDK calls.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { DeleteFunctionCommand, LambdaClient, ListVersionsByFunctionCommand } from '@aws-sdk/client-lambda';
import { KEEP_LATEST_VERSIONS } from '../../infra/constructs/function-version-pruning.ts';
import { PROJECT_ROOT } from '../../infra/function-entries.ts';
import {
  handler,
  type PruneFunctionVersionsProperties,
  pruneFunctionVersions,
  versionsToDelete,
} from '../../infra/custom-resources/prune-function-versions.ts';
import { synthesizeLocalStack } from '../../packages/local-cloud/src/cloud/synth.ts';
import { startFrontDoor, type AwsCall, type FrontDoor } from '../../packages/local-cloud/src/front-door/index.ts';
import { createLocalIam } from '../../packages/local-cloud/src/iam/index.ts';
import { startLocalLambdaApi } from '../../packages/local-cloud/src/lambda/api.ts';
import { createLocalLambda, type LocalLambda } from '../../packages/local-cloud/src/lambda/runtime.ts';
import { localPhysicalName, resolveCloudFormation } from '../../packages/local-cloud/src/resources.ts';
import type { LocalHttpServer } from '../../packages/local-cloud/src/http-server.ts';
import { flatten, logicalId, synth } from './synth.ts';

type Resource = { Type: string; Properties: Record<string, unknown>; DeletionPolicy?: string };
type Statement = { Action: string | string[]; Resource: unknown; Condition?: unknown };
const list = <T>(value: T | T[] | undefined): T[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);
const MINUTE = 60_000;

const { stack, template } = synth();
const resources = template.toJSON().Resources as Record<string, Resource>;
const idOf = (construct: Parameters<typeof logicalId>[1]) => logicalId(stack, construct);
const pruning = stack.versionPruning;

test('a custom resource names agent-step, sandbox-step and reach-step with their current versions: each deploy that publishes one prunes', () => {
  const resource = resources[idOf(pruning.resource.node.defaultChild!)]!;
  assert.equal(resource.Type, 'Custom::PruneFunctionVersions');
  const { ServiceToken: _token, ...properties } = resource.Properties;
  const run = [stack.functions.agentStep, stack.functions.sandboxStep, stack.functions.reachStep];
  // Each function's one version resource (CDK names it after a hash of the function's configuration).
  const versionOf = (fn: (typeof run)[number]) => {
    const ids = Object.entries(resources).filter(
      ([, r]) => r.Type === 'AWS::Lambda::Version' && JSON.stringify(r.Properties.FunctionName) === JSON.stringify({ Ref: idOf(fn) }),
    );
    assert.equal(ids.length, 1);
    return ids[0]![0];
  };
  assert.deepEqual(properties, {
    functionNames: run.map((fn) => ({ Ref: idOf(fn) })),
    currentVersions: run.map((fn) => ({ 'Fn::GetAtt': [versionOf(fn), 'Version'] })),
    keepLatest: String(KEEP_LATEST_VERSIONS),
    // Twice the longest run (runTimeoutMinutes, 60 by default).
    keepSupersededMinutes: '120',
  });
  for (const fn of run) assert.equal(resources[versionOf(fn)]!.DeletionPolicy, 'Retain', 'a deploy keeps the versions');
  const longer = synth({ settings: { runTimeoutMinutes: '240' } });
  const longerResource =
    longer.template.toJSON().Resources[logicalId(longer.stack, longer.stack.versionPruning.resource.node.defaultChild!)];
  assert.equal(longerResource.Properties.keepSupersededMinutes, '480');
});

test('the pruning function may list these three functions’ versions and delete them by qualified ARN, nothing else (besides logs and traces)', () => {
  const roleId = idOf(pruning.provider.handler.role!);
  const statements = Object.values(resources)
    .filter((r) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties.Roles) === JSON.stringify([{ Ref: roleId }]))
    .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
  const lambda = statements.filter((s) => list(s.Action).some((a) => a.startsWith('lambda:')));
  const functions = [stack.functions.agentStep, stack.functions.sandboxStep, stack.functions.reachStep].map((fn) => `<${idOf(fn)}.Arn>`);
  assert.deepEqual(
    // (minimizePolicies sorts the resources.)
    lambda.map((s) => ({ actions: list(s.Action), resources: list(s.Resource).map(flatten).sort(), condition: s.Condition })),
    [
      { actions: ['lambda:ListVersionsByFunction'], resources: functions.sort(), condition: undefined },
      { actions: ['lambda:DeleteFunction'], resources: functions.map((fn) => `${fn}:*`).sort(), condition: undefined },
    ],
  );
  for (const action of statements.flatMap((s) => list(s.Action)).filter((a) => !a.startsWith('lambda:'))) {
    assert.match(action, /^(logs|xray):/);
  }
});

test('the policy: the newest versions stay, and any version replaced less than keepSupersededMinutes ago', () => {
  const now = Date.UTC(2026, 0, 10, 12);
  const at = (minutesAgo: number) => now - minutesAgo * MINUTE;
  const policy = { keepLatest: 3, keepSupersededMs: 120 * MINUTE, now };
  const published = (...minutesAgo: number[]) => [
    { version: '$LATEST', publishedAt: now },
    ...minutesAgo.map((ago, i) => ({ version: String(i + 1), publishedAt: at(ago) })),
  ];
  // 1 and 2 were replaced days ago; 3, 4, 5 are the newest three.
  assert.deepEqual(versionsToDelete(published(5000, 4000, 3000, 200, 10), policy), ['1', '2']);
  // Many deploys in a row: old versions whose successor is younger than the window stay, whatever their own age.
  assert.deepEqual(versionsToDelete(published(50_000, 100, 90, 80, 70, 60), policy), []);
  assert.deepEqual(versionsToDelete(published(50_000, 130, 90, 80, 70, 60), policy), ['1']);
  assert.deepEqual(versionsToDelete(published(5000, 4000, 3000), policy), [], 'never fewer than keepLatest');
  assert.deepEqual(versionsToDelete([], policy), []);
});

test('Delete (the stack going away) prunes nothing; Create and Update prune (and refuse a policy that would keep nothing)', async () => {
  const event = (RequestType: 'Create' | 'Update' | 'Delete') =>
    ({
      RequestType,
      PhysicalResourceId: 'function-version-pruning',
      // keepLatest 0 would delete every version: refused before any call.
      ResourceProperties: {
        functionNames: ['f'],
        currentVersions: ['1'],
        keepLatest: '0',
        keepSupersededMinutes: '120',
        ServiceToken: 'x',
      },
    }) as unknown as Parameters<typeof handler>[0];
  assert.deepEqual(await handler(event('Delete')), { PhysicalResourceId: 'function-version-pruning' });
  for (const type of ['Create', 'Update'] as const) await assert.rejects(handler(event(type)), /invalid pruning policy/);
});

// The handler on the local Lambda's versions API, behind a front door that holds each call to the
// pruning function's role from the local stack's template.
let lambda: LocalLambda;
let api: LocalHttpServer;
let door: FrontDoor;
const calls: AwsCall[] = [];
let names: { agentStep: string; sandboxStep: string; reachStep: string; dispatch: string };
let client: LambdaClient;
let properties: PruneFunctionVersionsProperties;

before(async () => {
  const local = await synthesizeLocalStack();
  const iam = createLocalIam(local.template);
  const nameOf = (role: 'agentStep' | 'sandboxStep' | 'reachStep' | 'dispatch') =>
    localPhysicalName(local.template, local.logicalIds[role]!);
  names = {
    agentStep: nameOf('agentStep'),
    sandboxStep: nameOf('sandboxStep'),
    reachStep: nameOf('reachStep'),
    dispatch: nameOf('dispatch'),
  };
  lambda = createLocalLambda({ root: PROJECT_ROOT });
  // Versions that are never invoked here: only their numbers and times matter.
  const publish = (functionId: string, times: number) => {
    for (let i = 0; i < times; i++)
      lambda.publish([{ functionId, entry: 'unused.ts', env: {}, variables: {}, network: { mode: 'public', functionName: functionId } }]);
  };
  publish(names.agentStep, 5);
  publish(names.sandboxStep, 2);
  publish(names.reachStep, 1);
  publish(names.dispatch, 5);
  api = await startLocalLambdaApi(lambda);
  door = await startFrontDoor({ upstream: api.url, iam: () => iam, onCall: (call) => calls.push(call) });
  const [pruningId, pruningResource] = Object.entries(local.template.Resources).find(
    ([, r]) => r.Type === 'Custom::PruneFunctionVersions',
  )!;
  assert.ok(pruningId);
  const { ServiceToken: _token, ...resolved } = resolveCloudFormation(local.template, pruningResource.Properties) as Record<
    string,
    unknown
  >;
  properties = resolved as unknown as PruneFunctionVersionsProperties;
  const pruningFunction = Object.entries(local.template.Resources).find(
    ([id, r]) => r.Type === 'AWS::Lambda::Function' && id.startsWith('FunctionVersionPruningPruneHandler'),
  )![0];
  client = new LambdaClient({
    endpoint: door.endpoint,
    region: 'us-east-1',
    credentials: iam.accessKeyFor(iam.roleOf(pruningFunction)!),
    maxAttempts: 1,
  });
});

after(async () => {
  client?.destroy();
  await door?.close();
  await api?.close();
  await lambda?.close();
});

const numbers = (functionId: string) => lambda.versions(functionId).map((v) => v.version);

test('on the local Lambda: versions replaced just now are all kept; past the window, all but the newest three go', async () => {
  assert.deepEqual(properties.functionNames, [names.agentStep, names.sandboxStep, names.reachStep]);
  const now = Date.now();
  const soon = await pruneFunctionVersions(client, properties, now);
  assert.deepEqual(
    soon.map((o) => [o.deleted, o.failed]),
    [
      [[], []],
      [[], []],
      [[], []],
    ],
  );
  assert.deepEqual(numbers(names.agentStep), [1, 2, 3, 4, 5], 'runs started on them may still be going');

  const later = await pruneFunctionVersions(client, properties, now + 121 * MINUTE);
  assert.deepEqual(later[0], { functionName: names.agentStep, deleted: ['1', '2'], failed: [] });
  assert.deepEqual(later[1], { functionName: names.sandboxStep, deleted: [], failed: [] });
  assert.deepEqual(later[2], { functionName: names.reachStep, deleted: [], failed: [] });
  assert.deepEqual(numbers(names.agentStep), [3, 4, 5]);
  await assert.rejects(lambda.invoke(names.agentStep, {}, { version: 1 }), { name: 'ResourceNotFoundException' });
  assert.deepEqual(numbers(names.dispatch), [1, 2, 3, 4, 5], 'other functions are not touched');
  assert.deepEqual(
    calls.filter((c) => c.denied),
    [],
  );
});

test("on the local Lambda: the pruning role cannot delete a function whole, nor another function's versions", async () => {
  const denied = async (command: DeleteFunctionCommand | ListVersionsByFunctionCommand) => {
    await assert.rejects(client.send(command as DeleteFunctionCommand), (error: Error) => {
      assert.equal(error.name, 'AccessDeniedException', error.message);
      return true;
    });
  };
  await denied(new DeleteFunctionCommand({ FunctionName: names.agentStep }));
  await denied(new DeleteFunctionCommand({ FunctionName: names.dispatch, Qualifier: '1' }));
  await denied(new ListVersionsByFunctionCommand({ FunctionName: names.dispatch }));
  assert.deepEqual(numbers(names.dispatch), [1, 2, 3, 4, 5]);
  assert.deepEqual(numbers(names.agentStep), [3, 4, 5]);
  // What Lambda itself refuses: $LATEST, and a version that is gone.
  await assert.rejects(client.send(new DeleteFunctionCommand({ FunctionName: names.agentStep, Qualifier: '$LATEST' })), {
    name: 'InvalidParameterValueException',
  });
  await assert.rejects(client.send(new DeleteFunctionCommand({ FunctionName: names.agentStep, Qualifier: '1' })), {
    name: 'ResourceNotFoundException',
  });
});
