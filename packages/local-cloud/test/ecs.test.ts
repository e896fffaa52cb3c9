import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ClientException,
  ClusterNotFoundException,
  DescribeTasksCommand,
  ECSClient,
  InvalidParameterException,
  ListTasksCommand,
  RunTaskCommand,
  StopTaskCommand,
  type RunTaskCommandInput,
  type Task,
} from '@aws-sdk/client-ecs';
import { startLocalEcs, type LocalEcs, type LocalEcsOptions } from '../src/ecs/index.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const ECS_MODULE = join(ROOT, 'packages/local-cloud/src/ecs/index.ts');
const REAL_SERVER = join(ROOT, 'containers/sandbox/server.ts');
const CLUSTER_ARN = 'arn:aws:ecs:local:000000000000:cluster/sandboxes';
const LOOPBACK_TASK_IP = /^127\.0\.\d{1,3}\.\d{1,3}$/;

// A throwaway command server: the contract the real one keeps (bearer token, GET /health, env
// configuration), plus knobs to misbehave.
const FAKE_SERVER = `
import { createServer } from 'node:http';
import { spawn } from 'node:child_process';
const token = process.env.SANDBOX_TOKEN;
if (!token) {
  console.error('fake sandbox: starting');
  console.error('fake sandbox: SANDBOX_TOKEN is required');
  process.exit(2);
}
if (process.env.FAKE_IGNORE_SIGTERM) process.on('SIGTERM', () => console.error('fake sandbox: ignoring SIGTERM'));
const grandchild = process.env.FAKE_GRANDCHILD
  ? spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' }).pid
  : undefined;
const server = createServer((request, response) => {
  if (request.headers.authorization !== 'Bearer ' + token) {
    response.writeHead(401);
    response.end();
    return;
  }
  if (request.url === '/health') {
    response.end(JSON.stringify({ ok: true }));
    return;
  }
  if (request.url === '/echo') {
    response.end(JSON.stringify({ env: process.env, pid: process.pid, grandchild }));
    return;
  }
  response.writeHead(404);
  response.end();
});
const listen = () =>
  server.listen(Number(process.env.SANDBOX_PORT), process.env.SANDBOX_HOST, () => console.log('fake sandbox: listening'));
if (!process.env.FAKE_NEVER_LISTEN) setTimeout(listen, Number(process.env.FAKE_LISTEN_DELAY_MS ?? 0));
else setInterval(() => {}, 1000);
`;

interface Setup {
  ecs: LocalEcs;
  client: ECSClient;
  dir: string;
  logs: { taskArn: string; line: string }[];
}

async function setup(t: TestContext, options: Partial<LocalEcsOptions> = {}): Promise<Setup> {
  const dir = await mkdtemp(join(tmpdir(), 'local-ecs-'));
  const serverPath = join(dir, 'fake-server.mjs');
  await writeFile(serverPath, FAKE_SERVER);
  const logs: Setup['logs'] = [];
  const ecs = await startLocalEcs({
    serverCommand: [process.execPath, serverPath],
    workspaceRoot: join(dir, 'workspaces'),
    clusterArn: CLUSTER_ARN,
    onLog: (taskArn, line) => logs.push({ taskArn, line }),
    ...options,
    taskDefinitions: options.taskDefinitions ?? ['sandbox', 'other'],
  });
  const client = new ECSClient({
    endpoint: ecs.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  t.after(async () => {
    client.destroy();
    await ecs.close();
    await rm(dir, { recursive: true, force: true });
  });
  return { ecs, client, dir, logs };
}

function runInput(token: string | undefined, extra: Partial<RunTaskCommandInput> = {}, env: Record<string, string> = {}) {
  const environment = Object.entries({ ...(token === undefined ? {} : { SANDBOX_TOKEN: token }), ...env }).map(([name, value]) => ({
    name,
    value,
  }));
  return {
    cluster: CLUSTER_ARN,
    taskDefinition: 'sandbox',
    launchType: 'FARGATE',
    networkConfiguration: {
      awsvpcConfiguration: { subnets: ['subnet-1'], securityGroups: ['sg-1'], assignPublicIp: 'DISABLED' },
    },
    overrides: { containerOverrides: [{ name: 'sandbox', environment }] },
    startedBy: 'thread-1',
    tags: [{ key: 'thread', value: 'C1/1700000000.000100' }],
    ...extra,
  } satisfies RunTaskCommandInput;
}

async function runTask(client: ECSClient, input: RunTaskCommandInput): Promise<Task & { taskArn: string }> {
  const output = await client.send(new RunTaskCommand(input));
  assert.deepEqual(output.failures, []);
  const task = output.tasks?.[0];
  assert.ok(task?.taskArn);
  return task as Task & { taskArn: string };
}

async function describe(client: ECSClient, taskArn: string, include?: 'TAGS'): Promise<Task> {
  const output = await client.send(
    new DescribeTasksCommand({ cluster: CLUSTER_ARN, tasks: [taskArn], ...(include ? { include: [include] } : {}) }),
  );
  const task = output.tasks?.[0];
  assert.ok(task, `DescribeTasks found ${taskArn}`);
  return task;
}

async function waitForStatus(client: ECSClient, taskArn: string, status: string, seen: string[] = [], timeoutMs = 15_000): Promise<Task> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const task = await describe(client, taskArn);
    if (task.lastStatus && seen.at(-1) !== task.lastStatus) seen.push(task.lastStatus);
    if (task.lastStatus === status) return task;
    if (task.lastStatus === 'STOPPED') assert.fail(`task stopped while waiting for ${status}: ${task.stoppedReason}`);
    if (Date.now() > deadline) assert.fail(`task still ${task.lastStatus} after ${timeoutMs} ms, waiting for ${status}`);
    await new Promise((done) => setTimeout(done, 20));
  }
}

function privateIp(task: Task): string | undefined {
  return task.attachments
    ?.find((attachment) => attachment.type === 'ElasticNetworkInterface')
    ?.details?.find((detail) => detail.name === 'privateIPv4Address')?.value;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function eventually(check: () => boolean, message: string | (() => string), timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(typeof message === 'function' ? message() : message);
    await new Promise((done) => setTimeout(done, 20));
  }
}

async function get(url: string, token?: string): Promise<Response> {
  return fetch(url, { headers: token === undefined ? {} : { Authorization: `Bearer ${token}` } });
}

// ---------------------------------------------------------------------------------------------

test('this machine binds 127.0.0.x loopback addresses without configuration', async (t) => {
  const { ecs } = await setup(t);
  assert.equal(ecs.addressing, 'loopback-ips');
});

test('RunTask → PROVISIONING → PENDING → RUNNING; the server answers on the task IP with the token', async (t) => {
  const { ecs, client, logs, dir } = await setup(t, { startDelayMs: 150 });
  // The server listens 1 s after it starts, so the poll below sees PENDING even on a loaded machine.
  const run = await runTask(client, runInput('secret-1', {}, { FAKE_LISTEN_DELAY_MS: '1000', EXTRA: 'x' }));

  assert.equal(run.lastStatus, 'PROVISIONING');
  assert.equal(run.desiredStatus, 'RUNNING');
  assert.equal(run.clusterArn, CLUSTER_ARN);
  assert.equal(run.taskDefinitionArn, 'arn:aws:ecs:local:000000000000:task-definition/sandbox:1');
  assert.match(run.taskArn, /^arn:aws:ecs:local:000000000000:task\/sandboxes\/[0-9a-f]{32}$/);
  assert.equal(run.launchType, 'FARGATE');
  assert.equal(run.startedBy, 'thread-1');
  assert.deepEqual(run.tags, [{ key: 'thread', value: 'C1/1700000000.000100' }]);
  assert.ok(run.createdAt instanceof Date);
  assert.equal(run.attachments?.[0]?.type, 'ElasticNetworkInterface');
  assert.equal(run.attachments?.[0]?.status, 'PRECREATED');
  // 127.0.0.2 unless another process (a concurrent test file) holds 127.0.0.2:8080.
  const ip = privateIp(run);
  assert.ok(ip && LOOPBACK_TASK_IP.test(ip), `task IP ${ip}`);
  assert.equal(run.containers?.[0]?.name, 'sandbox');
  assert.equal(run.containers?.[0]?.lastStatus, 'PENDING');
  assert.equal(run.containers?.[0]?.networkInterfaces?.[0]?.privateIpv4Address, ip);
  assert.deepEqual(run.overrides?.containerOverrides?.[0]?.environment?.[0], { name: 'SANDBOX_TOKEN', value: 'secret-1' });

  // From RunTask's own answer on: PROVISIONING lasts only startDelayMs, which a first poll may miss.
  const seen: string[] = [run.lastStatus!];
  const running = await waitForStatus(client, run.taskArn, 'RUNNING', seen);
  assert.deepEqual(seen, ['PROVISIONING', 'PENDING', 'RUNNING']);
  assert.equal(running.attachments?.[0]?.status, 'ATTACHED');
  assert.equal(running.containers?.[0]?.lastStatus, 'RUNNING');
  assert.equal(running.connectivity, 'CONNECTED');
  assert.ok(running.startedAt instanceof Date && running.createdAt instanceof Date);
  assert.ok(running.startedAt.getTime() - running.createdAt.getTime() >= 250);
  assert.equal(running.tags, undefined, 'DescribeTasks returns tags only with include: [TAGS]');
  assert.deepEqual((await describe(client, run.taskArn, 'TAGS')).tags, run.tags);

  assert.equal(privateIp(running), ip);
  assert.equal((await get(`http://${ip}:8080/health`, 'secret-1')).status, 200);
  assert.equal((await get(`http://${ip}:8080/health`)).status, 401);
  assert.equal((await get(`http://${ip}:8080/health`, 'wrong')).status, 401);

  const echo = (await (await get(`http://${ip}:8080/echo`, 'secret-1')).json()) as { env: Record<string, string>; pid: number };
  const view = ecs.tasks.get(run.taskArn);
  assert.ok(view);
  assert.equal(view.status, 'RUNNING');
  assert.equal(view.pid, echo.pid);
  assert.equal(view.ip, ip);
  assert.equal(view.port, 8080);
  assert.equal(view.startedBy, 'thread-1');
  assert.deepEqual(view.tags, [{ key: 'thread', value: 'C1/1700000000.000100' }]);
  assert.equal(echo.env.SANDBOX_TOKEN, 'secret-1');
  assert.equal(echo.env.SANDBOX_HOST, ip);
  assert.equal(echo.env.SANDBOX_PORT, '8080');
  assert.equal(echo.env.SANDBOX_WORKSPACE, view.workspace);
  assert.equal(echo.env.EXTRA, 'x');
  assert.ok(existsSync(view.workspace));
  assert.equal(view.workspace, join(dir, 'workspaces', view.id));
  // Only what the container is given: no credentials or test-runner variables leak in.
  const expectedNames = ['EXTRA', 'FAKE_LISTEN_DELAY_MS', 'SANDBOX_HOST', 'SANDBOX_PORT', 'SANDBOX_TOKEN', 'SANDBOX_WORKSPACE'];
  for (const name of ['HOME', 'PATH']) if (process.env[name] !== undefined) expectedNames.push(name);
  assert.deepEqual(Object.keys(echo.env).sort(), expectedNames.sort());
  assert.deepEqual(view.envNames, expectedNames.sort());
  assert.ok(logs.some((log) => log.taskArn === run.taskArn && log.line === 'fake sandbox: listening'));
  assert.ok(view.logTail.includes('fake sandbox: listening'));
});

test('two tasks get different IPs and listen on the same port; each answers only its own token', async (t) => {
  const { client } = await setup(t);
  const first = await runTask(client, runInput('token-a'));
  const second = await runTask(client, runInput('token-b'));
  const [a, b] = await Promise.all([waitForStatus(client, first.taskArn, 'RUNNING'), waitForStatus(client, second.taskArn, 'RUNNING')]);
  const ipA = privateIp(a);
  const ipB = privateIp(b);
  assert.ok(ipA && ipB && LOOPBACK_TASK_IP.test(ipA) && LOOPBACK_TASK_IP.test(ipB));
  assert.notEqual(ipA, ipB);
  assert.equal((await get(`http://${ipA}:8080/health`, 'token-a')).status, 200);
  assert.equal((await get(`http://${ipB}:8080/health`, 'token-b')).status, 200);
  assert.equal((await get(`http://${ipA}:8080/health`, 'token-b')).status, 401);
  assert.equal((await get(`http://${ipB}:8080/health`, 'token-a')).status, 401);
});

test('StopTask: STOPPED with UserInitiated and the reason; the process is gone and the workspace removed', async (t) => {
  const { ecs, client } = await setup(t);
  const run = await runTask(client, runInput('secret'));
  await waitForStatus(client, run.taskArn, 'RUNNING');
  const view = ecs.tasks.get(run.taskArn);
  assert.ok(view?.pid);
  const pid = view.pid;

  const stopped = await client.send(new StopTaskCommand({ cluster: CLUSTER_ARN, task: run.taskArn, reason: 'idle timeout' }));
  assert.equal(stopped.task?.desiredStatus, 'STOPPED');
  assert.equal(stopped.task?.stopCode, 'UserInitiated');
  assert.equal(stopped.task?.stoppedReason, 'idle timeout');

  const final = await waitForStatus(client, run.taskArn, 'STOPPED');
  assert.equal(final.stopCode, 'UserInitiated');
  assert.equal(final.stoppedReason, 'idle timeout');
  assert.equal(final.containers?.[0]?.lastStatus, 'STOPPED');
  assert.equal(final.containers?.[0]?.exitCode, 143, 'node dies of SIGTERM');
  assert.equal(final.attachments?.[0]?.status, 'DELETED');
  assert.ok(final.stoppedAt instanceof Date);
  assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' });
  assert.equal(existsSync(view.workspace), false);

  // Stopping a stopped task returns it unchanged.
  const again = await client.send(new StopTaskCommand({ cluster: CLUSTER_ARN, task: run.taskArn, reason: 'other' }));
  assert.equal(again.task?.lastStatus, 'STOPPED');
  assert.equal(again.task?.stoppedReason, 'idle timeout');
});

test('StopTask escalates to SIGKILL after 2 s when the server ignores SIGTERM', async (t) => {
  const { ecs, client } = await setup(t);
  const run = await runTask(client, runInput('secret', {}, { FAKE_IGNORE_SIGTERM: '1' }));
  await waitForStatus(client, run.taskArn, 'RUNNING');
  const started = Date.now();
  await client.send(new StopTaskCommand({ cluster: CLUSTER_ARN, task: run.taskArn }));
  assert.equal((await describe(client, run.taskArn)).lastStatus, 'STOPPING');
  const final = await waitForStatus(client, run.taskArn, 'STOPPED');
  const elapsed = Date.now() - started;
  assert.ok(elapsed >= 1900 && elapsed < 5000, `stopped after ${elapsed} ms`);
  assert.equal(final.containers?.[0]?.exitCode, 137);
  assert.equal(final.stopCode, 'UserInitiated');
  assert.equal(final.stoppedReason, 'Task stopped by user');
  assert.ok(ecs.tasks.get(run.taskArn)?.logTail.includes('fake sandbox: ignoring SIGTERM'));
});

test('kill() simulates the task dying: STOPPED with EssentialContainerExited, the whole process tree gone', async (t) => {
  const { ecs, client } = await setup(t);
  const run = await runTask(client, runInput('secret', {}, { FAKE_GRANDCHILD: '1' }));
  const running = await waitForStatus(client, run.taskArn, 'RUNNING');
  const echo = (await (await get(`http://${privateIp(running)}:8080/echo`, 'secret')).json()) as {
    pid: number;
    grandchild: number;
  };
  assert.ok(isAlive(echo.pid) && isAlive(echo.grandchild));

  const view = await ecs.kill(run.taskArn);
  assert.equal(view.status, 'STOPPED');
  const final = await describe(client, run.taskArn);
  assert.equal(final.lastStatus, 'STOPPED');
  assert.equal(final.desiredStatus, 'STOPPED');
  assert.equal(final.stopCode, 'EssentialContainerExited');
  assert.match(final.stoppedReason ?? '', /^Essential container in task exited \(exit code 137, signal SIGKILL\)/);
  assert.equal(final.containers?.[0]?.exitCode, 137);
  assert.equal(isAlive(echo.pid), false);
  await eventually(() => !isAlive(echo.grandchild), 'the grandchild survived');
  // Its address is free again (reused last: the next task gets a new one).
  const next = await runTask(client, runInput('secret'));
  assert.notEqual(privateIp(next), privateIp(running));
});

test('a server that exits on its own: STOPPED with its exit code and the last lines of stderr', async (t) => {
  const { ecs, client } = await setup(t);
  const run = await runTask(client, runInput(undefined));
  const deadline = Date.now() + 10_000;
  let task = await describe(client, run.taskArn);
  while (task.lastStatus !== 'STOPPED' && Date.now() < deadline) {
    await new Promise((done) => setTimeout(done, 20));
    task = await describe(client, run.taskArn);
  }
  assert.equal(task.lastStatus, 'STOPPED');
  assert.equal(task.stopCode, 'EssentialContainerExited');
  assert.equal(task.containers?.[0]?.exitCode, 2);
  assert.equal(
    task.stoppedReason,
    'Essential container in task exited (exit code 2); last stderr: fake sandbox: starting | fake sandbox: SANDBOX_TOKEN is required',
  );
  assert.equal(ecs.tasks.get(run.taskArn)?.exitCode, 2);
});

test('a server that never answers GET /health: STOPPED with TaskFailedToStart after startTimeoutMs', async (t) => {
  const { ecs, client } = await setup(t, { startTimeoutMs: 300 });
  const run = await runTask(client, runInput('secret', {}, { FAKE_NEVER_LISTEN: '1' }));
  await eventually(() => ecs.tasks.get(run.taskArn)?.status === 'STOPPED', 'the task did not stop');
  const task = await describe(client, run.taskArn);
  assert.equal(task.stopCode, 'TaskFailedToStart');
  assert.match(task.stoppedReason ?? '', /GET \/health did not answer 200 within 300 ms/);
  const pid = ecs.tasks.get(run.taskArn)?.pid;
  assert.ok(pid && !isAlive(pid));
});

test('ListTasks by desired status, startedBy and family, paged; DescribeTasks reports unknown tasks MISSING', async (t) => {
  const { client } = await setup(t);
  const a = await runTask(client, runInput('a', { startedBy: 'thread-a' }));
  const b = await runTask(client, runInput('b', { startedBy: 'thread-b' }));
  const c = await runTask(client, runInput('c', { startedBy: 'thread-b', taskDefinition: 'other:1' }));
  await Promise.all([a, b, c].map((task) => waitForStatus(client, task.taskArn, 'RUNNING')));
  await client.send(new StopTaskCommand({ cluster: CLUSTER_ARN, task: a.taskArn }));
  await waitForStatus(client, a.taskArn, 'STOPPED');

  const list = async (input: Omit<ConstructorParameters<typeof ListTasksCommand>[0], 'cluster'>) =>
    (await client.send(new ListTasksCommand({ cluster: CLUSTER_ARN, ...input }))).taskArns;
  assert.deepEqual(await list({}), [b.taskArn, c.taskArn], 'default desiredStatus RUNNING');
  assert.deepEqual(await list({ desiredStatus: 'STOPPED' }), [a.taskArn]);
  assert.deepEqual(await list({ startedBy: 'thread-b' }), [b.taskArn, c.taskArn]);
  assert.deepEqual(await list({ startedBy: 'thread-a' }), []);
  assert.deepEqual(await list({ family: 'other' }), [c.taskArn]);
  assert.deepEqual(await list({ serviceName: 'some-service' }), []);
  // As ECS: startedBy must be the only filter (the default desiredStatus RUNNING still applies).
  for (const other of [{ desiredStatus: 'RUNNING' as const }, { family: 'other' }, { launchType: 'FARGATE' as const }]) {
    await assert.rejects(client.send(new ListTasksCommand({ cluster: CLUSTER_ARN, startedBy: 'thread-b', ...other })), (error: Error) => {
      assert.ok(error instanceof InvalidParameterException, `${error.name}: ${error.message}`);
      assert.match(error.message, new RegExp(`startedBy must be the only filter.*${Object.keys(other)[0]}`));
      return true;
    });
  }
  const page1 = await client.send(new ListTasksCommand({ cluster: CLUSTER_ARN, maxResults: 1 }));
  assert.deepEqual(page1.taskArns, [b.taskArn]);
  assert.ok(page1.nextToken);
  const page2 = await client.send(new ListTasksCommand({ cluster: CLUSTER_ARN, maxResults: 1, nextToken: page1.nextToken }));
  assert.deepEqual(page2.taskArns, [c.taskArn]);
  assert.equal(page2.nextToken, undefined);
  // By cluster name too; another cluster does not exist.
  assert.equal((await client.send(new ListTasksCommand({ cluster: 'sandboxes' }))).taskArns?.length, 2);
  await assert.rejects(client.send(new ListTasksCommand({ cluster: 'elsewhere' })), ClusterNotFoundException);
  await assert.rejects(client.send(new ListTasksCommand({})), ClusterNotFoundException, 'no cluster means "default"');

  const unknown = 'arn:aws:ecs:local:000000000000:task/sandboxes/00000000000000000000000000000000';
  const described = await client.send(
    new DescribeTasksCommand({ cluster: CLUSTER_ARN, tasks: [b.taskArn, unknown, c.taskArn.split('/').at(-1)!] }),
  );
  assert.deepEqual(
    described.tasks?.map((task) => task.taskArn),
    [b.taskArn, c.taskArn],
  );
  assert.deepEqual(described.failures, [{ arn: unknown, reason: 'MISSING' }]);
});

test('task definitions: a family alone runs its latest ACTIVE revision; a deregistered revision runs no new task, its tasks go on', async (t) => {
  const { client, ecs } = await setup(t);
  const first = await runTask(client, runInput('a'));
  const revision1 = 'arn:aws:ecs:local:000000000000:task-definition/sandbox:1';
  assert.equal(first.taskDefinitionArn, revision1);
  await waitForStatus(client, first.taskArn, 'RUNNING');

  // A deploy replaces the task definition: the next revision first, then the old one deregistered.
  const revision2 = ecs.registerTaskDefinition('sandbox');
  assert.equal(revision2, 'arn:aws:ecs:local:000000000000:task-definition/sandbox:2');
  ecs.deregisterTaskDefinition(revision1);
  const second = await runTask(client, runInput('b'));
  assert.equal(second.taskDefinitionArn, revision2, 'the family runs its latest ACTIVE revision');
  assert.equal(ecs.tasks.get(second.taskArn)?.taskDefinitionArn, revision2);
  assert.equal((await runTask(client, { ...runInput('c'), taskDefinition: revision2 })).taskDefinitionArn, revision2);
  for (const reference of [revision1, 'sandbox:1']) {
    await assert.rejects(client.send(new RunTaskCommand({ ...runInput('d'), taskDefinition: reference })), (error: Error) => {
      assert.ok(error instanceof InvalidParameterException, `${error.name}: ${error.message}`);
      assert.equal(error.message, 'TaskDefinition is inactive');
      return true;
    });
  }
  assert.equal((await describe(client, first.taskArn)).lastStatus, 'RUNNING', "a deregistered revision's tasks go on");
  for (const reference of ['sandbox:3', 'unknown', 'arn:aws:ecs:local:000000000000:task-definition/sandbox']) {
    await assert.rejects(client.send(new RunTaskCommand({ ...runInput('e'), taskDefinition: reference })), (error: Error) => {
      assert.ok(error instanceof ClientException, `${reference}: ${error.name}: ${error.message}`);
      assert.equal(error.message, 'Unable to describe task definition.');
      return true;
    });
  }
});

test('invalid requests fail like ECS does', async (t) => {
  const { client, ecs } = await setup(t);
  const invalid = async (input: RunTaskCommandInput, message: RegExp) => {
    await assert.rejects(client.send(new RunTaskCommand(input)), (error: Error) => {
      assert.ok(error instanceof InvalidParameterException, `${error.name}: ${error.message}`);
      assert.match(error.message, message);
      return true;
    });
  };
  await invalid({ ...runInput('x'), networkConfiguration: undefined }, /Network Configuration must be provided/);
  await invalid({ ...runInput('x'), startedBy: 'C1/1700000000.000100' }, /startedBy/);
  await invalid({ ...runInput('x'), tags: [{ key: 'aws:owner', value: 'me' }] }, /reserved prefix/);
  await invalid({ ...runInput('x'), launchType: 'EC2' }, /FARGATE/);
  await invalid(
    {
      ...runInput('x'),
      networkConfiguration: { awsvpcConfiguration: { subnets: ['subnet-1'], assignPublicIp: 'YES' as 'ENABLED' } },
    },
    /assignPublicIp/,
  );
  await invalid(runInput('x', {}, { BIG: 'x'.repeat(9000) }), /Container Overrides length/);
  await invalid(
    { ...runInput('x'), overrides: { containerOverrides: [{ name: 'sandbox' }, { name: 'sidecar' }] } },
    /sidecar is not a container/,
  );
  await assert.rejects(client.send(new RunTaskCommand({ ...runInput('x'), cluster: 'nope' })), ClusterNotFoundException);
  await assert.rejects(
    client.send(new StopTaskCommand({ cluster: CLUSTER_ARN, task: 'ffffffffffffffffffffffffffffffff' })),
    (error: Error) => error instanceof InvalidParameterException && /task was not found/.test(error.message),
  );
  await assert.rejects(client.send(new DescribeTasksCommand({ cluster: CLUSTER_ARN, tasks: [] })), InvalidParameterException);
  assert.equal(ecs.tasks.size, 0);
});

test('RunTask with the same clientToken starts one task (SDK retries are idempotent)', async (t) => {
  const { client, ecs } = await setup(t);
  const first = await runTask(client, runInput('x', { clientToken: 'token-1' }));
  const second = await runTask(client, runInput('x', { clientToken: 'token-1' }));
  assert.equal(second.taskArn, first.taskArn);
  assert.equal(ecs.tasks.size, 1);
});

test('the wire protocol: AWS JSON 1.1 over POST / with X-Amz-Target, timestamps in epoch seconds', async (t) => {
  const { ecs } = await setup(t);
  const call = (operation: string, body: unknown) =>
    fetch(ecs.endpoint, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/x-amz-json-1.1',
        'X-Amz-Target': `AmazonEC2ContainerServiceV20141113.${operation}`,
      },
      body: JSON.stringify(body),
    });
  const response = await call('RunTask', runInput('raw'));
  assert.equal(response.status, 200);
  assert.equal(response.headers.get('content-type'), 'application/x-amz-json-1.1');
  const body = (await response.json()) as { tasks: { createdAt: unknown; taskArn: string }[]; failures: unknown[] };
  assert.equal(typeof body.tasks[0]?.createdAt, 'number');
  assert.ok(Math.abs(Number(body.tasks[0]?.createdAt) - Date.now() / 1000) < 60);
  assert.deepEqual(body.failures, []);

  const unknown = await call('DeleteCluster', { cluster: CLUSTER_ARN });
  assert.equal(unknown.status, 400);
  assert.equal(((await unknown.json()) as { __type: string }).__type, 'UnknownOperationException');
  const noCluster = await call('DescribeTasks', { cluster: 'nope', tasks: ['x'] });
  assert.equal(noCluster.status, 400);
  assert.deepEqual(await noCluster.json(), { __type: 'ClusterNotFoundException', message: 'Cluster not found.' });
});

test('close() stops every task and leaves no process behind', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'local-ecs-close-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'fake-server.mjs'), FAKE_SERVER);
  const ecs = await startLocalEcs({
    serverCommand: [process.execPath, join(dir, 'fake-server.mjs')],
    workspaceRoot: join(dir, 'workspaces'),
    clusterArn: CLUSTER_ARN,
    taskDefinitions: ['sandbox'],
  });
  const client = new ECSClient({
    endpoint: ecs.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  t.after(() => client.destroy());
  const tasks = await Promise.all([
    runTask(client, runInput('a', {}, { FAKE_GRANDCHILD: '1' })),
    runTask(client, runInput('b', {}, { FAKE_IGNORE_SIGTERM: '1' })),
    runTask(client, runInput('c')),
  ]);
  const running = await Promise.all(tasks.map((task) => waitForStatus(client, task.taskArn, 'RUNNING')));
  const grandchild = ((await (await get(`http://${privateIp(running[0]!)}:8080/echo`, 'a')).json()) as { grandchild: number }).grandchild;
  const pids = [...ecs.tasks.values()].map((task) => task.pid!);
  assert.equal(pids.length, 3);
  assert.ok(pids.every(isAlive));

  await ecs.close();
  assert.ok([...ecs.tasks.values()].every((task) => task.status === 'STOPPED'));
  assert.ok(pids.every((pid) => !isAlive(pid)));
  await eventually(() => !isAlive(grandchild), 'the grandchild survived');
  await assert.rejects(fetch(ecs.endpoint, { method: 'POST' }));
  await ecs.close(); // idempotent
});

for (const ending of ['process.exit', 'SIGTERM'] as const) {
  test(`no orphan survives when the host process ends without close() (${ending})`, async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'local-ecs-orphan-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    await writeFile(join(dir, 'fake-server.mjs'), FAKE_SERVER);
    const hostScript = join(dir, 'host.mts');
    await writeFile(
      hostScript,
      `
import { startLocalEcs } from ${JSON.stringify(ECS_MODULE)};
const ecs = await startLocalEcs({
  serverCommand: [process.execPath, ${JSON.stringify(join(dir, 'fake-server.mjs'))}],
  workspaceRoot: ${JSON.stringify(join(dir, 'workspaces'))},
  taskDefinitions: ['sandbox'],
});
const call = async (operation, body) => {
  const response = await fetch(ecs.endpoint, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-amz-json-1.1', 'X-Amz-Target': 'AmazonEC2ContainerServiceV20141113.' + operation },
    body: JSON.stringify(body),
  });
  return response.json();
};
const run = await call('RunTask', {
  taskDefinition: 'sandbox',
  networkConfiguration: { awsvpcConfiguration: { subnets: ['s'] } },
  overrides: { containerOverrides: [{ name: 'sandbox', environment: [{ name: 'SANDBOX_TOKEN', value: 't' }, { name: 'FAKE_GRANDCHILD', value: '1' }] }] },
});
const arn = run.tasks[0].taskArn;
while ((await call('DescribeTasks', { tasks: [arn] })).tasks[0].lastStatus !== 'RUNNING') await new Promise((r) => setTimeout(r, 20));
const ip = ecs.tasks.get(arn).ip;
const echo = await (await fetch('http://' + ip + ':8080/echo', { headers: { Authorization: 'Bearer t' } })).json();
console.log(JSON.stringify({ pid: echo.pid, grandchild: echo.grandchild }));
if (${JSON.stringify(ending)} === 'process.exit') process.exit(0);
`,
    );
    const host = spawn(process.execPath, ['--import', 'tsx', hostScript], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    host.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    host.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
      host.once('exit', (code, signal) => done({ code, signal })),
    );
    t.after(() => host.kill('SIGKILL'));
    await eventually(
      () => stdout.includes('\n'),
      () => `the host printed nothing; stderr: ${stderr}`,
      20_000,
    );
    const { pid, grandchild } = JSON.parse(stdout.trim()) as { pid: number; grandchild: number };
    if (ending === 'SIGTERM') {
      assert.ok(isAlive(pid) && isAlive(grandchild));
      host.kill('SIGTERM');
    }
    const result = await exited;
    if (ending === 'SIGTERM') assert.deepEqual(result, { code: null, signal: 'SIGTERM' }, 'the host still dies of the signal');
    else assert.equal(result.code, 0);
    await eventually(() => !isAlive(pid) && !isAlive(grandchild), 'a task process survived its host');
  });
}

test("'ports' addressing (where only 127.0.0.1 binds): one IP, a distinct port per task, in networkBindings", async (t) => {
  const { ecs, client } = await setup(t, { addressing: 'ports' });
  assert.equal(ecs.addressing, 'ports');
  const tasks = await Promise.all([runTask(client, runInput('a')), runTask(client, runInput('b'))]);
  const running = await Promise.all(tasks.map((task) => waitForStatus(client, task.taskArn, 'RUNNING')));
  const ports = running.map((task) => task.containers?.[0]?.networkBindings?.[0]?.hostPort);
  assert.deepEqual(
    running.map((task) => privateIp(task)),
    ['127.0.0.1', '127.0.0.1'],
  );
  assert.ok(ports[0] && ports[1] && ports[0] !== ports[1]);
  assert.deepEqual(
    ports,
    tasks.map((task) => ecs.tasks.get(task.taskArn)?.port),
  );
  assert.equal((await get(`http://127.0.0.1:${ports[0]}/health`, 'a')).status, 200);
  assert.equal((await get(`http://127.0.0.1:${ports[1]}/health`, 'b')).status, 200);
});

test(
  'the real sandbox command server runs as a task',
  {
    skip: !existsSync(REAL_SERVER) && 'containers/sandbox/server.ts does not exist yet',
  },
  async (t) => {
    const { ecs, client } = await setup(t, { serverCommand: [process.execPath, '--import', 'tsx', REAL_SERVER], cwd: ROOT });
    const run = await runTask(client, runInput('real-token'));
    const running = await waitForStatus(client, run.taskArn, 'RUNNING', [], 30_000);
    const ip = privateIp(running);
    assert.equal((await get(`http://${ip}:8080/health`, 'real-token')).status, 200);
    assert.notEqual((await get(`http://${ip}:8080/health`, 'wrong')).status, 200);
    const pid = ecs.tasks.get(run.taskArn)?.pid;
    assert.ok(pid);
    await client.send(new StopTaskCommand({ cluster: CLUSTER_ARN, task: run.taskArn }));
    await waitForStatus(client, run.taskArn, 'STOPPED');
    assert.equal(isAlive(pid), false);
  },
);
