// Local stand-in for Amazon ECS (Fargate RunTask). Each task runs as a local process: the sandbox
// command server, started with the environment the container would get, on an address of its own
// (see addresses.ts), isolated in bubblewrap as the task would be on Fargate (see isolation.ts). The stand-in serves the part of the ECS API that production code calls
// through @aws-sdk/client-ecs (AWS JSON 1.1 protocol: POST /, X-Amz-Target:
// AmazonEC2ContainerServiceV20141113.<Operation>), so the same code runs unchanged against
// AWS_ENDPOINT_URL_ECS=<endpoint>.
import { mkdir } from 'node:fs/promises';
import { serveAwsJson } from '../aws-protocol.ts';
import { listenLocally } from '../http-server.ts';
import { AddressPool, detectAddressing, type LocalEcsAddressing } from './addresses.ts';
import type { LocalIsolation } from './isolation.ts';
import { ecsOperations } from './api.ts';
import { createTaskDefinitions } from './task-definitions.ts';
import { releaseExitHooks, retainExitHooks } from './process-groups.ts';
import type { LocalEcsTask } from './task-record.ts';
import { createTasks, type TasksOptions } from './tasks.ts';

export type { LocalEcsAddressing } from './addresses.ts';
export type { LocalIsolation } from './isolation.ts';
export type { LocalEcsTask, LocalTaskStatus, LocalTaskStopCode } from './task-record.ts';

export interface LocalEcsOptions extends TasksOptions {
  /** Default arn:aws:ecs:local:000000000000:cluster/default. Requests may name it by ARN or name. */
  clusterArn?: string;
  /** The stand-in's own HTTP port on 127.0.0.1. Default: any free port. */
  port?: number;
  /** The port every task's server listens on (SANDBOX_PORT). Default 8080. */
  sandboxPort?: number;
  /** The task definition's container name; if set, overrides naming another container are rejected. */
  containerName?: string;
  /** The task definition families registered at start, each as its revision 1 (as a first deploy registers them). */
  taskDefinitions: readonly string[];
  /** Default: 'loopback-ips' if 127.0.0.2 can be bound, else 'ports'. */
  addressing?: LocalEcsAddressing;
}

export interface LocalEcs {
  endpoint: string;
  clusterArn: string;
  addressing: LocalEcsAddressing;
  /** How tasks run (bubblewrap, plain processes, or refused). */
  isolation: LocalIsolation;
  /** Every task started, by task ARN, stopped ones included. */
  tasks: ReadonlyMap<string, LocalEcsTask>;
  /** RegisterTaskDefinition (as a deploy does): the family's next revision, ACTIVE; returns its ARN. */
  registerTaskDefinition(family: string): string;
  /** DeregisterTaskDefinition (as a deploy does with the revision it replaced): INACTIVE, runs no new task. */
  deregisterTaskDefinition(taskDefinitionArn: string): void;
  /** Simulates the task dying: SIGKILLs its process tree; resolves once the task is STOPPED. */
  kill(taskArnOrId: string): Promise<LocalEcsTask>;
  /** Stops the API and every task (SIGTERM, then SIGKILL); resolves once all processes are gone. */
  close(): Promise<void>;
}

const PROTOCOL = {
  service: 'ecs',
  targetPrefix: 'AmazonEC2ContainerServiceV20141113.',
  contentType: 'application/x-amz-json-1.1',
  internalErrorType: 'ServerException',
};
const DEFAULT_CLUSTER_ARN = 'arn:aws:ecs:local:000000000000:cluster/default';

export async function startLocalEcs(options: LocalEcsOptions): Promise<LocalEcs> {
  const clusterArn = options.clusterArn ?? DEFAULT_CLUSTER_ARN;
  const clusterMatch = /^(arn:[^:]+:ecs:[^:]*:[^:]*):cluster\/([A-Za-z0-9_-]{1,255})$/.exec(clusterArn);
  if (!clusterMatch) throw new Error(`Not an ECS cluster ARN: ${clusterArn}`);
  const [, arnPrefix, clusterName] = clusterMatch as unknown as [string, string, string];
  const sandboxPort = options.sandboxPort ?? 8080;
  const addressing = options.addressing ?? (await detectAddressing());
  const tasks = createTasks(options, addressing, new AddressPool(addressing, sandboxPort));
  const taskDefinitions = createTaskDefinitions(arnPrefix, options.taskDefinitions);
  let closing = false;
  await mkdir(options.workspaceRoot, { recursive: true });

  const operations = ecsOperations({
    clusterArn,
    clusterName,
    arnPrefix,
    addressing,
    sandboxPort,
    containerName: options.containerName,
    taskDefinitions,
    tasks,
    isClosing: () => closing,
  });
  const server = await listenLocally((request, response) => void serveAwsJson(PROTOCOL, operations, request, response), {
    port: options.port,
  });
  retainExitHooks();

  let closed: Promise<void> | undefined;
  function close(): Promise<void> {
    closed ??= (async () => {
      closing = true;
      const serverClosed = server.close();
      await tasks.stopAll('The local ECS stand-in was closed');
      await serverClosed;
      releaseExitHooks();
    })();
    return closed;
  }

  const isolation = options.isolation ?? { mode: 'process' };
  return {
    endpoint: server.url,
    clusterArn,
    addressing,
    isolation,
    tasks: tasks.views,
    registerTaskDefinition: (family) => taskDefinitions.register(family).arn,
    deregisterTaskDefinition: (arn) => taskDefinitions.deregister(arn),
    kill: tasks.kill,
    close,
  };
}
