// The sandbox task: one Fargate task per thread, started on demand by the agent-step function (RunTask
// of the task definition's family, see launchEnvironment) and stopped when idle. One container,
// `sandbox`, runs the command server:
//   ARM64 Linux, non-root (uid 1000), read-only root filesystem, every Linux capability dropped, an
//   init process that reaps and signals whole process trees, writable task storage only at /workspace
//   and /tmp, the server on 8080/tcp. Its task role has no policies: nothing in the task can call AWS
//   (the sandbox-step function moves files between S3 and the task). The execution role only pulls the
//   image and writes the container's logs. The per-task token arrives as a RunTask container override.
import { Stack, Validations } from 'aws-cdk-lib';
import {
  Capability,
  Cluster,
  type ContainerDefinition,
  ContainerInsights,
  CpuArchitecture,
  FargateTaskDefinition,
  LinuxParameters,
  LogDrivers,
  OperatingSystemFamily,
  Protocol,
} from 'aws-cdk-lib/aws-ecs';
import { Effect, type IGrantable, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { SandboxImage } from './sandbox-image.ts';
import type { SandboxNetwork } from './sandbox-network.ts';
import type { SandboxSecurityGroups } from './sandbox-security-groups.ts';
import { sandboxLaunchEnv, type EnvironmentFor } from '../../shared/env.ts';

export const SANDBOX_CONTAINER_NAME = 'sandbox';
export const SANDBOX_PORT = 8080;
export const SANDBOX_USER = '1000';
/** Writable paths inside the container (task ephemeral storage); everything else is read-only. */
export const SANDBOX_WRITABLE_PATHS = { workspace: '/workspace', tmp: '/tmp' } as const;

/** What a function that starts sandbox tasks is given: its environment and its permissions. */
export interface SandboxLauncher {
  readonly launchEnvironment: EnvironmentFor<typeof sandboxLaunchEnv>;
  grantLaunch(grantee: IGrantable): void;
}

export interface SandboxTaskProps {
  readonly network: SandboxNetwork;
  readonly securityGroups: SandboxSecurityGroups;
  readonly cpu: number;
  readonly memoryMiB: number;
  readonly idleMinutes: number;
  readonly logRetention: RetentionDays;
  /** A prebuilt image to run (deployment setting sandboxImageUri) instead of building containers/sandbox at deploy. */
  readonly prebuiltImageUri?: string;
}

export class SandboxTask extends Construct implements SandboxLauncher {
  readonly cluster: Cluster;
  readonly taskDefinition: FargateTaskDefinition;
  readonly container: ContainerDefinition;
  readonly taskRole: Role;
  readonly executionRole: Role;
  readonly image: SandboxImage;
  readonly logGroup: LogGroup;
  /** What a function that starts sandboxes (RunTask) needs to know, as environment variables. */
  readonly launchEnvironment: EnvironmentFor<typeof sandboxLaunchEnv>;

  constructor(scope: Construct, id: string, props: SandboxTaskProps) {
    super(scope, id);
    const { network, securityGroups } = props;

    this.cluster = new Cluster(this, 'Cluster', {
      vpc: network.vpc,
      // CPU, memory and network per task: how big sandboxes should be. Metrics exist only while tasks run.
      containerInsightsV2: ContainerInsights.ENABLED,
    });

    this.taskRole = new Role(this, 'TaskRole', {
      assumedBy: new ServicePrincipal('ecs-tasks.amazonaws.com'),
      description: 'Sandbox task role: deliberately without any policy, so commands in the sandbox have no AWS access',
    });
    this.executionRole = new Role(this, 'ExecutionRole', {
      assumedBy: new ServicePrincipal('ecs-tasks.amazonaws.com'),
      description: 'Sandbox task execution role: pulls the sandbox image and writes its logs, nothing else',
    });

    this.taskDefinition = new FargateTaskDefinition(this, 'TaskDefinition', {
      cpu: props.cpu,
      memoryLimitMiB: props.memoryMiB,
      runtimePlatform: { cpuArchitecture: CpuArchitecture.ARM64, operatingSystemFamily: OperatingSystemFamily.LINUX },
      taskRole: this.taskRole,
      executionRole: this.executionRole,
      // Bind mounts without a host path live on the task's ephemeral storage and vanish with the task.
      volumes: Object.keys(SANDBOX_WRITABLE_PATHS).map((name) => ({ name })),
    });

    // No ECS init process: it would be PID 1 with the task's whole environment, the per-task token
    // included, readable by commands in /proc/1/environ. The image's entry point unsets the token
    // and then runs its own init (tini), which reaps orphans just the same.
    const linuxParameters = new LinuxParameters(this, 'LinuxParameters', { initProcessEnabled: false });
    linuxParameters.dropCapabilities(Capability.ALL);

    this.image = new SandboxImage(this, 'Image', {
      prebuiltImageUri: props.prebuiltImageUri,
      executionRole: this.executionRole,
      logRetention: props.logRetention,
    });
    this.logGroup = new LogGroup(this, 'Logs', { retention: props.logRetention });
    this.container = this.taskDefinition.addContainer(SANDBOX_CONTAINER_NAME, {
      containerName: SANDBOX_CONTAINER_NAME,
      image: this.image.containerImage,
      essential: true,
      user: SANDBOX_USER,
      readonlyRootFilesystem: true,
      privileged: false,
      linuxParameters,
      portMappings: [{ containerPort: SANDBOX_PORT, protocol: Protocol.TCP }],
      environment: { SANDBOX_WORKSPACE: SANDBOX_WRITABLE_PATHS.workspace, SANDBOX_PORT: String(SANDBOX_PORT) },
      logging: LogDrivers.awsLogs({ logGroup: this.logGroup, streamPrefix: 'sandbox' }),
    });
    if (this.image.prebuiltRepositoryArn) {
      // CDK warns that fromRegistry grants no ECR pull; SandboxImage grants it on exactly that repository.
      Validations.of(this.container).acknowledge({
        id: 'Annotation::@aws-cdk/aws-ecs:ecrImageRequiresPolicy',
        reason: 'The execution role is granted pull on exactly the repository sandboxImageUri names (SandboxImage).',
      });
    }
    this.container.addMountPoints(
      ...Object.entries(SANDBOX_WRITABLE_PATHS).map(([sourceVolume, containerPath]) => ({
        sourceVolume,
        containerPath,
        readOnly: false,
      })),
    );

    const subnetIds = network.vpc.selectSubnets(network.taskSubnets).subnetIds;
    this.launchEnvironment = {
      SANDBOX_CLUSTER_ARN: this.cluster.clusterArn,
      // The family alone: ECS runs its latest ACTIVE revision. A deploy that replaces the task
      // definition (a new image) deregisters the old revision, and a run in flight goes on with the
      // agent-step version it started with; naming a revision, that version could start no sandbox.
      // (The family's ARN without a revision is not a RunTask reference.)
      SANDBOX_TASK_DEFINITION_FAMILY: this.taskDefinition.family,
      SANDBOX_CONTAINER_NAME: SANDBOX_CONTAINER_NAME,
      SANDBOX_SUBNET_IDS: subnetIds.join(','),
      SANDBOX_SECURITY_GROUP_IDS: securityGroups.task.securityGroupId,
      SANDBOX_PORT: String(SANDBOX_PORT),
      SANDBOX_IDLE_MINUTES: String(props.idleMinutes),
      SANDBOX_CPU: String(props.cpu),
      SANDBOX_MEMORY_MIB: String(props.memoryMiB),
      ...(network.taskPublicIp && { SANDBOX_ASSIGN_PUBLIC_IP: 'ENABLED' }),
    };
  }

  /** ARN pattern of this cluster's tasks (ecs:DescribeTasks, ecs:StopTask and ecs:TagResource act on tasks). */
  get taskArns(): string {
    return Stack.of(this).formatArn({ service: 'ecs', resource: 'task', resourceName: `${this.cluster.clusterName}/*` });
  }

  /** Every revision of the task definition's family: RunTask of the family is authorized on the revision it runs. */
  get taskDefinitionRevisionArns(): string {
    return Stack.of(this).formatArn({ service: 'ecs', resource: 'task-definition', resourceName: `${this.taskDefinition.family}:*` });
  }

  /**
   * Start sandboxes: RunTask of this task definition's family (any revision: the latest ACTIVE one
   * runs) in this cluster (with tags), pass its two roles to ECS, and describe and stop the tasks.
   */
  grantLaunch(grantee: IGrantable): void {
    const inThisCluster = { ArnEquals: { 'ecs:cluster': this.cluster.clusterArn } };
    const principal = grantee.grantPrincipal;
    principal.addToPrincipalPolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['ecs:RunTask'],
        resources: [this.taskDefinitionRevisionArns],
        conditions: inThisCluster,
      }),
    );
    principal.addToPrincipalPolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['ecs:TagResource'],
        resources: [this.taskArns],
        // Tagging is allowed only as part of RunTask, not on existing tasks.
        conditions: { StringEquals: { 'ecs:CreateAction': 'RunTask' } },
      }),
    );
    principal.addToPrincipalPolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['iam:PassRole'],
        resources: [this.taskRole.roleArn, this.executionRole.roleArn],
        conditions: { StringEquals: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' } },
      }),
    );
    this.grantStop(grantee);
  }

  /** Describe and stop this cluster's tasks (the idle reaper; the agent-step function on abort). */
  grantStop(grantee: IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['ecs:DescribeTasks', 'ecs:StopTask'],
        resources: [this.taskArns],
        conditions: { ArnEquals: { 'ecs:cluster': this.cluster.clusterArn } },
      }),
    );
  }

  /**
   * List this cluster's tasks (the reaper's orphan sweep, the teardown). AWS authorizes listing a
   * whole cluster against "*", whatever the Service Authorization Reference says (container-instance,
   * which only a list of one instance's tasks is authorized on): "*", held to this cluster by
   * ecs:cluster, as CDK's own ECS constructs grant it.
   */
  grantSweep(grantee: IGrantable): void {
    this.grantStop(grantee);
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['ecs:ListTasks'],
        resources: ['*'],
        conditions: { ArnEquals: { 'ecs:cluster': this.cluster.clusterArn } },
      }),
    );
  }
}
