// The sandbox, from its image to a task that runs: the image in ECR, then one task started exactly
// as the agent starts them (its cluster, task definition, subnets and security groups, read from
// the agent-step function's environment), watched until it runs, and stopped again. A task that
// does not run says why (an image it cannot pull, a subnet that is gone, no Fargate capacity left).
import { randomBytes } from 'node:crypto';
import { DescribeImagesCommand } from '@aws-sdk/client-ecr';
import { DescribeTasksCommand, RunTaskCommand, StopTaskCommand, type Task } from '@aws-sdk/client-ecs';
import { readEnv, sandboxLaunchEnv } from '../../shared/env.ts';
import { sandboxConfigFromEnv } from '../../shared/handler-context/sandbox.ts';
import { sandboxRunTask, type SandboxConfig } from '../../shared/sandbox/lifecycle.ts';
import { parseEcrImage } from '../../infra/image-uri.ts';
import { agentFunctionProblem, type AgentFunctionRead } from './agent-function.ts';
import type { DoctorDeps } from './deps.ts';
import { errorText, isAccessDenied, ok, problem, skipped, type CheckResult } from './result.ts';

export async function sandboxImage(deps: DoctorDeps, uri: string): Promise<CheckResult> {
  const name = 'sandbox image';
  const image = parseEcrImage(uri);
  if (!image) return ok(name, `${uri} is not in ECR: not checked (a public registry's image)`);
  const imageId = image.digest ? { imageDigest: image.digest } : { imageTag: image.tag ?? 'latest' };
  try {
    await deps.ecr.send(
      new DescribeImagesCommand({ registryId: image.account, repositoryName: image.repositoryName, imageIds: [imageId] }),
    );
    return ok(name, `${uri} is in ECR`);
  } catch (error) {
    return problem(
      name,
      `${uri}: ${errorText(error)}`,
      /ImageNotFound|RepositoryNotFound/.test(errorText(error))
        ? "The image is not there: if the deploy builds it, deploy again (`npx cdk deploy`) and read the image build's CodeBuild log group if it fails; with sandboxImageUri, push that image first."
        : 'The credentials need ecr:DescribeImages on the repository.',
    );
  }
}

/** What to do about a task that stopped before it ran, by what ECS says stopped it. */
function stoppedFix(reason: string): string {
  if (/CannotPullContainer/i.test(reason)) {
    return 'The task could not pull its image: check the sandbox image line above; with sandboxNetwork=isolated the subnets need their ECR and S3 endpoints (deployed with the stack: deploy again if they were removed).';
  }
  if (/ResourceInitializationError/i.test(reason)) {
    return "The task could not set up (its log group, its image's registry or its network): check the sandbox subnets' routes and VPC endpoints, then deploy again.";
  }
  if (/EssentialContainerExited/i.test(reason) || /exit/i.test(reason)) {
    return "The command server exited: read the sandbox task's log group (`aws logs tail` the stack's sandbox log group).";
  }
  return 'Read the stopped task in the ECS console (the SandboxClusterName output), fix what it names, and run the doctor again.';
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(0)} s`;

async function describe(deps: DoctorDeps, config: SandboxConfig, taskArn: string): Promise<Task | undefined> {
  return (await deps.ecs.send(new DescribeTasksCommand({ cluster: config.cluster, tasks: [taskArn] }))).tasks?.[0];
}

async function roundTrip(deps: DoctorDeps, config: SandboxConfig): Promise<CheckResult> {
  const started = deps.now();
  const task: { arn?: string } = {};
  const result = await startAndWatch(deps, config, started, task);
  if (!task.arn) return result;
  try {
    await deps.ecs.send(new StopTaskCommand({ cluster: config.cluster, task: task.arn, reason: 'npm run doctor: the round trip is done' }));
    return result;
  } catch (error) {
    // The orphan sweep stops it too, within minutes; until then it is billed.
    return problem(
      'sandbox',
      `${result.detail}; then ECS StopTask of ${task.arn} failed: ${errorText(error)}`,
      `Stop it: aws ecs stop-task --cluster ${config.cluster} --task ${task.arn}${isAccessDenied(error) ? ' (the credentials need ecs:StopTask)' : ''}.`,
    );
  }
}

async function startAndWatch(
  deps: DoctorDeps,
  config: SandboxConfig,
  started: number,
  startedTask: { arn?: string },
): Promise<CheckResult> {
  const name = 'sandbox';
  try {
    // A token of its own, as each of the agent's tasks has: the command server needs one to start.
    const run = await deps.ecs.send(new RunTaskCommand(sandboxRunTask(config, randomBytes(32).toString('hex'))));
    const taskArn = run.tasks?.[0]?.taskArn;
    if (!taskArn) {
      const reasons = (run.failures ?? []).map((f) => `${f.reason ?? 'unknown'}${f.detail ? ` (${f.detail})` : ''}`).join('; ');
      return problem(
        name,
        `ECS RunTask started no task: ${reasons || 'no reason given'}`,
        /RESOURCE|ENI|vCPU|limit/i.test(reasons)
          ? 'Fargate has no room for the task: see the fargate quota line, or the subnets ran out of addresses.'
          : 'Read the reason, fix it, and run the doctor again.',
      );
    }
    startedTask.arn = taskArn;
    let task: Task | undefined;
    while (deps.now() - started < deps.sandbox.timeoutMs) {
      task = await describe(deps, config, taskArn);
      if (task?.lastStatus === 'RUNNING' || task?.lastStatus === 'STOPPED' || task?.desiredStatus === 'STOPPED') break;
      await deps.sleep(deps.sandbox.pollMs);
    }
    if (task?.lastStatus === 'RUNNING' && task.desiredStatus !== 'STOPPED') {
      return ok(name, `a sandbox task ran ${seconds(deps.now() - started)} after RunTask, in ${config.subnets.join(', ')}; stopped again`);
    }
    if (task?.desiredStatus === 'STOPPED' || task?.lastStatus === 'STOPPED') {
      const reason = task.stoppedReason ?? task.stopCode ?? 'no reason given';
      return problem(name, `the sandbox task stopped before it ran: ${reason}`, stoppedFix(reason));
    }
    return problem(
      name,
      `the sandbox task was still ${task?.lastStatus ?? 'unknown'} after ${seconds(deps.sandbox.timeoutMs)}`,
      'Fargate may be slow to place it or to pull the image: run the doctor again with a longer --sandbox-timeout-seconds; if it never runs, read the task in the ECS console.',
    );
  } catch (error) {
    return problem(
      name,
      `ECS ${startedTask.arn ? 'DescribeTasks' : 'RunTask'} failed: ${errorText(error)}`,
      isAccessDenied(error)
        ? "The credentials need ecs:RunTask, ecs:DescribeTasks and ecs:StopTask on the sandbox cluster, and iam:PassRole on the task's roles."
        : /subnet|security group/i.test(errorText(error))
          ? "The agent's sandbox subnets or security groups are not there: deploy again (`npx cdk deploy`)."
          : 'Read the error, fix it, and run the doctor again.',
    );
  }
}

export async function sandboxRoundTrip(deps: DoctorDeps, agent: AgentFunctionRead): Promise<CheckResult> {
  const name = 'sandbox';
  if (!deps.sandbox.run) return skipped(name, 'not run (--skip-sandbox)');
  if (!agent.ok) return agentFunctionProblem(name, agent);
  let config: SandboxConfig | undefined;
  try {
    config = sandboxConfigFromEnv(readEnv(sandboxLaunchEnv, agent.fn.variables));
  } catch (error) {
    return problem(
      name,
      `the agent-step function's sandbox settings are invalid: ${errorText(error)}`,
      'Deploy this version of the stack (`npx cdk deploy`).',
    );
  }
  if (!config)
    return problem(
      name,
      'the agent-step function has no sandbox cluster (SANDBOX_CLUSTER_ARN)',
      'Deploy this version of the stack (`npx cdk deploy`).',
    );
  return roundTrip(deps, config);
}
