// The local sandbox isolated like a Fargate task: the local ECS stand-in runs the real command
// server (bundled, as the image runs it) in bubblewrap, and commands try to get out. Needs
// bubblewrap (README: set-up; .ci/run installs it).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DescribeTasksCommand, ECSClient, RunTaskCommand, StopTaskCommand } from '@aws-sdk/client-ecs';
import { startLocalEcs, type LocalEcs } from '../src/ecs/index.ts';
import { chooseIsolation, type LocalSandboxSetting } from '../src/ecs/isolation.ts';
import { bundleSandboxServer } from '../src/ecs/server-bundle.ts';
import { exec, writeFile as writeSandboxFile, type SandboxAddress } from '../../../shared/sandbox/client.ts';
import { eventually } from '../../../test/support/eventually.ts';
import { hostPidOf, pidAlive } from '../../../test/support/sandbox-pids.ts';

const CLUSTER_ARN = 'arn:aws:ecs:local:000000000000:cluster/default';

let dir: string;
let bundle: string;
let hostSecret: string;
let hostServer: Server;
let hostUrl: string;
const standIns: { ecs: LocalEcs; client: ECSClient }[] = [];
let isolated: Awaited<ReturnType<typeof standIn>>;

before(async () => {
  dir = await realpath(await mkdtemp(join(tmpdir(), 'local-isolation-')));
  bundle = await bundleSandboxServer(dir);
  // A file of the host's, outside every task's directory, as a home directory's credentials are.
  hostSecret = join(dir, 'host-credentials');
  await writeFile(hostSecret, 'aws_secret_access_key = host-only\n');
  hostServer = createServer((_request, response) => response.end('reached the host'));
  await new Promise<void>((resolve) => hostServer.listen(0, '127.0.0.1', resolve));
  hostUrl = `http://127.0.0.1:${(hostServer.address() as AddressInfo).port}/`;
  isolated = await standIn('isolated');
  assert.equal(isolated.ecs.isolation.mode, 'bubblewrap', 'bubblewrap works on this machine (see the README set-up)');
});

after(async () => {
  for (const { ecs, client } of standIns) {
    client.destroy();
    await ecs.close();
  }
  await new Promise((resolve) => hostServer?.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

async function standIn(setting: LocalSandboxSetting, bubblewrap?: string) {
  const ecs = await startLocalEcs({
    serverCommand: [process.execPath, bundle],
    workspaceRoot: join(dir, `tasks-${setting}-${standIns.length}`),
    clusterArn: CLUSTER_ARN,
    taskDefinitions: ['sandbox'],
    isolation: chooseIsolation(setting, bubblewrap),
  });
  const client = new ECSClient({
    endpoint: ecs.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  standIns.push({ ecs, client });
  return { ecs, client };
}

function runTask(client: ECSClient, token: string) {
  return client.send(
    new RunTaskCommand({
      cluster: CLUSTER_ARN,
      taskDefinition: 'sandbox',
      launchType: 'FARGATE',
      networkConfiguration: { awsvpcConfiguration: { subnets: ['subnet-1'] } },
      overrides: { containerOverrides: [{ name: 'sandbox', environment: [{ name: 'SANDBOX_TOKEN', value: token }] }] },
    }),
  );
}

/** A running task of the stand-in, and how to reach its command server. */
async function startTask({ ecs, client }: { ecs: LocalEcs; client: ECSClient }) {
  const token = randomBytes(16).toString('hex');
  const out = await runTask(client, token);
  assert.deepEqual(out.failures, []);
  const taskArn = out.tasks![0]!.taskArn!;
  await eventually(() => ecs.tasks.get(taskArn)?.status === 'RUNNING', 30_000, 'task running');
  const task = ecs.tasks.get(taskArn)!;
  const address: SandboxAddress = { baseUrl: `http://${task.ip}:${task.port}`, token };
  let run = 0;
  const sh = (command: string) => exec(address, { id: `c${run++}`, command, timeoutMs: 30_000 });
  return { task, taskArn, token, address, sh };
}

test('a task sees its own workspace at /workspace, as on Fargate, and none of the host', async () => {
  const { task, sh } = await startTask(isolated);
  const result = await sh(
    ['pwd', 'echo "$HOME"', 'id -u', 'ls /', `cat ${hostSecret} || echo no-secret`, `ls ${homedir()} || echo no-home`].join('; '),
  );
  const lines = result.stdout.trim().split('\n');
  assert.equal(lines[0], '/workspace');
  assert.equal(lines[1], '/workspace/home');
  assert.equal(lines[2], '1000');
  assert.doesNotMatch(result.stdout, /host-only/);
  assert.match(result.stdout, /no-secret/);
  assert.match(result.stdout, /no-home/);
  // The host's path to the workspace means nothing inside; the workspace is the host's directory.
  assert.match((await sh(`ls ${task.workspace} || echo no-host-path`)).stdout, /no-host-path/);
  await sh('echo made inside > /workspace/inside.txt');
  assert.equal((await import('node:fs')).readFileSync(join(task.workspace, 'inside.txt'), 'utf8'), 'made inside\n');
});

test("a task cannot see another task's files, nor the host's processes or the task token", async () => {
  const a = await startTask(isolated);
  const b = await startTask(isolated);
  await writeSandboxFile(a.address, 'data/for-a.txt', 'only for A');
  const listed = await b.sh('ls -A /workspace /workspace/data');
  assert.doesNotMatch(listed.stdout, /for-a/);
  const read = await b.sh(`cat ${a.task.workspace}/data/for-a.txt; ls ${join(a.task.workspace, '..')}`);
  assert.doesNotMatch(read.stdout, /only for A/);
  assert.match(read.stderr, /No such file[^]*No such file/);
  // Only the sandbox's own processes: the stand-in's (this test process) is not there.
  assert.match((await b.sh(`kill -0 ${process.pid} 2>&1 || echo not-visible`)).stdout, /not-visible/);
  const environments = await b.sh("cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline | tr '\\0' '\\n'");
  assert.match(environments.stdout, /SANDBOX_WORKSPACE=\/workspace/);
  assert.doesNotMatch(environments.stdout, new RegExp(b.token), 'the token is in no environment or command line');
});

test('a task has no network: the host is out of reach', async () => {
  const { sh } = await startTask(isolated);
  const fetchHost = `${'/opt/sandbox/bin/node'} -e "fetch('${hostUrl}').then(r => r.text()).then(console.log, e => console.log('unreachable', e.cause?.code ?? e.message))"`;
  const result = await sh(fetchHost);
  assert.match(result.stdout, /unreachable/);
  assert.doesNotMatch(result.stdout, /reached the host/);
  // LOCAL_SANDBOX=egress: the same command reaches it.
  const egress = await standIn('egress');
  assert.equal(egress.ecs.isolation.mode, 'bubblewrap');
  assert.match((await (await startTask(egress)).sh(fetchHost)).stdout, /reached the host/);
});

test("a command cannot write the server's socket folder, nor send the stand-in's forward elsewhere", async () => {
  // A socket of the host's, as a local service's would be: the forward must never reach it.
  const hostSocket = join(dir, 'host-service.sock');
  const reached: string[] = [];
  const hostService = createServer((request, response) => {
    reached.push(request.headers.authorization ?? '');
    response.end(JSON.stringify({ id: 'forged', exitCode: 0, stdout: 'answered by the host service\n' }));
  });
  await new Promise<void>((resolve) => hostService.listen(hostSocket, resolve));
  try {
    const { sh } = await startTask(isolated);
    const attempts = await sh(
      [
        'touch /run/sandbox/x && echo touched',
        'rm /run/sandbox/server.sock && echo removed',
        'mv /run/sandbox/server.sock /run/sandbox/moved.sock && echo moved',
        // Replace the socket by a link to the host's: the stand-in resolves it on the host.
        `ln -s ${hostSocket} /run/sandbox/link.sock && mv -f /run/sandbox/link.sock /run/sandbox/server.sock && echo replaced`,
        // As in the image, the rest of the root is read-only too (readonlyRootFilesystem).
        'mkdir /run/other && echo made-run-dir',
        'touch /x && echo touched-root',
      ].join('; '),
    );
    assert.doesNotMatch(attempts.stdout, /touched|removed|moved|replaced|made-run-dir|touched-root/);
    const next = await sh('echo still the sandbox');
    assert.equal(next.stdout, 'still the sandbox\n');
    assert.deepEqual(reached, [], 'nothing reached the host service');
  } finally {
    await new Promise((resolve) => hostService.close(resolve));
  }
});

test('background processes and /tmp last as long as the task, and die with it', async () => {
  const { taskArn, task, sh } = await startTask(isolated);
  const started = await sh('sleep 300 > /dev/null 2>&1 & echo $!; echo kept > /tmp/note');
  const pid = Number(started.stdout.trim());
  assert.ok(pid > 0);
  assert.match((await sh(`kill -0 ${pid} && cat /tmp/note`)).stdout, /kept/);
  const hostPid = hostPidOf(task.pid!, pid);
  assert.ok(hostPid, 'the sleeper is a process of the task');
  await isolated.client.send(new StopTaskCommand({ cluster: CLUSTER_ARN, task: taskArn }));
  await eventually(
    async () => {
      const out = await isolated.client.send(new DescribeTasksCommand({ cluster: CLUSTER_ARN, tasks: [taskArn] }));
      return out.tasks?.[0]?.lastStatus === 'STOPPED';
    },
    15_000,
    'task stopped',
  );
  await eventually(() => !pidAlive(hostPid), 5000, 'sleeper gone with its task');
});

test('without bubblewrap, tasks are refused, saying why, unless LOCAL_SANDBOX=unsafe', async () => {
  const missing = await standIn('isolated', join(dir, 'no-such-bwrap'));
  assert.equal(missing.ecs.isolation.mode, 'unavailable');
  const refused = await runTask(missing.client, 'token');
  assert.deepEqual(refused.tasks, []);
  assert.equal(refused.failures?.[0]?.reason, 'LOCAL_SANDBOX');
  assert.match(refused.failures?.[0]?.detail ?? '', /no-such-bwrap not found.*LOCAL_SANDBOX=unsafe/);
  // unsafe: the plain process of before, with the host's paths.
  const unsafe = await standIn('unsafe', join(dir, 'no-such-bwrap'));
  assert.equal(unsafe.ecs.isolation.mode, 'process');
  const { task, sh } = await startTask(unsafe);
  assert.equal((await sh('pwd')).stdout.trim(), task.workspace);
});
