// RunTask's input, checked as ECS checks the parts the product sends (the task definition, FARGATE,
// an awsvpc network, startedBy, tags, container overrides) and read into a TaskSpec.
import { ApiError, isPlainObject } from '../aws-protocol.ts';
import type { TaskDefinitions } from './task-definitions.ts';
import type { Tag, TaskSpec } from './task-record.ts';

// ECS: "A total of 8192 characters are allowed for overrides."
const MAX_OVERRIDES_CHARS = 8192;
const STARTED_BY_PATTERN = /^[A-Za-z0-9_/-]{1,128}$/;

const invalid = (message: string) => new ApiError('InvalidParameterException', message);

function validTags(value: unknown): Tag[] {
  if (!Array.isArray(value)) return [];
  return value.map((item) => {
    const tag = asObject(item);
    const key = String(tag.key ?? '');
    if (key.toLowerCase().startsWith('aws:')) throw invalid('Tag keys may not start with the reserved prefix aws:.');
    return { key, value: String(tag.value ?? '') };
  });
}

/** The container's environment from the overrides; only the task definition's container may be named. */
function overrideEnvironment(containerOverrides: Record<string, unknown>[], defaultName: string | undefined) {
  const env: Record<string, string> = {};
  let containerName = defaultName;
  for (const override of containerOverrides) {
    const name = String(override.name ?? '');
    containerName ??= name;
    if (name !== containerName) throw invalid(`Override for container named ${name} is not a container in the TaskDefinition.`);
    for (const variable of Array.isArray(override.environment) ? override.environment.map(asObject) : []) {
      env[String(variable.name)] = typeof variable.value === 'string' ? variable.value : '';
    }
  }
  return { env, containerName: containerName ?? 'sandbox' };
}

export function readRunTaskInput(
  input: Record<string, unknown>,
  options: { taskDefinitions: TaskDefinitions; containerName: string | undefined },
): { spec: TaskSpec; count: number } {
  const { arn, family } = options.taskDefinitions.resolveForRun(input.taskDefinition);
  const taskDefinition = { arn, family };
  if (input.launchType !== undefined && input.launchType !== 'FARGATE') {
    throw invalid(`The local ECS stand-in runs FARGATE tasks only, not launchType ${String(input.launchType)}.`);
  }
  const count = input.count === undefined ? 1 : Number(input.count);
  if (!Number.isInteger(count) || count < 1 || count > 10) throw invalid('Count must be between 1 and 10.');
  if (input.startedBy !== undefined && (typeof input.startedBy !== 'string' || !STARTED_BY_PATTERN.test(input.startedBy))) {
    throw invalid(
      'startedBy: up to 128 letters (uppercase and lowercase), numbers, hyphens (-), forward slash (/), and underscores (_) are allowed.',
    );
  }
  const network = asObject(asObject(input.networkConfiguration).awsvpcConfiguration);
  if (!Array.isArray(network.subnets) || network.subnets.length === 0) {
    throw invalid("Network Configuration must be provided when networkMode 'awsvpc' is specified.");
  }
  const assignPublicIp = network.assignPublicIp ?? 'DISABLED';
  if (assignPublicIp !== 'ENABLED' && assignPublicIp !== 'DISABLED') {
    throw invalid(`Invalid assignPublicIp value: ${String(assignPublicIp)}. Valid values are ENABLED and DISABLED.`);
  }
  const tags = validTags(input.tags);
  const overrides = asObject(input.overrides);
  if (JSON.stringify(overrides).length > MAX_OVERRIDES_CHARS)
    throw invalid(`Container Overrides length must be at most ${MAX_OVERRIDES_CHARS}`);
  const containerOverrides = Array.isArray(overrides.containerOverrides) ? overrides.containerOverrides.map(asObject) : [];
  const { env, containerName } = overrideEnvironment(containerOverrides, options.containerName);
  const startedBy = input.startedBy as string | undefined;
  return {
    count,
    spec: {
      taskDefinition,
      containerName,
      overrideEnv: env,
      overrides: { ...overrides, containerOverrides },
      tags,
      startedBy,
      publicIp: assignPublicIp === 'ENABLED',
    },
  };
}

function asObject(value: unknown): Record<string, unknown> {
  return isPlainObject(value) ? value : {};
}
