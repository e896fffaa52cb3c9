// Custom resource handler (Provider framework): when the stack is deleted, stops every task in the
// sandbox cluster and waits until ECS reports them STOPPED. CloudFormation cannot delete a cluster
// while tasks run in it, nor subnets and security groups whose network interfaces tasks still hold.
// Create and Update do nothing but name the cluster.
import { DescribeTasksCommand, ECSClient, ListTasksCommand, StopTaskCommand } from '@aws-sdk/client-ecs';
import type { CdkCustomResourceEvent, CdkCustomResourceResponse, Context } from 'aws-lambda';

export interface StopSandboxTasksProperties {
  readonly clusterArn: string;
}

/** How often the cluster is checked again while tasks are stopping. */
export const POLL_INTERVAL_MS = 5_000;
/** Time kept back from the function's timeout to report a failure instead of timing out. */
const REPORT_MARGIN_MS = 30_000;
const STOP_REASON = 'The threadwork stack is being deleted';

type Send = Pick<ECSClient, 'send'>['send'];

export interface StopOptions {
  /** Give up (and fail the Delete) after this time (epoch ms). */
  readonly deadline: number;
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
}

const ecs = new ECSClient({});

export async function handler(
  event: CdkCustomResourceEvent<StopSandboxTasksProperties>,
  context: Pick<Context, 'getRemainingTimeInMillis'>,
): Promise<CdkCustomResourceResponse> {
  const { clusterArn } = event.ResourceProperties;
  if (event.RequestType === 'Delete') {
    await stopAllTasks(ecs, clusterArn, { deadline: Date.now() + context.getRemainingTimeInMillis() - REPORT_MARGIN_MS });
  }
  return { PhysicalResourceId: clusterArn };
}

/**
 * Stops the cluster's running tasks, again on every round (one may have started meanwhile), until none
 * runs and every stopping one has reached STOPPED. A cluster that no longer exists has nothing to stop.
 */
export async function stopAllTasks(client: Pick<ECSClient, 'send'>, clusterArn: string, options: StopOptions): Promise<void> {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const send = client.send.bind(client) as Send;
  try {
    for (;;) {
      const running = await listTasks(send, clusterArn, 'RUNNING');
      for (const task of running) {
        await send(new StopTaskCommand({ cluster: clusterArn, task, reason: STOP_REASON }));
      }
      const stopping = await notYetStopped(send, clusterArn, await listTasks(send, clusterArn, 'STOPPED'));
      const waitingFor = [...running, ...stopping];
      if (waitingFor.length === 0) return;
      if (now() >= options.deadline) {
        throw new Error(`${waitingFor.length} sandbox task(s) in ${clusterArn} did not stop in time: ${waitingFor.join(', ')}`);
      }
      console.log(JSON.stringify({ msg: 'waiting for sandbox tasks to stop', clusterArn, tasks: waitingFor }));
      await sleep(POLL_INTERVAL_MS);
    }
  } catch (error) {
    if ((error as Error).name === 'ClusterNotFoundException') return;
    throw error;
  }
}

/** Task ARNs whose desired status is `desiredStatus` (RUNNING includes tasks still starting). */
async function listTasks(send: Send, cluster: string, desiredStatus: 'RUNNING' | 'STOPPED'): Promise<string[]> {
  const arns: string[] = [];
  let nextToken: string | undefined;
  do {
    const page = await send(new ListTasksCommand({ cluster, desiredStatus, nextToken }));
    arns.push(...(page.taskArns ?? []));
    nextToken = page.nextToken;
  } while (nextToken);
  return arns;
}

/** Of the tasks told to stop, those ECS has not yet reported STOPPED (DescribeTasks takes 100 at a time). */
async function notYetStopped(send: Send, cluster: string, taskArns: string[]): Promise<string[]> {
  const stopping: string[] = [];
  for (let i = 0; i < taskArns.length; i += 100) {
    const { tasks } = await send(new DescribeTasksCommand({ cluster, tasks: taskArns.slice(i, i + 100) }));
    for (const task of tasks ?? []) if (task.lastStatus !== 'STOPPED' && task.taskArn) stopping.push(task.taskArn);
  }
  return stopping;
}
