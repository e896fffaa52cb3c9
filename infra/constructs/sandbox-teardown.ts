// Makes `cdk destroy` work while sandbox tasks run: a custom resource that, when deleted, stops every
// task in the sandbox cluster and waits until they have stopped. CloudFormation deletes it before the
// cluster (it names the cluster), before the VPC and the task security group (it depends on them, so
// their network interfaces are free by then), and after agent-step (which depends on it), so no new
// task starts behind it. An AwsCustomResource could stop tasks but not wait for them.
import { CustomResource, Duration } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { StopSandboxTasksProperties } from '../custom-resources/stop-sandbox-tasks.ts';
import { createDeployTimeProvider, type DeployTimeProvider } from './deploy-time-provider.ts';
import type { SandboxNetwork } from './sandbox-network.ts';
import type { SandboxSecurityGroups } from './sandbox-security-groups.ts';
import type { SandboxTask } from './sandbox-task.ts';

export const STOP_SANDBOX_TASKS_HANDLER_ENTRY = 'infra/custom-resources/stop-sandbox-tasks.ts';

export interface SandboxTeardownProps {
  readonly task: SandboxTask;
  readonly network: SandboxNetwork;
  readonly securityGroups: SandboxSecurityGroups;
  /** What starts tasks: deleted before the teardown runs. */
  readonly launchers: IConstruct[];
  readonly logRetention: RetentionDays;
}

export class SandboxTeardown extends Construct {
  readonly provider: DeployTimeProvider;
  readonly resource: CustomResource;

  constructor(scope: Construct, id: string, props: SandboxTeardownProps) {
    super(scope, id);
    this.provider = createDeployTimeProvider(this, 'StopTasks', {
      entry: STOP_SANDBOX_TASKS_HANDLER_ENTRY,
      description: 'On stack deletion, stops every sandbox task and waits until they have stopped',
      // The Provider framework waits for its handler at most 15 minutes; stopping takes about a minute.
      timeout: Duration.minutes(14),
      logRetention: props.logRetention,
    });
    // ListTasks, DescribeTasks and StopTask on this cluster's tasks only.
    props.task.grantSweep(this.provider.handler);

    const properties: StopSandboxTasksProperties = { clusterArn: props.task.cluster.clusterArn };
    this.resource = new CustomResource(this, 'Resource', {
      serviceToken: this.provider.provider.serviceToken,
      resourceType: 'Custom::StopSandboxTasks',
      properties,
    });
    this.resource.node.addDependency(props.network.vpc, props.securityGroups.task);
    for (const launcher of props.launchers) launcher.node.addDependency(this.resource);
  }
}
