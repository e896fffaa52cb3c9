// ECS (awsJson1.1, X-Amz-Target AmazonEC2ContainerServiceV20141113.<Operation>). Tasks are
// authorized with the cluster as context (ecs:cluster); RunTask on the task definition, plus
// ecs:TagResource for tags given at launch and iam:PassRole for the roles the task receives.
import { localArn } from '../resources.ts';
import {
  type Authorization,
  type AwsHttpRequest,
  type JsonObject,
  type StackFacts,
  UnknownOperationError,
  jsonBody,
  jsonTarget,
  strings,
  unique,
} from './request-types.ts';

function clusterArn(cluster: unknown): string {
  const name = typeof cluster === 'string' && cluster !== '' ? cluster : 'default';
  return name.startsWith('arn:') ? name : localArn('ecs', `cluster/${name}`);
}

function clusterName(arn: string): string {
  return arn.slice(arn.indexOf(':cluster/') + ':cluster/'.length);
}

// A task is named by ARN or by id (within the request's cluster).
function taskArn(task: string, cluster: string): string {
  return task.startsWith('arn:') ? task : localArn('ecs', `task/${clusterName(cluster)}/${task}`);
}

// "family", "family:revision" or an ARN. Locally a family has one revision, 1: the latest.
function taskDefinitionArn(taskDefinition: unknown): string {
  const value = String(taskDefinition);
  if (value.startsWith('arn:')) return value;
  return localArn('ecs', `task-definition/${value.includes(':') ? value : `${value}:1`}`);
}

function tagContext(tags: unknown): Record<string, string | string[]> {
  const list = (Array.isArray(tags) ? tags : []) as { key?: string; value?: string }[];
  const context: Record<string, string | string[]> = {};
  if (list.length === 0) return context;
  context['aws:TagKeys'] = list.map((tag) => String(tag.key));
  for (const tag of list) context[`aws:RequestTag/${String(tag.key)}`] = String(tag.value ?? '');
  return context;
}

function runTask(input: JsonObject, facts: StackFacts): Authorization[] {
  const cluster = clusterArn(input.cluster);
  const taskDefinition = taskDefinitionArn(input.taskDefinition);
  const tags = tagContext(input.tags);
  const authorizations: Authorization[] = [
    { action: 'ecs:RunTask', resource: taskDefinition, context: { 'ecs:cluster': cluster, ...tags } },
  ];
  if (Object.keys(tags).length > 0) {
    // The task's ARN is not known before it exists: tagging at launch is authorized on the cluster's tasks.
    authorizations.push({
      action: 'ecs:TagResource',
      resource: localArn('ecs', `task/${clusterName(cluster)}/*`),
      context: { 'ecs:CreateAction': 'RunTask', ...tags },
    });
  }
  // ECS passes the task definition's roles (or the overrides') to the task: iam:PassRole on each.
  const overrides = (input.overrides ?? {}) as JsonObject;
  const roles = [overrides.taskRoleArn, overrides.executionRoleArn].filter((role): role is string => typeof role === 'string');
  const passed = roles.length > 0 ? roles : (facts.taskDefinitionRoles?.(taskDefinition) ?? []);
  for (const role of unique(passed)) {
    authorizations.push({ action: 'iam:PassRole', resource: role, context: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' } });
  }
  return authorizations;
}

export function ecsAuthorizations(request: AwsHttpRequest, facts: StackFacts): Authorization[] {
  const operation = jsonTarget(request);
  const input = jsonBody(request);
  const action = `ecs:${operation}`;
  const cluster = clusterArn(input.cluster);
  switch (operation) {
    case 'RunTask':
      return runTask(input, facts);
    case 'StopTask':
      return [{ action, resource: taskArn(String(input.task), cluster), context: { 'ecs:cluster': cluster } }];
    case 'DescribeTasks':
      return strings(input.tasks).map((task) => ({ action, resource: taskArn(task, cluster), context: { 'ecs:cluster': cluster } }));
    case 'ListTasks':
      // Listing is authorized on the cluster's container instances, whichever they are.
      return [{ action, resource: localArn('ecs', `container-instance/${clusterName(cluster)}/*`), context: { 'ecs:cluster': cluster } }];
    case 'DescribeClusters':
      return strings(input.clusters ?? ['default']).map((name) => ({ action, resource: clusterArn(name) }));
    case 'DescribeTaskDefinition':
      return [{ action, resource: '*' }];
    case 'TagResource':
    case 'UntagResource':
    case 'ListTagsForResource':
      return [{ action, resource: String(input.resourceArn) }];
    default:
      throw new UnknownOperationError('ecs', operation);
  }
}
