import { dbClient } from '../aws/dynamodb.ts';
import { ecsClient } from '../aws/ecs.ts';
import type { SandboxLaunchEnv } from '../env.ts';
import type { LifecycleDeps, SandboxConfig } from '../sandbox/lifecycle.ts';

/** The sandbox task settings the stack passes to agent-step and the reaper (absent: no sandbox). */
export function sandboxConfigFromEnv(env: SandboxLaunchEnv): SandboxConfig | undefined {
  if (!env.SANDBOX_CLUSTER_ARN) return undefined;
  return {
    cluster: env.SANDBOX_CLUSTER_ARN,
    taskDefinition: env.SANDBOX_TASK_DEFINITION_FAMILY,
    containerName: env.SANDBOX_CONTAINER_NAME,
    subnets: env.SANDBOX_SUBNET_IDS,
    securityGroups: env.SANDBOX_SECURITY_GROUP_IDS,
    port: env.SANDBOX_PORT,
    idleMinutes: env.SANDBOX_IDLE_MINUTES,
    size: { cpu: env.SANDBOX_CPU, memoryMiB: env.SANDBOX_MEMORY_MIB },
    ...(env.SANDBOX_ASSIGN_PUBLIC_IP === 'ENABLED' && { assignPublicIp: true }),
  };
}

/** What starting, finding and stopping a thread's sandbox task needs (absent: no sandbox). */
export function sandboxFromEnv(env: SandboxLaunchEnv & { TABLE_NAME: string }): LifecycleDeps | undefined {
  const config = sandboxConfigFromEnv(env);
  if (!config) return undefined;
  return { ecs: ecsClient(), db: dbClient(), tableName: env.TABLE_NAME, config };
}
