// A task as the ECS API returns it (RunTask, DescribeTasks, StopTask): the fields the product and
// the tests read, timestamps in epoch seconds.
import { epochSeconds, withoutUndefined } from '../aws-protocol.ts';
import type { LocalEcsAddressing } from './addresses.ts';
import type { TaskRecord } from './task-record.ts';

export interface WireContext {
  clusterArn: string;
  addressing: LocalEcsAddressing;
  sandboxPort: number;
}

function attachmentStatus(record: TaskRecord): string {
  switch (record.view.status) {
    case 'PROVISIONING':
      return 'PRECREATED';
    case 'DEPROVISIONING':
      return 'DETACHED';
    case 'STOPPED':
      return 'DELETED';
    default:
      return 'ATTACHED';
  }
}

function containerStatus(record: TaskRecord): string {
  if (record.exited || record.finished) return 'STOPPED';
  return record.times.startedAt !== undefined ? 'RUNNING' : 'PENDING';
}

function wireContainer(record: TaskRecord, context: WireContext): Record<string, unknown> {
  const { view } = record;
  const networkBindings =
    context.addressing === 'ports' ? [{ bindIP: view.ip, containerPort: context.sandboxPort, hostPort: view.port, protocol: 'tcp' }] : [];
  return withoutUndefined({
    taskArn: view.arn,
    name: record.containerName,
    lastStatus: containerStatus(record),
    exitCode: view.exitCode,
    networkBindings,
    networkInterfaces: [{ privateIpv4Address: view.ip }],
  });
}

export function wireTask(record: TaskRecord, context: WireContext, includeTags: boolean): Record<string, unknown> {
  const { view, times } = record;
  const seconds = (ms: number | undefined) => (ms === undefined ? undefined : epochSeconds(new Date(ms)));
  return withoutUndefined({
    taskArn: view.arn,
    clusterArn: context.clusterArn,
    taskDefinitionArn: record.taskDefinitionArn,
    startedBy: view.startedBy,
    launchType: 'FARGATE',
    lastStatus: view.status,
    desiredStatus: view.desiredStatus,
    connectivity: times.startedAt === undefined ? undefined : 'CONNECTED',
    createdAt: seconds(times.createdAt),
    startedAt: seconds(times.startedAt),
    stoppedAt: seconds(times.stoppedAt),
    stopCode: view.stopCode,
    stoppedReason: view.stoppedReason,
    attachments: [
      {
        type: 'ElasticNetworkInterface',
        status: attachmentStatus(record),
        details: [{ name: 'privateIPv4Address', value: view.ip }],
      },
    ],
    containers: [wireContainer(record, context)],
    overrides: record.overrides,
    tags: includeTags ? view.tags.map((tag) => ({ ...tag })) : undefined,
  });
}
