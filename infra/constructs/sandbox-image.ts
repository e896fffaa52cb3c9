// The sandbox container image, from one of two places:
//
//   built at deploy (default)  containers/sandbox is uploaded as a plain file asset and built for ARM64
//                              by AWS CodeBuild on an ARM64 host (@cdklabs/deploy-time-build), then
//                              pushed to this stack's ECR repository. `cdk deploy` runs no Docker.
//   prebuilt                   the deployment setting sandboxImageUri names an image; nothing is built.
//
// The Dockerfile copies the command server's esbuild bundle (dist/server.mjs), so a real synth builds
// the bundle first, synchronously, whenever it is missing or older than the server's sources. The
// build has time limits, and one that ends without an image fails the deploy at once
// (image-build-failures.ts).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ContainerImageBuild } from '@cdklabs/deploy-time-build';
import { Annotations, type CfnResource, IgnoreMode, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { type CfnProject, Project } from 'aws-cdk-lib/aws-codebuild';
import { Repository, TagMutability } from 'aws-cdk-lib/aws-ecr';
import { Platform } from 'aws-cdk-lib/aws-ecr-assets';
import { ContainerImage } from 'aws-cdk-lib/aws-ecs';
import { type CfnRole, Effect, type IRole, PolicyStatement, type Role } from 'aws-cdk-lib/aws-iam';
import { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct, type IConstruct } from 'constructs';
import { parseEcrImage } from '../image-uri.ts';
import { PROJECT_ROOT } from '../function-entries.ts';
import { giveLogGroup, writeLogsOnlyTo } from './custom-resource-functions.ts';
import { ImageBuildFailures } from './image-build-failures.ts';

/** The image's build context, relative to the repository root. */
export const SANDBOX_IMAGE_DIR = 'containers/sandbox';
export const SANDBOX_BUILD_SCRIPT = `${SANDBOX_IMAGE_DIR}/build.mjs`;
export const SANDBOX_SERVER_SOURCE = `${SANDBOX_IMAGE_DIR}/server.ts`;
export const SANDBOX_SERVER_BUNDLE = `${SANDBOX_IMAGE_DIR}/dist/server.mjs`;

/** Built images the repository keeps; older ones expire (a task definition names only the newest). */
export const SANDBOX_IMAGES_KEPT = 5;

// How long the image build may take: CodeBuild stops a build that runs longer (the build takes a few
// minutes) or waits longer in the queue, and CloudFormation stops waiting for the custom resource
// a little after both, in case no answer comes at all (instead of its default hour).
export const SANDBOX_BUILD_TIMEOUT_MINUTES = 20;
export const SANDBOX_BUILD_QUEUED_TIMEOUT_MINUTES = 10;
export const SANDBOX_BUILD_SERVICE_TIMEOUT_SECONDS = (SANDBOX_BUILD_TIMEOUT_MINUTES + SANDBOX_BUILD_QUEUED_TIMEOUT_MINUTES + 5) * 60;

// Construct ids deploy-time-build gives the stack-wide singletons it creates (its function and project).
const BUILD_HANDLER_ID = 'DeployTimeBuildCustomResourceHandler';
const BUILD_PROJECT_ID = 'ContainerImageBuildArm64';

export interface SandboxImageProps {
  /** A prebuilt image to run (deployment setting sandboxImageUri); without it the image is built at deploy. */
  readonly prebuiltImageUri?: string;
  /** The task execution role, which pulls the image. */
  readonly executionRole: IRole;
  readonly logRetention: RetentionDays;
}

/** What the deploy-time build consists of, for tests and nag acknowledgements. */
export interface SandboxImageBuild {
  readonly repository: Repository;
  readonly build: ContainerImageBuild;
  /** The CodeBuild project that runs `docker buildx build` (one per stack, shared by every ContainerImageBuild). */
  readonly project: Project;
  readonly projectLogs: LogGroup;
  /** The custom resource function that starts the build (one per stack). */
  readonly handler: LambdaFunction;
  readonly handlerLogs: LogGroup;
  /** Fails the custom resource as soon as a build ends without an image. */
  readonly failures: ImageBuildFailures;
}

export class SandboxImage extends Construct {
  readonly containerImage: ContainerImage;
  /** Where the image is (`npm run doctor` checks that it is there). */
  readonly imageUri: string;
  /** Present when the image is built at deploy. */
  readonly build?: SandboxImageBuild;
  /** Present when sandboxImageUri names a private ECR image: the repository the execution role may pull from. */
  readonly prebuiltRepositoryArn?: string;

  constructor(scope: Construct, id: string, props: SandboxImageProps) {
    super(scope, id);
    if (props.prebuiltImageUri) {
      this.containerImage = ContainerImage.fromRegistry(props.prebuiltImageUri);
      this.imageUri = props.prebuiltImageUri;
      const ecr = parseEcrImage(props.prebuiltImageUri);
      // Any other registry must be public: the task definition holds no registry credentials.
      if (ecr) {
        this.prebuiltRepositoryArn = Stack.of(this).formatArn({
          service: 'ecr',
          account: ecr.account,
          region: ecr.region,
          resource: 'repository',
          resourceName: ecr.repositoryName,
        });
        const repository = Repository.fromRepositoryAttributes(this, 'PrebuiltRepository', {
          repositoryArn: this.prebuiltRepositoryArn,
          repositoryName: ecr.repositoryName,
        });
        repository.grantPull(props.executionRole);
      }
      return;
    }
    this.build = buildAtDeploy(this, props.logRetention);
    this.containerImage = this.build.build.toEcsDockerImageCode();
    this.imageUri = this.build.build.imageUri;
  }
}

function buildAtDeploy(scope: Construct, logRetention: RetentionDays): SandboxImageBuild {
  const directory = join(PROJECT_ROOT, SANDBOX_IMAGE_DIR);
  if (!existsSync(join(directory, 'Dockerfile'))) {
    throw new Error(`${SANDBOX_IMAGE_DIR}/Dockerfile not found: the sandbox image cannot be built without it`);
  }
  // Tests and the local cloud synthesize with bundling switched off; only a real synth builds.
  if (Stack.of(scope).bundlingRequired) buildServerBundle(scope);

  // Our own repository rather than the library's default one: immutable tags (every build pushes a new
  // random tag), old images expire, and the repository goes with the stack (the image is rebuilt from source).
  const repository = new Repository(scope, 'Repository', {
    imageTagMutability: TagMutability.IMMUTABLE,
    imageScanOnPush: true,
    lifecycleRules: [{ description: `Keep the ${SANDBOX_IMAGES_KEPT} newest sandbox images`, maxImageCount: SANDBOX_IMAGES_KEPT }],
    removalPolicy: RemovalPolicy.DESTROY,
    emptyOnDelete: true,
  });
  const build = new ContainerImageBuild(scope, 'Build', {
    directory,
    platform: Platform.LINUX_ARM64,
    repository,
    // The build context is uploaded as a file asset, filtered like Docker filters it.
    ignoreMode: IgnoreMode.DOCKER,
    exclude: buildContextExcludes(directory),
  });

  const stack = Stack.of(scope);
  const handler = stackSingleton(stack, BUILD_HANDLER_ID, LambdaFunction);
  const project = stackSingleton(stack, BUILD_PROJECT_ID, Project);
  const handlerLogs = tightenBuildHandler(scope, handler, logRetention);
  const projectLogs = tightenBuildProject(scope, project, logRetention);
  // The build must find its log group in place: otherwise CodeBuild creates one that never expires.
  build.node.findChild('Resource').node.addDependency(projectLogs);
  limitBuildTime(build, project);
  const failures = new ImageBuildFailures(scope, 'BuildFailures', { project, logRetention });
  return { repository, build, project, projectLogs, handler, handlerLogs, failures };
}

/**
 * The build's time limits (deploy-time-build sets none: CodeBuild's default is an hour), and the
 * custom resource's service timeout: how long CloudFormation waits for an answer.
 */
function limitBuildTime(build: ContainerImageBuild, project: Project): void {
  const cfnProject = project.node.defaultChild as CfnProject;
  cfnProject.timeoutInMinutes = SANDBOX_BUILD_TIMEOUT_MINUTES;
  cfnProject.queuedTimeoutInMinutes = SANDBOX_BUILD_QUEUED_TIMEOUT_MINUTES;
  // As CDK's CustomResource writes its serviceTimeout: seconds, as a string.
  const resource = build.node.findChild('Resource').node.defaultChild as CfnResource;
  resource.addPropertyOverride('ServiceTimeout', String(SANDBOX_BUILD_SERVICE_TIMEOUT_SECONDS));
}

/**
 * The context's .dockerignore patterns, plus the Dockerfile: Docker always reads the Dockerfile even
 * when .dockerignore excludes it, but the uploaded copy must contain it for CodeBuild to build.
 */
function buildContextExcludes(directory: string): string[] {
  const dockerignore = join(directory, '.dockerignore');
  const patterns = existsSync(dockerignore)
    ? readFileSync(dockerignore, 'utf8')
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => line !== '' && !line.startsWith('#'))
    : [];
  return [...patterns, '!Dockerfile'];
}

/**
 * The build's custom resource function: a log group with the deployment's retention instead of the
 * never-shortened one CDK creates for it, and a role that writes only there.
 */
function tightenBuildHandler(scope: Construct, handler: LambdaFunction, logRetention: RetentionDays): LogGroup {
  handler.node.tryRemoveChild('LogGroup');
  const logGroup = giveLogGroup(scope, 'BuildHandlerLogs', handler.node.defaultChild as CfnResource, logRetention);
  writeLogsOnlyTo(handler.role as Role, logGroup);
  return logGroup;
}

/**
 * The CodeBuild project: a log group with the deployment's retention at the name CodeBuild writes to
 * (its role may write there only), and instead of the AmazonElasticContainerRegistryPublicReadOnly
 * managed policy the two actions the build's `docker login public.ecr.aws` needs.
 */
function tightenBuildProject(scope: Construct, project: Project, logRetention: RetentionDays): LogGroup {
  const role = project.role as Role;
  // The role's own statements stay; only the managed policy goes.
  (role.node.defaultChild as CfnRole).managedPolicyArns = undefined;
  role.addToPrincipalPolicy(new PolicyStatement({ effect: Effect.ALLOW, actions: ['ecr-public:GetAuthorizationToken'], resources: ['*'] }));
  role.addToPrincipalPolicy(
    new PolicyStatement({
      effect: Effect.ALLOW,
      actions: ['sts:GetServiceBearerToken'],
      resources: ['*'],
      conditions: { StringEquals: { 'sts:AWSServiceName': 'ecr-public.amazonaws.com' } },
    }),
  );
  return new LogGroup(scope, 'BuildLogs', {
    logGroupName: `/aws/codebuild/${project.projectName}`,
    retention: logRetention,
    // Build logs matter while deploying; the image is rebuilt from source after a new deploy.
    removalPolicy: RemovalPolicy.DESTROY,
  });
}

/** A construct deploy-time-build creates once per stack, found by its id prefix. */
function stackSingleton<T extends IConstruct>(stack: Stack, idPrefix: string, type: abstract new (...args: never[]) => T): T {
  const found = stack.node.children.filter((child): child is T => child.node.id.startsWith(idPrefix) && child instanceof type);
  if (found.length !== 1) throw new Error(`expected one ${idPrefix}* in ${stack.node.path}, found ${found.length}`);
  return found[0]!;
}

function buildServerBundle(scope: Construct): void {
  const script = join(PROJECT_ROOT, SANDBOX_BUILD_SCRIPT);
  const bundle = join(PROJECT_ROOT, SANDBOX_SERVER_BUNDLE);
  if (!existsSync(script)) {
    Annotations.of(scope).addWarningV2(
      'threadwork:sandbox-build-script-missing',
      `${SANDBOX_BUILD_SCRIPT} does not exist, so ${SANDBOX_SERVER_BUNDLE} was not (re)built; the image build fails at deploy unless the bundle is there.`,
    );
    return;
  }
  if (existsSync(bundle) && statSync(bundle).mtimeMs >= newestSourceMtime()) return;

  const build = spawnSync(process.execPath, [script], { cwd: PROJECT_ROOT, encoding: 'utf8' });
  if (build.error || build.status !== 0) {
    const output = `${build.stdout ?? ''}${build.stderr ?? ''}`.trim();
    throw new Error(`${SANDBOX_BUILD_SCRIPT} failed (${build.error?.message ?? `exit ${build.status}`}): ${output}`);
  }
  if (!existsSync(bundle)) throw new Error(`${SANDBOX_BUILD_SCRIPT} succeeded but wrote no ${SANDBOX_SERVER_BUNDLE}`);
}

/** The latest modification time of server.ts and the TypeScript beside it (dist and node_modules excluded). */
function newestSourceMtime(): number {
  let newest = existsSync(join(PROJECT_ROOT, SANDBOX_SERVER_SOURCE)) ? statSync(join(PROJECT_ROOT, SANDBOX_SERVER_SOURCE)).mtimeMs : 0;
  const visit = (directory: string): void => {
    for (const entry of readdirSync(directory, { withFileTypes: true })) {
      if (entry.name === 'dist' || entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
      const path = join(directory, entry.name);
      if (entry.isDirectory()) visit(path);
      else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
    }
  };
  visit(join(PROJECT_ROOT, SANDBOX_IMAGE_DIR));
  return newest;
}
