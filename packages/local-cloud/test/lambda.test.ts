// The local Lambda: each function version in a worker of its own (its own environment and module
// instances), Lambda's payload limits, and the network its VPC placement allows.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { after, before, test } from 'node:test';
import { PROJECT_ROOT } from '../../../infra/function-entries.ts';
import { synthesizeLocalStack } from '../src/cloud/synth.ts';
import { ASYNC_PAYLOAD_LIMIT, SYNC_RESPONSE_LIMIT } from '../src/lambda/limits.ts';
import { workerNetwork, type WorkerNetwork } from '../src/lambda/network-policy.ts';
import { createLocalLambda, withoutTypeScriptLoader, type LocalFunctionVersion, type LocalLambda } from '../src/lambda/runtime.ts';

const ENTRY = 'test/fixtures/lambda/probe-handler.ts';
// On Linux all of 127.0.0.0/8 is loopback: this stands for a private address in the VPC (a task).
const PRIVATE_IP = '127.0.77.7';
let lambda: LocalLambda;
const servers: Server[] = [];

async function listen(host: string): Promise<number> {
  const server = createServer((socket) => socket.end());
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return (server.address() as { port: number }).port;
}

function version(functionId: string, network: WorkerNetwork, env: Record<string, string> = {}): LocalFunctionVersion {
  return { functionId, entry: ENTRY, env: { PATH: process.env.PATH ?? '', ...env }, variables: env, network };
}

before(() => {
  lambda = createLocalLambda({ root: PROJECT_ROOT });
});
after(async () => {
  await lambda.close();
  for (const server of servers) server.close();
});

test('each function has its own environment, and a new version leaves the old one as it was', async () => {
  lambda.publish([version('first', { mode: 'public', functionName: 'first' }, { STAGE: 'one' })]);
  lambda.publish([version('second', { mode: 'public', functionName: 'second' }, { STAGE: 'two' })]);
  assert.deepEqual(await lambda.invoke('first', { env: ['STAGE', 'HOME_SECRET'] }), { STAGE: 'one', HOME_SECRET: null });
  assert.deepEqual(await lambda.invoke('second', { env: ['STAGE'] }), { STAGE: 'two' });
  const published = lambda.publish([version('first', { mode: 'public', functionName: 'first' }, { STAGE: 'one-b' })]);
  assert.equal(published.first, 2);
  assert.deepEqual(await lambda.invoke('first', { env: ['STAGE'] }), { STAGE: 'one-b' }, 'unqualified: the newest version');
  assert.deepEqual(await lambda.invoke('first', { env: ['STAGE'] }, { version: 1 }), { STAGE: 'one' });
  await lambda.remove('first', 1);
  await assert.rejects(lambda.invoke('first', {}, { version: 1 }), { name: 'ResourceNotFoundException' });
  assert.deepEqual(
    lambda.invocations.map((i) => `${i.functionId}:${i.version}`),
    ['first:1', 'second:1', 'first:2', 'first:1'],
  );
});

test('the invocation that cold-starts a function carries its init time (loading the handler module); a warm one does not', async () => {
  lambda.publish([version('timed', { mode: 'public', functionName: 'timed' })]);
  await lambda.invoke('timed', { env: [] });
  await lambda.invoke('timed', { env: [] });
  const [cold, warm] = lambda.invocations.filter((i) => i.functionId === 'timed');
  assert.ok(typeof cold?.initMs === 'number' && cold.initMs > 0, `cold start init ${cold?.initMs}`);
  assert.equal(warm?.initMs, undefined);
});

test("a function's error keeps its name and message", async () => {
  lambda.publish([version('failing', { mode: 'public', functionName: 'failing' })]);
  await assert.rejects(lambda.invoke('failing', { fail: 'no such thread' }), { name: 'ProbeFailure', message: 'no such thread' });
});

test("Lambda's payload limits: 256 KB for an asynchronous event, 6 MB for a response", async () => {
  lambda.publish([version('sizes', { mode: 'public', functionName: 'sizes' })]);
  const big = { filler: 'é'.repeat(ASYNC_PAYLOAD_LIMIT / 2) }; // two bytes each: over the limit in bytes, not in characters
  await assert.rejects(lambda.invoke('sizes', big, { kind: 'async' }), { name: 'RequestTooLargeException', message: /262144/ });
  assert.ok(await lambda.invoke('sizes', big), 'a synchronous request may be larger');
  await assert.rejects(lambda.invoke('sizes', { bytes: SYNC_RESPONSE_LIMIT }), { name: 'Function.ResponseSizeTooLarge' });
});

test('a function outside the VPC cannot reach a private address; one inside reaches only what its security group allows', async () => {
  const taskPort = await listen(PRIVATE_IP);
  const otherPort = await listen(PRIVATE_IP);
  const endpointPort = await listen('127.0.0.1');
  const publicPort = await listen('127.0.0.1');
  lambda.publish([
    version('outside', { mode: 'public', functionName: 'outside' }),
    version('inside', {
      mode: 'vpc',
      functionName: 'inside',
      privatePorts: [taskPort],
      endpoints: [{ service: 's3', host: '127.0.0.1', port: endpointPort }],
    }),
  ]);
  const reach = (functionId: string, host: string, port: number) =>
    lambda.invoke(functionId, { connect: { host, port } }) as Promise<{ connected: boolean; message?: string }>;

  const blocked = await reach('outside', PRIVATE_IP, taskPort);
  assert.equal(blocked.connected, false);
  assert.match(blocked.message!, /outside the sandbox VPC/);
  assert.equal((await reach('outside', '127.0.0.1', publicPort)).connected, true, 'public endpoints are reachable');

  assert.equal((await reach('inside', PRIVATE_IP, taskPort)).connected, true, 'the task port its security group allows');
  assert.match((await reach('inside', PRIVATE_IP, otherPort)).message!, /allows no egress/);
  assert.equal((await reach('inside', '127.0.0.1', endpointPort)).connected, true, 'S3 through its gateway endpoint');
  assert.match((await reach('inside', '127.0.0.1', publicPort)).message!, /only s3 through endpoints/);
});

test("the stack's network, read from the template: only sandbox-step reaches the tasks, and only S3 and DynamoDB besides", async () => {
  const { template, logicalIds } = await synthesizeLocalStack();
  const env = { AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:4566', AWS_ENDPOINT_URL_DYNAMODB: 'http://127.0.0.1:8000' };
  for (const role of ['webhook', 'dispatch', 'runEnded', 'agentStep', 'sandboxReaper', 'scheduler'] as const) {
    assert.equal(workerNetwork(template, logicalIds[role]!, env).mode, 'public', role);
  }
  assert.deepEqual(workerNetwork(template, logicalIds.sandboxStep!, env, { 8080: 18080 }), {
    mode: 'vpc',
    functionName: logicalIds.sandboxStep,
    privatePorts: [18080],
    endpoints: [
      { service: 's3', host: '127.0.0.1', port: 4566 },
      { service: 'dynamodb', host: '127.0.0.1', port: 8000 },
    ],
  });
});

test("a function's worker starts without the host's TypeScript loader (its bundle is plain JavaScript), keeping the other flags", () => {
  assert.deepEqual(withoutTypeScriptLoader(['--import', 'tsx', '--enable-source-maps']), ['--enable-source-maps']);
  assert.deepEqual(withoutTypeScriptLoader(['--import=tsx', '--require', 'tsx/cjs', '--cpu-prof']), ['--cpu-prof']);
  assert.deepEqual(withoutTypeScriptLoader(['--import', './setup.mjs', '--max-old-space-size=512']), [
    '--import',
    './setup.mjs',
    '--max-old-space-size=512',
  ]);
});
