// The ECS API operations the product calls (RunTask, DescribeTasks, StopTask) and ListTasks, on
// the local tasks. The AWS JSON 1.1 protocol around them is serveAwsJson's.
import { ApiError, offsetPage, withoutUndefined, type AwsJsonOperation } from '../aws-protocol.ts';
import { AddressExhausted } from './addresses.ts';
import { IsolationUnavailable } from './isolation.ts';
import { readRunTaskInput } from './run-task-input.ts';
import type { TaskDefinitions } from './task-definitions.ts';
import type { Tasks } from './tasks.ts';
import { wireTask, type WireContext } from './wire.ts';

export interface EcsApiContext extends WireContext {
  clusterName: string;
  /** arn:<partition>:ecs:<region>:<account> */
  arnPrefix: string;
  containerName: string | undefined;
  taskDefinitions: TaskDefinitions;
  tasks: Tasks;
  isClosing(): boolean;
}

const invalid = (message: string) => new ApiError('InvalidParameterException', message);

// ListTasks's filters: ECS accepts startedBy only as the one filter of a request.
const LIST_TASKS_FILTERS = ['containerInstance', 'family', 'serviceName', 'desiredStatus', 'launchType'] as const;

export function ecsOperations(context: EcsApiContext): Record<string, AwsJsonOperation> {
  const { tasks } = context;
  const checkCluster = (value: unknown) => {
    const cluster = value === undefined || value === null ? 'default' : String(value);
    if (cluster !== context.clusterArn && cluster !== context.clusterName)
      throw new ApiError('ClusterNotFoundException', 'Cluster not found.');
  };
  const wire = (record: Parameters<typeof wireTask>[0], includeTags: boolean) => wireTask(record, context, includeTags);
  const idempotent = new Map<string, unknown>();

  async function runTask(input: Record<string, unknown>): Promise<unknown> {
    const clientToken = typeof input.clientToken === 'string' ? input.clientToken : undefined;
    if (clientToken !== undefined && idempotent.has(clientToken)) return idempotent.get(clientToken);
    checkCluster(input.cluster);
    const { spec, count } = readRunTaskInput(input, context);
    const taskArnPrefix = `${context.arnPrefix}:task/${context.clusterName}/`;
    const started: Record<string, unknown>[] = [];
    const failures: Record<string, unknown>[] = [];
    for (let index = 0; index < count; index++) {
      try {
        started.push(wire(await tasks.create(spec, taskArnPrefix, context.isClosing), true));
      } catch (error) {
        if (error instanceof AddressExhausted)
          failures.push({ arn: spec.taskDefinition.arn, reason: 'RESOURCE:ENI', detail: error.message });
        // Not an ECS reason: there is no such failure on AWS, only this machine's.
        else if (error instanceof IsolationUnavailable)
          failures.push({ arn: spec.taskDefinition.arn, reason: 'LOCAL_SANDBOX', detail: error.message });
        else throw error;
      }
    }
    const response = { tasks: started, failures };
    if (clientToken !== undefined) idempotent.set(clientToken, response);
    return response;
  }

  return {
    RunTask: runTask,
    DescribeTasks(input) {
      checkCluster(input.cluster);
      const references = Array.isArray(input.tasks) ? input.tasks.map(String) : [];
      if (references.length === 0) throw invalid('Tasks cannot be empty.');
      if (references.length > 100) throw invalid('Tasks cannot have more than 100 elements.');
      const includeTags = Array.isArray(input.include) && input.include.includes('TAGS');
      const found: Record<string, unknown>[] = [];
      const failures: Record<string, unknown>[] = [];
      for (const reference of references) {
        const record = tasks.find(reference);
        if (record) found.push(wire(record, includeTags));
        else failures.push({ arn: reference, reason: 'MISSING' });
      }
      return { tasks: found, failures };
    },
    StopTask(input) {
      checkCluster(input.cluster);
      const record = typeof input.task === 'string' ? tasks.find(input.task) : undefined;
      if (!record) throw invalid('The referenced task was not found.');
      const reason = typeof input.reason === 'string' && input.reason !== '' ? input.reason : 'Task stopped by user';
      tasks.stop(record, 'UserInitiated', reason);
      return { task: wire(record, false) };
    },
    ListTasks(input) {
      checkCluster(input.cluster);
      const others = LIST_TASKS_FILTERS.filter((filter) => input[filter] !== undefined);
      if (input.startedBy !== undefined && others.length > 0) {
        throw invalid(`startedBy must be the only filter of ListTasks; this request also filters by ${others.join(', ')}.`);
      }
      const desiredStatus = input.desiredStatus ?? 'RUNNING';
      const maxResults = input.maxResults === undefined ? 100 : Number(input.maxResults);
      if (!Number.isInteger(maxResults) || maxResults < 1 || maxResults > 100) throw invalid('maxResults must be between 1 and 100.');
      const matching = [...tasks.records.values()].filter(
        (task) =>
          task.view.desiredStatus === desiredStatus &&
          (input.startedBy === undefined || task.view.startedBy === input.startedBy) &&
          (input.family === undefined || task.family === input.family) &&
          input.serviceName === undefined,
      );
      const { page, nextToken } = offsetPage(matching, maxResults, input.nextToken, () => invalid('Invalid nextToken.'));
      return withoutUndefined({ taskArns: page.map((task) => task.view.arn), nextToken });
    },
  };
}
