// The sandbox image: built at deploy in CodeBuild (no Docker image asset, so `cdk deploy` needs no
// Docker), or a prebuilt image named by sandboxImageUri; the permissions, log groups and time limits
// of the build, and the rule that fails the deploy when the build fails.
import assert from 'node:assert/strict';
import { type Dirent, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import {
  SANDBOX_BUILD_QUEUED_TIMEOUT_MINUTES,
  SANDBOX_BUILD_SERVICE_TIMEOUT_SECONDS,
  SANDBOX_BUILD_TIMEOUT_MINUTES,
  SANDBOX_IMAGES_KEPT,
} from '../../infra/constructs/sandbox-image.ts';
import { matchesEventPattern } from '../../packages/local-cloud/src/event-pattern.ts';
import { DEFAULT_SETTINGS } from '../../infra/settings.ts';
import { flatten, logicalId, STACK_NAME, synth, type Synthesized } from './synth.ts';

type Resource = { Type: string; Properties: Record<string, unknown>; DependsOn?: string[]; DeletionPolicy?: string };
type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown };

const list = <T>(value: T | T[] | undefined): T[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

function inspect({ stack, template }: Synthesized) {
  const resources = template.toJSON().Resources as Record<string, Resource>;
  const idOf = (construct: IConstruct) => logicalId(stack, construct);
  const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
  const statementsOf = (roleId: string): Statement[] =>
    ofType('AWS::IAM::Policy')
      .filter(([, p]) => list(p.Properties.Roles).some((r) => JSON.stringify(r) === JSON.stringify({ Ref: roleId })))
      .flatMap(([, p]) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
  const container = () => (resources[idOf(stack.sandbox.task.taskDefinition)]!.Properties.ContainerDefinitions as { Image: unknown }[])[0]!;
  const executionStatements = () => statementsOf(idOf(stack.sandbox.task.executionRole));
  return { stack, resources, idOf, ofType, statementsOf, container, executionStatements };
}

const PRIVATE_ECR_IMAGE = '123456789012.dkr.ecr.eu-west-1.amazonaws.com/team/sandbox:v1';
const built = inspect(synth());

test('default: the image is built at deploy by CodeBuild on an ARM64 host, for linux/arm64, and pushed to the stack repository', () => {
  const { stack, ofType, idOf, resources, container } = built;
  const image = stack.sandbox.task.image.build!;
  const [[, project]] = ofType('AWS::CodeBuild::Project') as [[string, Resource]];
  const environment = project.Properties.Environment as Record<string, unknown>;
  assert.equal(environment.Type, 'ARM_CONTAINER');
  assert.match(environment.Image as string, /aarch64/);
  assert.equal(environment.PrivilegedMode, true, 'docker buildx needs the Docker daemon');
  const [[, build]] = ofType('Custom::CDKContainerImageBuild') as [[string, Resource]];
  assert.match(build.Properties.buildCommand as string, /^docker buildx build .*--platform linux\/arm64 /);
  assert.deepEqual(build.Properties.codeBuildProjectName, { Ref: idOf(image.project) });
  assert.deepEqual(build.Properties.repositoryUri, stack.resolve(image.repository.repositoryUri));
  // The task runs the tag the build reports.
  assert.deepEqual(container().Image, stack.resolve(image.repository.repositoryUriForTag(image.build.imageTag)));
  assert.ok(
    JSON.stringify(container().Image).includes(
      JSON.stringify({ 'Fn::GetAtt': [idOf(image.build.node.findChild('Resource')), 'ImageTag'] }),
    ),
  );
  // The repository: immutable tags, scanned, old images expire, deleted (with its images) with the stack.
  const repository = resources[idOf(image.repository)]!;
  assert.equal(repository.Properties.ImageTagMutability, 'IMMUTABLE');
  assert.deepEqual(repository.Properties.ImageScanningConfiguration, { ScanOnPush: true });
  assert.equal(repository.Properties.EmptyOnDelete, true);
  assert.equal(repository.DeletionPolicy, 'Delete');
  const lifecycle = JSON.parse((repository.Properties.LifecyclePolicy as { LifecyclePolicyText: string }).LifecyclePolicyText) as {
    rules: { selection: { countType: string; countNumber: number } }[];
  };
  assert.deepEqual(lifecycle.rules[0]!.selection.countType, 'imageCountMoreThan');
  assert.equal(lifecycle.rules[0]!.selection.countNumber, SANDBOX_IMAGES_KEPT);
});

test('default: the build has time limits, CloudFormation waits a little longer, and a failed build fails the deploy through a rule on its state changes', () => {
  const { stack, ofType, idOf, resources, statementsOf } = built;
  const image = stack.sandbox.task.image.build!;
  const [[, project]] = ofType('AWS::CodeBuild::Project') as [[string, Resource]];
  assert.equal(project.Properties.TimeoutInMinutes, SANDBOX_BUILD_TIMEOUT_MINUTES);
  assert.equal(project.Properties.QueuedTimeoutInMinutes, SANDBOX_BUILD_QUEUED_TIMEOUT_MINUTES);
  const [[, build]] = ofType('Custom::CDKContainerImageBuild') as [[string, Resource]];
  assert.equal(build.Properties.ServiceTimeout, String(SANDBOX_BUILD_SERVICE_TIMEOUT_SECONDS));
  assert.ok(SANDBOX_BUILD_SERVICE_TIMEOUT_SECONDS > (SANDBOX_BUILD_TIMEOUT_MINUTES + SANDBOX_BUILD_QUEUED_TIMEOUT_MINUTES) * 60);
  assert.ok(SANDBOX_BUILD_SERVICE_TIMEOUT_SECONDS <= 3600, 'CloudFormation allows at most an hour');

  const rule = resources[idOf(image.failures.rule)]!;
  const pattern = rule.Properties.EventPattern as Record<string, unknown>;
  assert.deepEqual(pattern, {
    source: ['aws.codebuild'],
    'detail-type': ['CodeBuild Build State Change'],
    detail: { 'project-name': [{ Ref: idOf(image.project) }], 'build-status': [{ 'anything-but': ['IN_PROGRESS', 'SUCCEEDED'] }] },
  });
  assert.equal(rule.Properties.EventBusName, undefined, 'CodeBuild sends its events to the default bus');
  const targets = rule.Properties.Targets as { Arn: unknown }[];
  assert.deepEqual(
    targets.map((t) => t.Arn),
    [{ 'Fn::GetAtt': [idOf(image.failures.handler), 'Arn'] }],
  );
  // Which builds' ends it hears, with the local cloud's event pattern matcher.
  const ended = (status: string) =>
    matchesEventPattern(
      { ...pattern, detail: { ...(pattern.detail as object), 'project-name': ['the-project'] } },
      {
        source: 'aws.codebuild',
        'detail-type': 'CodeBuild Build State Change',
        detail: { 'project-name': 'the-project', 'build-status': status },
      },
    );
  assert.deepEqual(['IN_PROGRESS', 'SUCCEEDED', 'FAILED', 'STOPPED', 'TIMED_OUT', 'FAULT'].filter(ended), [
    'FAILED',
    'STOPPED',
    'TIMED_OUT',
    'FAULT',
  ]);
  // The function only answers a presigned URL: no AWS permission beyond its logs and traces.
  const actions = statementsOf(idOf(image.failures.handler.role!)).flatMap((s) => list(s.Action));
  for (const action of actions) assert.match(action, /^(logs|xray):/);
});

test('default: the execution role pulls from exactly the sandbox repository', () => {
  const { stack, idOf, executionStatements } = built;
  const ecr = executionStatements().filter((s) => list(s.Action).some((a) => a.startsWith('ecr:')));
  const repositoryArn = { 'Fn::GetAtt': [idOf(stack.sandbox.task.image.build!.repository), 'Arn'] };
  assert.deepEqual(
    ecr.map((s) => [list(s.Action).sort(), s.Resource]),
    [
      [['ecr:BatchCheckLayerAvailability', 'ecr:BatchGetImage', 'ecr:GetDownloadUrlForLayer'], repositoryArn],
      [['ecr:GetAuthorizationToken'], '*'],
    ],
  );
});

test('default: the build logs to log groups with the retention setting; no role of the build has a managed policy', () => {
  const { stack, resources, idOf, statementsOf } = built;
  const image = stack.sandbox.task.image.build!;
  // CodeBuild writes to /aws/codebuild/<project>: the stack creates that group before the build runs.
  const projectLogs = resources[idOf(image.projectLogs)]!;
  assert.equal(flatten(projectLogs.Properties.LogGroupName), `/aws/codebuild/<${idOf(image.project)}>`);
  assert.equal(projectLogs.Properties.RetentionInDays, DEFAULT_SETTINGS.logRetentionDays);
  assert.equal(projectLogs.DeletionPolicy, 'Delete');
  assert.ok(resources[idOf(image.build.node.findChild('Resource'))]!.DependsOn!.includes(idOf(image.projectLogs)));
  // The custom resource function logs to its own group.
  const handler = resources[idOf(image.handler)]!;
  assert.deepEqual(handler.Properties.LoggingConfig, { LogGroup: { Ref: idOf(image.handlerLogs) } });
  assert.equal(resources[idOf(image.handlerLogs)]!.Properties.RetentionInDays, DEFAULT_SETTINGS.logRetentionDays);
  for (const role of [image.project.role!, image.handler.role!]) {
    assert.equal(resources[idOf(role)]!.Properties.ManagedPolicyArns, undefined, role.node.path);
  }
  // The function only starts this project's builds and writes its own logs.
  assert.deepEqual(
    statementsOf(idOf(image.handler.role!)).map((s) => [list(s.Action).sort(), s.Resource]),
    [
      [['codebuild:StartBuild'], { 'Fn::GetAtt': [idOf(image.project), 'Arn'] }],
      [['logs:CreateLogStream', 'logs:PutLogEvents'], { 'Fn::GetAtt': [idOf(image.handlerLogs), 'Arn'] }],
    ],
  );
});

test('default: the CodeBuild role pushes to the sandbox repository only; ECR Public login is two actions, not a managed policy', () => {
  const { stack, idOf, statementsOf } = built;
  const image = stack.sandbox.task.image.build!;
  const statements = statementsOf(idOf(image.project.role!));
  const push = statements.find((s) => list(s.Action).includes('ecr:PutImage'))!;
  assert.deepEqual(push.Resource, { 'Fn::GetAtt': [idOf(image.repository), 'Arn'] });
  const bearer = statements.find((s) => list(s.Action).includes('sts:GetServiceBearerToken'))!;
  assert.deepEqual(list(bearer.Action), ['sts:GetServiceBearerToken']);
  assert.deepEqual(bearer.Condition, { StringEquals: { 'sts:AWSServiceName': 'ecr-public.amazonaws.com' } });
  const everywhere = statements.filter((s) => s.Resource === '*').flatMap((s) => list(s.Action));
  assert.deepEqual(everywhere.sort(), ['ecr-public:GetAuthorizationToken', 'ecr:GetAuthorizationToken', 'sts:GetServiceBearerToken']);
});

test('no Docker needed: a real synth of the default configuration has no Docker image asset; the build context is a file asset with exactly what the Dockerfile copies', () => {
  const outdir = mkdtempSync(join(tmpdir(), 'threadwork-image-'));
  try {
    const bundled = synth({ bundle: true, outdir });
    const assembly = bundled.app.synth();
    const artifact = assembly.getStackByName(STACK_NAME);
    assert.deepEqual(
      artifact.assets.filter((asset) => asset.packaging === 'container-image'),
      [],
    );
    const assets = JSON.parse(readFileSync(join(assembly.directory, `${STACK_NAME}.assets.json`), 'utf8')) as {
      dockerImages?: Record<string, unknown>;
      files: Record<string, { source: { path: string; packaging: string }; destinations: Record<string, { objectKey: string }> }>;
    };
    assert.deepEqual(assets.dockerImages ?? {}, {});
    // The build downloads the context from the file asset its custom resource names.
    const build = bundled.template.findResources('Custom::CDKContainerImageBuild');
    const sourceUrl = flatten((Object.values(build)[0] as Resource).Properties.sourceS3Url);
    const objectKey = sourceUrl.split('/').at(-1)!;
    const context = Object.values(assets.files).find((f) => Object.values(f.destinations).some((d) => d.objectKey === objectKey));
    assert.ok(context, `no file asset ${objectKey}`);
    assert.equal(context.source.packaging, 'zip');
    const staged = join(assembly.directory, context.source.path);
    const files = (readdirSync(staged, { recursive: true, withFileTypes: true }) as Dirent[])
      .filter((entry) => entry.isFile())
      .map((entry) => relative(staged, join(entry.parentPath, entry.name)))
      .sort();
    assert.deepEqual(files, ['Dockerfile', 'dist/server.mjs', 'entrypoint.sh']);
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
});

test('sandboxImageUri (private ECR): the task definition runs that URI, the execution role pulls from exactly that repository, nothing is built', () => {
  const prebuilt = inspect(synth({ settings: { sandboxImageUri: PRIVATE_ECR_IMAGE } }));
  const { container, executionStatements, ofType, stack } = prebuilt;
  assert.equal(container().Image, PRIVATE_ECR_IMAGE);
  const ecr = executionStatements().filter((s) => list(s.Action).some((a) => a.startsWith('ecr:')));
  assert.deepEqual(
    ecr.map((s) => [list(s.Action).sort(), flatten(s.Resource)]),
    [
      [
        ['ecr:BatchCheckLayerAvailability', 'ecr:BatchGetImage', 'ecr:GetDownloadUrlForLayer'],
        'arn:<AWS::Partition>:ecr:eu-west-1:123456789012:repository/team/sandbox',
      ],
      [['ecr:GetAuthorizationToken'], '*'],
    ],
  );
  for (const type of ['AWS::CodeBuild::Project', 'Custom::CDKContainerImageBuild', 'AWS::ECR::Repository']) {
    assert.deepEqual(ofType(type), [], type);
  }
  assert.equal(stack.sandbox.task.image.build, undefined);
  // The ECR endpoints of the isolated VPC let that repository's image through too.
  for (const [, endpoint] of ofType('AWS::EC2::VPCEndpoint').filter(([, e]) => flatten(e.Properties.ServiceName).includes('.ecr.'))) {
    const statements = (endpoint.Properties.PolicyDocument as { Statement: { Resource: unknown }[] }).Statement;
    assert.deepEqual(list(statements[0]!.Resource).map(flatten), [
      'arn:<AWS::Partition>:ecr:<AWS::Region>:<AWS::AccountId>:repository/*',
      'arn:<AWS::Partition>:ecr:eu-west-1:123456789012:repository/team/sandbox',
    ]);
  }
});

test('sandboxImageUri (another registry, egress mode): the URI as is, and no ECR permission at all', () => {
  const uri = 'ghcr.io/acme/sandbox:1.2';
  const prebuilt = inspect(synth({ settings: { sandboxNetwork: 'egress', sandboxImageUri: uri } }));
  assert.equal(prebuilt.container().Image, uri);
  const actions = prebuilt.executionStatements().flatMap((s) => list(s.Action));
  assert.deepEqual(actions.sort(), ['logs:CreateLogStream', 'logs:PutLogEvents']);
});

test('cdk-nag: clean with the build and with either prebuilt image; the build acknowledgements are reasoned', () => {
  for (const settings of [
    {},
    { sandboxImageUri: PRIVATE_ECR_IMAGE },
    { sandboxNetwork: 'egress', sandboxImageUri: 'ghcr.io/acme/sandbox:1.2' },
  ]) {
    const synthesized = synth({ settings });
    const report = new AwsSolutionsChecks().validateScope(synthesized.app);
    assert.deepEqual(
      report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath).join(', ')}`),
      [],
      JSON.stringify(settings),
    );
  }
  const image = built.stack.sandbox.task.image.build!;
  const acknowledged = (construct: IConstruct) =>
    construct.node.metadata
      .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      .flatMap((entry) => Object.entries(entry.data as Record<string, string>));
  const acks = [image.project, image.project.role!, image.handler, image.failures.handler, image.failures.handler.role!].flatMap((c) => [
    ...acknowledged(c),
    ...(c.node.defaultChild ? acknowledged(c.node.defaultChild) : []),
  ]);
  assert.deepEqual(
    acks.map(([id]) => id.replace(/^annotation::/i, '')).sort(),
    [
      'AwsSolutions-CB4',
      'AwsSolutions-IAM5[Action::s3:GetBucket*]',
      'AwsSolutions-IAM5[Action::s3:GetObject*]',
      'AwsSolutions-IAM5[Action::s3:List*]',
      `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:codebuild:<AWS::Region>:<AWS::AccountId>:report-group/<${built.idOf(image.project)}>-*]`,
      `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:/aws/codebuild/<${built.idOf(image.project)}>:*]`,
      'AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-<AWS::AccountId>-<AWS::Region>/*]',
      'AwsSolutions-IAM5[Resource::*]',
      'AwsSolutions-IAM5[Resource::*]',
      'AwsSolutions-L1',
      'AwsSolutions-L1',
    ].sort(),
  );
  for (const [id, reason] of acks) assert.ok(reason.length >= 60, `${id}: reason too short`);
});
