// What keeps threads and sandboxes from sticking when a release or a stop was lost: the stale-lease
// reclaim in dispatch (against the local Step Functions, over its real API) and the idle sandbox
// reaper (against the local ECS, whose tasks are real processes).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { DescribeTasksCommand, ECSClient, StopTaskCommand } from '@aws-sdk/client-ecs';
import { SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { startLocalEcs, type LocalEcs } from '../../packages/local-cloud/src/ecs/index.ts';
import { startLocalStepFunctions, type LocalStepFunctions } from '../../packages/local-cloud/src/step-functions/index.ts';
import { localFunctionArn } from '../../packages/local-cloud/src/template.ts';
import { admitPrompt, getActor, type ActorDeps } from '../../shared/run/actor.ts';
import { channelRunsKey, slotHolders, slotsTaken } from '../../shared/run/capacity.ts';
import { sandboxesKey } from '../../shared/table.ts';
import { executionArnFor, LEASE_CHECK_AFTER_MS, reclaimStaleLease, reclaimStaleSlots } from '../../shared/run/control.ts';
import { sandboxReaperEnv } from '../../shared/env.ts';
import { sandboxConfigFromEnv } from '../../shared/handler-context/sandbox.ts';
import { createLogger } from '../../shared/observability/log.ts';
import { emfMetrics } from '../../shared/observability/metrics.ts';
import {
  addressOf,
  ensureSandbox,
  getSandbox,
  type LifecycleDeps,
  MAX_FAILED_STARTS,
  markLost,
  reapIdleSandboxes,
  startSandbox,
  sweepOrphanedTasks,
  waitUntilAnswering,
} from '../../shared/sandbox/lifecycle.ts';
import type { Prompt } from '../../shared/contracts.ts';
import { LOCAL_CREDENTIALS, startTestTable, type TestTable } from '../support/dynamo.ts';

const STATE_MACHINE_ARN = 'arn:aws:states:us-east-1:000000000000:stateMachine:recovery';
const clock = { ms: Date.UTC(2026, 10, 24, 12, 0, 0) };
let table: TestTable;
let sfnStandIn: LocalStepFunctions;
let sfn: SFNClient;
let ecsStandIn: LocalEcs;
let ecs: ECSClient;
let workspaces: string;
const holds = new Map<string, () => void>();

before(async () => {
  table = await startTestTable('recovery-test');
  // One task that waits until the test lets its execution end.
  sfnStandIn = await startLocalStepFunctions({
    definition: { StartAt: 'Work', States: { Work: { Type: 'Task', Resource: localFunctionArn('Hold'), End: true } } },
    stateMachineArn: STATE_MACHINE_ARN,
    invokeFunction: (_id, payload) => new Promise((resolve) => holds.set((payload as { runId: string }).runId, () => resolve({}))),
  });
  sfn = new SFNClient({ endpoint: sfnStandIn.endpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS });
  workspaces = mkdtempSync(join(tmpdir(), 'recovery-test-'));
  ecsStandIn = await startLocalEcs({
    serverCommand: [
      process.execPath,
      '-e',
      "require('node:http').createServer((q, s) => s.end('{}')).listen(Number(process.env.SANDBOX_PORT), process.env.SANDBOX_HOST)",
    ],
    workspaceRoot: workspaces,
    taskDefinitions: ['sandbox'],
  });
  ecs = new ECSClient({ endpoint: ecsStandIn.endpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS });
});

after(async () => {
  for (const release of holds.values()) release();
  sfn?.destroy();
  ecs?.destroy();
  await Promise.allSettled([sfnStandIn?.close(), ecsStandIn?.close(), table?.emulator.stop()]);
  table?.raw.destroy();
  rmSync(workspaces, { recursive: true, force: true });
});

function actorDeps(startRun: ActorDeps['startRun']): ActorDeps {
  return { db: table.db, tableName: table.tableName, startRun, now: () => clock.ms };
}

const startExecution: ActorDeps['startRun'] = async (run) => {
  await sfn.send(new StartExecutionCommand({ stateMachineArn: STATE_MACHINE_ARN, name: run.runId, input: JSON.stringify(run) }));
};

let threads = 0;
function prompt(): Prompt {
  const threadId = `slack:CREC:${++threads}.000`;
  return {
    threadId,
    messageId: `${threads}.001`,
    text: 'hi',
    author: { userId: 'U1', userName: 'u' },
    postedAt: new Date(clock.ms).toISOString(),
    thread: { _type: 'chat:Thread', id: threadId, adapterName: 'slack', channelId: 'CREC', isDM: false },
  };
}

const control = (actor: ActorDeps) => ({ actor, sfn, stateMachineArn: STATE_MACHINE_ARN, logger: createLogger({ level: 'silent' }) });

test('a lease whose execution ended without releasing is reclaimed; a running one and a young one are kept', async () => {
  const actor = actorDeps(startExecution);
  const lost = prompt();
  assert.equal(await admitPrompt(actor, lost), 'started');
  const runId = (await getActor(actor, lost.threadId))!.current!.runId;

  // Young lease: not even checked.
  assert.equal(await reclaimStaleLease(control(actor), lost.threadId, 'a later message', clock.ms + 1000), false);
  // Old, but the execution is still running: kept.
  assert.equal(await reclaimStaleLease(control(actor), lost.threadId, 'a later message', clock.ms + LEASE_CHECK_AFTER_MS), false);
  assert.equal((await getActor(actor, lost.threadId))?.status, 'running');

  // The execution ends, and its release never arrives (the run-ended event was lost).
  holds.get(runId)!();
  const ended = await sfnStandIn.waitForExecution(executionArnFor(STATE_MACHINE_ARN, runId));
  assert.equal(ended.status, 'SUCCEEDED');
  assert.equal(await reclaimStaleLease(control(actor), lost.threadId, 'a later message', clock.ms + LEASE_CHECK_AFTER_MS), true);
  assert.equal((await getActor(actor, lost.threadId))?.status, 'idle');
});

test('a lease whose execution never started: its own redelivery is left to start it; a later prompt starts it, or frees the thread', async () => {
  let startable = false;
  const actor = actorDeps(async (run) => {
    if (!startable) throw new Error('StartExecution failed');
    await startExecution(run);
  });
  const never = prompt();
  await assert.rejects(admitPrompt(actor, never), /StartExecution failed/);
  const late = clock.ms + LEASE_CHECK_AFTER_MS;
  assert.equal(await reclaimStaleLease(control(actor), never.threadId, never.messageId, late), false, 'its own redelivery');
  assert.equal((await getActor(actor, never.threadId))?.started, false);

  // A later prompt of the thread, while the start still fails: the thread is freed, not stuck.
  assert.equal(await reclaimStaleLease(control(actor), never.threadId, 'a later message', late), true);
  assert.equal((await getActor(actor, never.threadId))?.status, 'idle');

  // And when the start works again, the lease holder is started rather than dropped.
  const lost = prompt();
  await assert.rejects(admitPrompt(actor, lost), /StartExecution failed/);
  startable = true;
  assert.equal(await reclaimStaleLease(control(actor), lost.threadId, 'a later message', late), false);
  const item = await getActor(actor, lost.threadId);
  assert.equal(item?.started, true);
  assert.equal(item?.status, 'running');
  holds.get(item!.current!.runId)!();
});

function reaperDeps(port = 8080): LifecycleDeps {
  return {
    db: table.db,
    tableName: table.tableName,
    ecs,
    now: () => clock.ms,
    config: {
      cluster: ecsStandIn.clusterArn,
      taskDefinition: 'sandbox',
      containerName: 'sandbox',
      subnets: ['subnet-local'],
      securityGroups: ['sg-local'],
      port,
      idleMinutes: 5,
    },
  };
}

test('the reaper stops sandboxes idle past the timeout and keeps the ones in use', async () => {
  const deps = reaperDeps();
  const idle = await startSandbox(deps, 'slack:CREC:idle');
  clock.ms += 4 * 60_000;
  const busy = await startSandbox(deps, 'slack:CREC:busy');
  clock.ms += 2 * 60_000;

  const metrics = emfMetrics({ namespace: 'test', write: () => undefined });
  assert.deepEqual(await reapIdleSandboxes({ ...deps, metrics }), ['slack:CREC:idle']);
  assert.equal(await getSandbox(deps, 'slack:CREC:idle'), undefined);
  // The sweep's gauges, and the stopped sandbox's Fargate time (started 6 minutes ago).
  const published = Object.fromEntries(
    metrics.documents().flatMap((doc) => Object.entries(doc).filter(([key]) => /^Sandbox|^Oldest/.test(key))),
  );
  assert.deepEqual(published, { SandboxSeconds: 360, SandboxesRunning: 1, OldestSandboxAge: 120 });
  assert.ok(await getSandbox(deps, 'slack:CREC:busy'));
  const described = await ecs.send(new DescribeTasksCommand({ cluster: ecsStandIn.clusterArn, tasks: [idle.taskArn, busy.taskArn] }));
  const status = Object.fromEntries((described.tasks ?? []).map((t) => [t.taskArn, t.desiredStatus]));
  assert.equal(status[idle.taskArn], 'STOPPED');
  assert.equal(status[busy.taskArn], 'RUNNING');
});

test('agent-step takes RUNNING with an address as ready; sandbox-step waits until the server answers', async () => {
  // Nothing listens on port 9: ensureSandbox must not depend on reaching the task.
  const deps = reaperDeps(9);
  const item = await ensureSandbox(deps, 'slack:CREC:ready');
  assert.equal(item.status, 'running');
  assert.ok(item.ip);
  const silent = addressOf(item, 9)!;
  const ticking = { ...deps, sleep: async () => void (clock.ms += 1000), answerTimeoutMs: 3000 };
  assert.equal(await waitUntilAnswering(ticking, item, silent), false, 'a server that never answers is given up on');
  const listening = addressOf(item, ecsStandIn.tasks.get(item.taskArn)!.port)!;
  assert.equal(await waitUntilAnswering(ticking, item, listening), true);
  assert.equal((await getSandbox(deps, 'slack:CREC:ready'))?.answered, true);
});

test('tasks whose server never answers are replaced a bounded number of times, then the start fails', async () => {
  const deps = reaperDeps();
  const thread = 'slack:CREC:never-answers';
  for (let attempt = 1; attempt < MAX_FAILED_STARTS; attempt++) {
    const item = await ensureSandbox(deps, thread);
    await markLost(deps, thread, item.taskArn);
  }
  const last = await ensureSandbox(deps, thread);
  assert.equal(last.failedStarts, MAX_FAILED_STARTS - 1);
  await markLost(deps, thread, last.taskArn);
  await assert.rejects(ensureSandbox(deps, thread), { name: 'SandboxStartFailed', message: /never answered/ });
});

test('a failed StopTask keeps the record, and the next run of the reaper stops the task', async () => {
  const deps = reaperDeps();
  const item = await startSandbox(deps, 'slack:CREC:stubborn');
  clock.ms += 10 * 60_000;
  const failing = {
    ...deps,
    ecs: new ECSClient({ endpoint: 'http://127.0.0.1:9', region: 'us-east-1', credentials: LOCAL_CREDENTIALS, maxAttempts: 1 }),
  };
  await assert.rejects(reapIdleSandboxes(failing));
  failing.ecs.destroy();
  assert.equal((await getSandbox(deps, 'slack:CREC:stubborn'))?.status, 'stopping', 'the record is kept for the retry');
  assert.ok((await reapIdleSandboxes(deps)).includes('slack:CREC:stubborn'));
  assert.equal(await getSandbox(deps, 'slack:CREC:stubborn'), undefined);
  assert.equal(ecsStandIn.tasks.get(item.taskArn)?.desiredStatus, 'STOPPED');
});

test("the public sandbox network: the stack's SANDBOX_ASSIGN_PUBLIC_IP makes RunTask give the task a public address; otherwise none", async () => {
  const base = reaperDeps();
  const stackEnv = {
    TABLE_NAME: table.tableName,
    SANDBOX_CLUSTER_ARN: ecsStandIn.clusterArn,
    SANDBOX_TASK_DEFINITION_FAMILY: base.config.taskDefinition,
    SANDBOX_SUBNET_IDS: 'subnet-public',
    SANDBOX_SECURITY_GROUP_IDS: 'sg-local',
  };
  for (const [variable, publicIp] of [
    [{ SANDBOX_ASSIGN_PUBLIC_IP: 'ENABLED' }, true],
    [{}, false],
  ] as const) {
    const config = sandboxConfigFromEnv(sandboxReaperEnv.parse({ ...stackEnv, ...variable }))!;
    const item = await startSandbox({ ...base, config }, `slack:CREC:public-${publicIp}`);
    assert.equal(ecsStandIn.tasks.get(item.taskArn)?.publicIp, publicIp);
    await ecs.send(new StopTaskCommand({ cluster: ecsStandIn.clusterArn, task: item.taskArn }));
  }
  assert.throws(() => sandboxReaperEnv.parse({ ...stackEnv, SANDBOX_ASSIGN_PUBLIC_IP: 'yes' }), /SANDBOX_ASSIGN_PUBLIC_IP/);
});

test('the sweep stops sandbox tasks that no record owns, once past the grace period', async () => {
  const deps = reaperDeps();
  clock.ms = Date.now();
  const owned = await startSandbox(deps, 'slack:CREC:owned');
  // A RunTask whose record was never written (the write failed after the task started).
  const orphan = await startSandbox(deps, 'slack:CREC:orphan');
  await table.db.send(new DeleteCommand({ TableName: table.tableName, Key: { pk: 'sandboxes', sk: 'slack:CREC:orphan' } }));
  assert.deepEqual(await sweepOrphanedTasks(deps, 60_000), [], 'young tasks may still get their record');
  clock.ms += 61_000;
  assert.deepEqual(await sweepOrphanedTasks(deps, 60_000), [orphan.taskArn]);
  assert.equal(ecsStandIn.tasks.get(orphan.taskArn)?.desiredStatus, 'STOPPED');
  assert.equal(ecsStandIn.tasks.get(owned.taskArn)?.desiredStatus, 'RUNNING');
});

test('sandbox slots: past the cap a start is refused and its task stopped; a replacement keeps its slot; reaping gives slots back', async () => {
  const deps = reaperDeps();
  clock.ms = Date.now();
  const cap = async () => 2;
  const slots = () => slotsTaken(deps, sandboxesKey);
  const first = await ensureSandbox(deps, 'slack:CCAPS:1', cap);
  await ensureSandbox(deps, 'slack:CCAPS:2', cap);
  assert.equal(await slots(), 2);
  const tasksBefore = new Set(ecsStandIn.tasks.keys());
  await assert.rejects(ensureSandbox(deps, 'slack:CCAPS:3', cap), {
    name: 'SandboxLimitReached',
    message: 'sandbox limit reached (2 running, limits.maxRunningSandboxes); try again later',
  });
  assert.equal(await getSandbox(deps, 'slack:CCAPS:3'), undefined);
  const refused = [...ecsStandIn.tasks.keys()].filter((arn) => !tasksBefore.has(arn));
  assert.equal(refused.length, 1);
  assert.equal(ecsStandIn.tasks.get(refused[0]!)?.desiredStatus, 'STOPPED', 'the task started for it is stopped');
  // A dead task is replaced on the slot it held.
  await markLost(deps, 'slack:CCAPS:1', first.taskArn);
  const replaced = await ensureSandbox(deps, 'slack:CCAPS:1', cap);
  assert.notEqual(replaced.taskArn, first.taskArn);
  assert.equal(await slots(), 2);
  clock.ms += 10 * 60_000;
  const reaped = await reapIdleSandboxes(deps);
  assert.ok(reaped.includes('slack:CCAPS:1') && reaped.includes('slack:CCAPS:2'));
  assert.deepEqual(await reapIdleSandboxes(deps), [], 'a second pass finds nothing to give back');
  assert.equal(await slots(), 0);
  await ensureSandbox(deps, 'slack:CCAPS:3', cap);
  assert.equal(await slots(), 1);
});

test("a slot whose release was lost is reclaimed when a new thread finds the limit reached, not only at that thread's next prompt", async () => {
  const actor = actorDeps(startExecution);
  const caps = { perChannel: 1, perDeployment: 100 };
  const inChannel = (n: number): Prompt => {
    const base = prompt();
    const threadId = `slack:CSLOT:${n}.000`;
    return { ...base, threadId, thread: { ...base.thread, id: threadId, channelId: 'CSLOT' } };
  };
  const lost = inChannel(1);
  assert.equal(await admitPrompt(actor, lost, { caps }), 'started');
  const runId = (await getActor(actor, lost.threadId))!.current!.runId;
  const next = inChannel(2);
  assert.equal(await admitPrompt(actor, next, { caps }), 'channel-full');
  // Still running: nothing is freed, even when old.
  assert.equal(await reclaimStaleSlots(control(actor), 'slack:CSLOT', clock.ms + LEASE_CHECK_AFTER_MS), 0);
  // Its execution ends and the release never arrives.
  holds.get(runId)!();
  await sfnStandIn.waitForExecution(executionArnFor(STATE_MACHINE_ARN, runId));
  assert.equal(await reclaimStaleSlots(control(actor), 'slack:CSLOT', clock.ms + 1000), 0, 'a young lease is not checked');
  assert.equal(await reclaimStaleSlots(control(actor), 'slack:CSLOT', clock.ms + LEASE_CHECK_AFTER_MS), 1);
  assert.equal((await getActor(actor, lost.threadId))?.status, 'idle');
  assert.equal(await slotsTaken(actor, channelRunsKey(lost.threadId)), 0);
  assert.equal(await admitPrompt(actor, next, { caps }), 'started');
  assert.deepEqual(
    (await slotHolders(actor, 'slack:CSLOT')).map((h) => h.threadId),
    [next.threadId],
  );
});
