// One sandbox task per thread: started on demand (as early as a run begins), reused while alive,
// replaced when it died, stopped when idle. The sandbox item in DynamoDB records the task, its
// address, its per-task token and what of S3 its workspace holds.
//
// Only the sandbox-step function (inside the VPC, in the one security group the task admits) can
// reach a task, so this module, which runs in agent-step outside the VPC, never talks to the task:
// RUNNING with an address is ready here, and sandbox-step waits for the command server to answer
// (waitUntilAnswering) before the first call.
import {
  DescribeTasksCommand,
  ListTasksCommand,
  RunTaskCommand,
  StopTaskCommand,
  type ECSClient,
  type RunTaskCommandInput,
  type Task,
} from '@aws-sdk/client-ecs';
import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { randomBytes } from 'node:crypto';
import { queryPartition } from '../aws/dynamodb.ts';
import { isConditionalCheckFailed, transactionCancellationReasons } from '../aws/errors.ts';
import { giveSlot, SLOT_ATTRIBUTE, takeSlot } from '../run/capacity.ts';
import { retryOnConflict } from '../aws/retry.ts';
import { SANDBOXES, sandboxesKey, sandboxKey } from '../table.ts';
import { health, type SandboxAddress } from './client.ts';
import type { SyncState } from './workspace.ts';
import type { MetricsSink } from '../observability/metrics.ts';
import type { SandboxSize } from '../model/pricing.ts';

export interface SandboxConfig {
  cluster: string;
  /** RunTask's taskDefinition: in the stack the family, which ECS runs in its latest ACTIVE revision. */
  taskDefinition: string;
  containerName: string;
  subnets: string[];
  securityGroups: string[];
  port: number;
  idleMinutes: number;
  /** The task's size: what its time costs (absent: not priced). */
  size?: SandboxSize;
  /** Give each task a public address (the public sandbox network, which has no NAT gateway). */
  assignPublicIp?: boolean;
}

export interface SandboxItem {
  threadId: string;
  taskArn: string;
  token: string;
  status: 'starting' | 'running' | 'lost' | 'stopping';
  ip?: string;
  /** The command server has answered once (set by sandbox-step). */
  answered?: boolean;
  /** Tasks started for this thread in a row whose server never answered. */
  failedStarts?: number;
  startedAt: number;
  lastUsedAt: number;
  /** What the workspace held of S3, as recorded before it moved to S3 (see sync-state.ts). */
  synced?: SyncState;
  /** The item holds one of the deployment's sandbox slots (see capacity.ts); a replacement task keeps it. */
  holdsSlot?: boolean;
}

/** Sandboxes that may exist at once (settings.json `limits.maxRunningSandboxes`), read only when one would start. */
export type SandboxCap = () => Promise<number>;

/** A sandbox would start past `limits.maxRunningSandboxes`: the tool call gets this message. */
export class SandboxLimitReached extends Error {
  constructor(readonly max: number) {
    super(`sandbox limit reached (${max} running, limits.maxRunningSandboxes); try again later`);
    this.name = 'SandboxLimitReached';
  }
}

export interface SandboxStoreDeps {
  db: DynamoDBDocumentClient;
  tableName: string;
  now?: () => number;
}

export interface LifecycleDeps extends SandboxStoreDeps {
  ecs: ECSClient;
  config: SandboxConfig;
  sleep?: (ms: number) => Promise<void>;
  /** How long to wait for a task to be RUNNING and answering. */
  startTimeoutMs?: number;
}

export async function getSandbox(deps: SandboxStoreDeps, threadId: string): Promise<SandboxItem | undefined> {
  const out = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: sandboxKey(threadId), ConsistentRead: true }));
  return out.Item as SandboxItem | undefined;
}

export function addressOf(item: SandboxItem, port: number): SandboxAddress | undefined {
  return item.ip ? { baseUrl: `http://${item.ip}:${port}`, token: item.token } : undefined;
}

/** The task was just used (the idle reaper counts from here); drops a sync record of old, now kept in S3. */
export async function touchSandbox(deps: SandboxStoreDeps, threadId: string, taskArn: string): Promise<void> {
  await deps.db.send(
    new UpdateCommand({
      TableName: deps.tableName,
      Key: sandboxKey(threadId),
      UpdateExpression: 'SET lastUsedAt = :now REMOVE synced',
      ConditionExpression: 'taskArn = :task',
      ExpressionAttributeValues: { ':now': (deps.now ?? Date.now)(), ':task': taskArn },
    }),
  );
}

export async function markLost(deps: SandboxStoreDeps, threadId: string, taskArn: string): Promise<void> {
  await deps.db
    .send(
      new UpdateCommand({
        TableName: deps.tableName,
        Key: sandboxKey(threadId),
        UpdateExpression: 'SET #status = :lost',
        ConditionExpression: 'taskArn = :task',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':lost': 'lost', ':task': taskArn },
      }),
    )
    .catch((error: unknown) => {
      if (!isConditionalCheckFailed(error)) throw error;
    });
}

function privateIp(task: Task | undefined): string | undefined {
  for (const attachment of task?.attachments ?? []) {
    const ip = attachment.details?.find((d) => d.name === 'privateIPv4Address')?.value;
    if (ip) return ip;
  }
  return undefined;
}

async function describe(deps: LifecycleDeps, taskArn: string): Promise<Task | undefined> {
  const out = await deps.ecs.send(new DescribeTasksCommand({ cluster: deps.config.cluster, tasks: [taskArn] }));
  return out.tasks?.[0];
}

/** Every sandbox task carries this startedBy; the orphan sweep looks at these tasks only. */
export const STARTED_BY = 'threadwork-sandbox';

/** Replacing tasks whose server never answered stops after this many in a row. */
export const MAX_FAILED_STARTS = 3;

/** RunTask of one sandbox task with its bearer token: as the agent starts them, and `npm run doctor` tries one. */
export function sandboxRunTask(config: SandboxConfig, token: string): RunTaskCommandInput {
  return {
    cluster: config.cluster,
    taskDefinition: config.taskDefinition,
    launchType: 'FARGATE',
    count: 1,
    // The orphan sweep stops a task with this startedBy that no thread records.
    startedBy: STARTED_BY,
    networkConfiguration: {
      awsvpcConfiguration: {
        subnets: config.subnets,
        securityGroups: config.securityGroups,
        assignPublicIp: config.assignPublicIp ? 'ENABLED' : 'DISABLED',
      },
    },
    // The token reaches only the command server, which removes it from its environment.
    overrides: { containerOverrides: [{ name: config.containerName, environment: [{ name: 'SANDBOX_TOKEN', value: token }] }] },
  };
}

/**
 * Starts a task for the thread and records it; does not wait for it. A task replacing `previous`
 * keeps its slot; a new one takes a slot, and past the cap it is stopped again and SandboxLimitReached
 * thrown. (RunTask comes first: a crash between it and the record leaves an orphan task, which the
 * sweep stops, never a slot that nothing gives back.)
 */
export async function startSandbox(
  deps: LifecycleDeps,
  threadId: string,
  failedStarts = 0,
  cap?: SandboxCap,
  previous?: SandboxItem,
): Promise<SandboxItem> {
  const token = randomBytes(32).toString('hex');
  const out = await deps.ecs.send(
    new RunTaskCommand({ ...sandboxRunTask(deps.config, token), tags: [{ key: 'threadwork:thread', value: threadId.slice(0, 256) }] }),
  );
  const task = out.tasks?.[0];
  if (!task?.taskArn) {
    const reason = out.failures?.map((f) => `${f.reason ?? 'unknown'}${f.detail ? ` (${f.detail})` : ''}`).join('; ');
    throw Object.assign(new Error(`Could not start a sandbox: ${reason || 'no task returned'}`), { name: 'SandboxStartFailed' });
  }
  const now = (deps.now ?? Date.now)();
  const item: SandboxItem = {
    threadId,
    taskArn: task.taskArn,
    token,
    status: 'starting',
    startedAt: now,
    lastUsedAt: now,
    ...(failedStarts ? { failedStarts } : {}),
  };
  try {
    return await recordSandbox(deps, item, cap, previous);
  } catch (error) {
    await stopTask(deps, task.taskArn, error instanceof SandboxLimitReached ? 'sandbox limit reached' : 'not recorded');
    throw error;
  }
}

async function recordSandbox(deps: LifecycleDeps, item: SandboxItem, cap?: SandboxCap, previous?: SandboxItem): Promise<SandboxItem> {
  const Item = { ...sandboxKey(item.threadId), ...item };
  if (!cap) {
    await deps.db.send(new PutCommand({ TableName: deps.tableName, Item }));
    return item;
  }
  if (previous?.holdsSlot) {
    try {
      const kept = { ...Item, [SLOT_ATTRIBUTE]: true };
      await deps.db.send(
        new PutCommand({
          TableName: deps.tableName,
          Item: kept,
          ConditionExpression: `taskArn = :previous AND ${SLOT_ATTRIBUTE} = :true`,
          ExpressionAttributeValues: { ':previous': previous.taskArn, ':true': true },
        }),
      );
      return { ...item, holdsSlot: true };
    } catch (error) {
      // Reaped meanwhile (its slot given back): take a slot like a new sandbox.
      if (!isConditionalCheckFailed(error)) throw error;
    }
  }
  const max = await cap();
  // Another thread's sandbox took or gave back a slot at the same moment: try again.
  return retryOnConflict(`Could not record the sandbox of ${item.threadId}`, async () => {
    try {
      await deps.db.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              // Over an item without a slot (recorded before the cap existed), never over one that holds one.
              Put: {
                TableName: deps.tableName,
                Item: { ...Item, [SLOT_ATTRIBUTE]: true },
                ConditionExpression: `attribute_not_exists(${SLOT_ATTRIBUTE})`,
              },
            },
            takeSlot(deps.tableName, sandboxesKey, max),
          ],
        }),
      );
      return { ...item, holdsSlot: true };
    } catch (error) {
      if (transactionCancellationReasons(error)?.[1] === 'ConditionalCheckFailed') throw new SandboxLimitReached(max);
      throw error;
    }
  });
}

/**
 * Starts the thread's sandbox unless one is already starting or running. Never waits. `known`: its
 * item as the caller read it a moment ago (consistently), so it is not read again.
 */
export async function warmSandbox(
  deps: LifecycleDeps,
  threadId: string,
  cap?: SandboxCap,
  known?: { item: SandboxItem | undefined },
): Promise<void> {
  const item = known ? known.item : await getSandbox(deps, threadId);
  if (item && (item.status === 'starting' || item.status === 'running')) return;
  await startSandbox(deps, threadId, 0, cap, item);
}

/** A lost task whose server never answered counts against the thread's start attempts. */
function failedStartsAfter(item: SandboxItem): number {
  if (item.status !== 'lost' || item.answered) return 0;
  const failed = (item.failedStarts ?? 0) + 1;
  if (failed >= MAX_FAILED_STARTS) {
    throw Object.assign(new Error(`The sandbox started ${failed} times but its command server never answered`), {
      name: 'SandboxStartFailed',
    });
  }
  return failed;
}

/**
 * The thread's sandbox with a running task and its address: the recorded task if it is alive,
 * otherwise a new one (a dead task is replaced transparently; its files come back from S3).
 */
export async function ensureSandbox(deps: LifecycleDeps, threadId: string, cap?: SandboxCap): Promise<SandboxItem> {
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const deadline = (deps.now ?? Date.now)() + (deps.startTimeoutMs ?? 180_000);
  let item = await getSandbox(deps, threadId);
  if (!item || item.status === 'lost' || item.status === 'stopping') {
    const failedStarts = item ? failedStartsAfter(item) : 0;
    if (item) await stopTask(deps, item.taskArn, 'replaced');
    item = await startSandbox(deps, threadId, failedStarts, cap, item);
  }
  for (let replaced = 0; ;) {
    const task = await describe(deps, item.taskArn);
    const ip = privateIp(task);
    if (task?.lastStatus === 'RUNNING' && ip) {
      if (item.status !== 'running' || item.ip !== ip) {
        item = { ...item, status: 'running', ip };
        await deps.db.send(
          new UpdateCommand({
            TableName: deps.tableName,
            Key: sandboxKey(threadId),
            UpdateExpression: 'SET #status = :running, ip = :ip, lastUsedAt = :now',
            ConditionExpression: 'taskArn = :task',
            ExpressionAttributeNames: { '#status': 'status' },
            ExpressionAttributeValues: { ':running': 'running', ':ip': ip, ':now': (deps.now ?? Date.now)(), ':task': item.taskArn },
          }),
        );
      }
      return item;
    }
    if (!task || task.lastStatus === 'STOPPED' || task.desiredStatus === 'STOPPED') {
      if (++replaced > 2)
        throw Object.assign(new Error(`The sandbox keeps stopping: ${task?.stoppedReason ?? 'task missing'}`), {
          name: 'SandboxStartFailed',
        });
      item = await startSandbox(deps, threadId, item.failedStarts, cap, item);
      continue;
    }
    if ((deps.now ?? Date.now)() > deadline) {
      throw Object.assign(new Error('The sandbox did not start in time'), { name: 'SandboxStartFailed' });
    }
    await sleep(1000);
  }
}

/**
 * In sandbox-step, before the first call to a new task: wait until its command server answers
 * (a container is RUNNING before its server listens). False when it never does in time.
 */
export async function waitUntilAnswering(
  deps: SandboxStoreDeps & { sleep?: (ms: number) => Promise<void>; answerTimeoutMs?: number },
  item: SandboxItem,
  address: SandboxAddress,
): Promise<boolean> {
  if (item.answered) return true;
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const deadline = (deps.now ?? Date.now)() + (deps.answerTimeoutMs ?? 60_000);
  while (!(await health(address))) {
    if ((deps.now ?? Date.now)() > deadline) return false;
    await sleep(250);
  }
  await deps.db
    .send(
      new UpdateCommand({
        TableName: deps.tableName,
        Key: sandboxKey(item.threadId),
        UpdateExpression: 'SET answered = :true REMOVE failedStarts',
        ConditionExpression: 'taskArn = :task',
        ExpressionAttributeValues: { ':true': true, ':task': item.taskArn },
      }),
    )
    .catch((error: unknown) => {
      if (!isConditionalCheckFailed(error)) throw error;
    });
  return true;
}

/** A replaced task is stopped on a best-effort basis: one that survives is found by the orphan sweep. */
async function stopTask(deps: { ecs: ECSClient; config: Pick<SandboxConfig, 'cluster'> }, taskArn: string, reason: string): Promise<void> {
  await deps.ecs
    .send(new StopTaskCommand({ cluster: deps.config.cluster, task: taskArn, reason: `threadwork: ${reason}` }))
    .catch(() => undefined);
}

type ReaperDeps = SandboxStoreDeps & {
  ecs: ECSClient;
  config: Pick<SandboxConfig, 'cluster' | 'idleMinutes'>;
  /** Each sweep: SandboxesRunning, OldestSandboxAge; each stop: SandboxSeconds. */
  metrics?: MetricsSink;
};

async function allSandboxes(deps: SandboxStoreDeps): Promise<SandboxItem[]> {
  return (await queryPartition(deps, SANDBOXES)) as unknown as SandboxItem[];
}

/** Claims an idle sandbox for stopping, unless a tool call used it since it was read. */
async function claimForStop(deps: SandboxStoreDeps, item: SandboxItem): Promise<boolean> {
  try {
    await deps.db.send(
      new UpdateCommand({
        TableName: deps.tableName,
        Key: sandboxKey(item.threadId),
        UpdateExpression: 'SET #status = :stopping',
        ConditionExpression: 'lastUsedAt = :seen AND taskArn = :task',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':stopping': 'stopping', ':seen': item.lastUsedAt, ':task': item.taskArn },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return false;
    throw error;
  }
}

/**
 * Stops sandboxes idle for longer than the idle timeout. The record goes only after StopTask
 * succeeded: a failed stop leaves it 'stopping', and the next run of the reaper tries again.
 * Returns the threads whose sandbox stopped.
 */
export async function reapIdleSandboxes(deps: ReaperDeps): Promise<string[]> {
  const now = (deps.now ?? Date.now)();
  const cutoff = now - deps.config.idleMinutes * 60_000;
  const stopped: string[] = [];
  const failures: unknown[] = [];
  const running: SandboxItem[] = [];
  for (const item of await allSandboxes(deps)) {
    if (item.status !== 'stopping' && (item.lastUsedAt > cutoff || !(await claimForStop(deps, item)))) {
      running.push(item);
      continue;
    }
    // One task that cannot be stopped now must not keep the others running.
    await stopAndForget(deps, item).then(
      () => {
        stopped.push(item.threadId);
        deps.metrics?.put('SandboxSeconds', Math.max(0, now - item.startedAt) / 1000, {});
      },
      (error: unknown) => {
        failures.push(error);
        running.push(item);
      },
    );
  }
  deps.metrics?.put('SandboxesRunning', running.length, {});
  deps.metrics?.put('OldestSandboxAge', Math.max(0, ...running.map((item) => now - item.startedAt)) / 1000, {});
  if (failures.length) throw new AggregateError(failures, `${failures.length} idle sandbox(es) could not be stopped; the next run retries`);
  return stopped;
}

async function stopAndForget(deps: ReaperDeps, item: SandboxItem): Promise<void> {
  await deps.ecs.send(new StopTaskCommand({ cluster: deps.config.cluster, task: item.taskArn, reason: 'threadwork: idle' }));
  const forget = {
    TableName: deps.tableName,
    Key: sandboxKey(item.threadId),
    ConditionExpression: 'taskArn = :task AND #status = :stopping',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: { ':task': item.taskArn, ':stopping': 'stopping' },
  };
  try {
    // The record and its slot go together: a retry after the delete finds no record and gives nothing back.
    if (item.holdsSlot) {
      await deps.db.send(new TransactWriteCommand({ TransactItems: [{ Delete: forget }, giveSlot(deps.tableName, sandboxesKey)] }));
    } else {
      await deps.db.send(new DeleteCommand(forget));
    }
  } catch (error) {
    // Replaced meanwhile by a new task for the thread: that record stays.
    if (!isConditionalCheckFailed(error) && transactionCancellationReasons(error)?.[0] !== 'ConditionalCheckFailed') throw error;
  }
}

/** How long a task may run without a record before the sweep takes it for an orphan. */
export const ORPHAN_GRACE_MS = 10 * 60_000;

/**
 * Stops sandbox tasks that no record owns (a RunTask whose record write failed, a replaced task
 * whose stop failed): they would otherwise run, and bill, until someone noticed. Tasks younger than
 * the grace period are left alone: their record may be on its way.
 */
export async function sweepOrphanedTasks(deps: ReaperDeps, graceMs = ORPHAN_GRACE_MS): Promise<string[]> {
  const owned = new Set((await allSandboxes(deps)).map((item) => item.taskArn));
  const running: string[] = [];
  let nextToken: string | undefined;
  do {
    // startedBy must be ListTasks's only filter (ECS refuses it with any other); RUNNING is its default.
    const page = await deps.ecs.send(new ListTasksCommand({ cluster: deps.config.cluster, startedBy: STARTED_BY, nextToken }));
    running.push(...(page.taskArns ?? []).filter((arn) => !owned.has(arn)));
    nextToken = page.nextToken;
  } while (nextToken);
  const cutoff = (deps.now ?? Date.now)() - graceMs;
  const orphans: string[] = [];
  for (let i = 0; i < running.length; i += 100) {
    const described = await deps.ecs.send(new DescribeTasksCommand({ cluster: deps.config.cluster, tasks: running.slice(i, i + 100) }));
    for (const task of described.tasks ?? []) {
      if (!task.taskArn || (task.createdAt?.getTime() ?? 0) > cutoff) continue;
      await deps.ecs.send(new StopTaskCommand({ cluster: deps.config.cluster, task: task.taskArn, reason: 'threadwork: orphaned' }));
      orphans.push(task.taskArn);
    }
  }
  return orphans;
}
