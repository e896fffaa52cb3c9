// ECS (awsJson1.1, X-Amz-Target AmazonEC2ContainerServiceV20141113.<Operation>). Tasks are
// authorized with the cluster as context (ecs:cluster); RunTask on the task definition revision it
// runs, plus ecs:TagResource for tags given at launch and iam:PassRole for the roles the task
// receives. Listing a cluster's tasks is authorized against "*" (see listTasks).
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
import { onAnyResource } from './service-reference.ts';

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

/**
 * An ARN, "family:revision", or "family" alone: ECS then runs the family's latest ACTIVE revision,
 * and IAM authorizes that revision's ARN (a policy for every revision names `family:*`). A family
 * the stack does not define is taken as its revision 1 (ECS refuses to run it anyway).
 */
function taskDefinitionArn(taskDefinition: unknown, facts: StackFacts): string {
  const value = String(taskDefinition);
  if (value.startsWith('arn:')) return value;
  if (value.includes(':')) return localArn('ecs', `task-definition/${value}`);
  return facts.latestTaskDefinition?.(value) ?? localArn('ecs', `task-definition/${value}:1`);
}

/**
 * ListTasks names the container instance it lists, when it filters by one; otherwise it lists the
 * cluster, and IAM authorizes it against "*" (with ecs:cluster), although the Service Authorization
 * Reference lists only container-instance for it. AWS says so itself: "… is not authorized to
 * perform: ecs:ListTasks on resource: * because no identity-based policy allows the ecs:ListTasks
 * action", to a role granted it on the cluster's container instances.
 */
function listTasks(input: JsonObject, cluster: string): Authorization {
  const context = { 'ecs:cluster': cluster };
  const instance = typeof input.containerInstance === 'string' ? input.containerInstance : undefined;
  if (instance === undefined) return { action: 'ecs:ListTasks', resource: '*', context };
  const resource = instance.startsWith('arn:') ? instance : localArn('ecs', `container-instance/${clusterName(cluster)}/${instance}`);
  return { action: 'ecs:ListTasks', resource, context };
}

// A task being started has no id yet; IAM authorizes tagging it on its ARN once ECS has chosen one.
// Locally the mapping cannot know that id: this one stands for it.
const NEW_TASK_ID = 'new-task';

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
  const taskDefinition = taskDefinitionArn(input.taskDefinition, facts);
  const tags = tagContext(input.tags);
  const authorizations: Authorization[] = [
    { action: 'ecs:RunTask', resource: taskDefinition, context: { 'ecs:cluster': cluster, ...tags } },
  ];
  if (Object.keys(tags).length > 0) {
    authorizations.push({
      action: 'ecs:TagResource',
      resource: localArn('ecs', `task/${clusterName(cluster)}/${NEW_TASK_ID}`),
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
      return [listTasks(input, cluster)];
    case 'DescribeClusters':
      return strings(input.clusters ?? ['default']).map((name) => ({ action, resource: clusterArn(name) }));
    case 'TagResource':
    case 'UntagResource':
    case 'ListTagsForResource':
      return [{ action, resource: String(input.resourceArn) }];
    default: {
      // DescribeTaskDefinition, ListClusters…: what the reference authorizes against "*" only.
      const any = onAnyResource('ecs', operation);
      if (any) return [any];
      throw new UnknownOperationError('ecs', operation);
    }
  }
}
