// The AWS side an operator sees of the local cloud's stack: STS (who the caller is), CloudFormation
// (the stack, its outputs resolved from the template, its resources), ECR (the images the deploy
// pushed, which the local ECS pulls), IAM (what the stack's roles may do), Lambda (function
// configuration, account concurrency), CloudWatch (alarms, Lambda metrics), SNS (the alarm topic's
// subscriptions) and Service Quotas, next to the front doors the functions use (Secrets Manager,
// S3, ECS). `npm run doctor` runs against these as against AWS.
import { parseEcrImage } from '../../../../infra/image-uri.ts';
import { startLocalCloudFormation, type LocalStack, type LocalStackStatus } from '../cloudformation.ts';
import { startLocalCloudWatch } from '../cloudwatch.ts';
import { startLocalEcr } from '../ecr.ts';
import { startLocalIamApi } from '../iam-api.ts';
import type { LocalIam } from '../iam/index.ts';
import { startLocalLambdaApi } from '../lambda-api.ts';
import type { LocalLambda } from '../lambda/runtime.ts';
import { localPhysicalName, resolveCloudFormation } from '../resources.ts';
import { startLocalServiceQuotas, type LocalServiceQuotas } from '../service-quotas.ts';
import { LAMBDA_CONCURRENCY_QUOTA } from '../../../../infra/quota-codes.ts';
import { startLocalSns, type LocalSns } from '../sns.ts';
import { OPERATOR_IDENTITY, startLocalSts } from '../sts.ts';
import { LOCAL_ACCOUNT, LOCAL_PARTITION } from '../template.ts';
import { resourcesOfType, type Template } from './resources.ts';

export interface DeploymentEndpoints {
  stackName: string;
  /** AWS_ENDPOINT_URL_<SERVICE> for every service above. */
  variables: Record<string, string>;
  /** After a redeploy: the stack is UPDATE_COMPLETE, with the new template's outputs. */
  updated(): void;
  /** The stack's status as CloudFormation would leave it (a failed update rolled back, say). */
  setStatus(status: LocalStackStatus): void;
  /** The account's quotas (setQuota gives it others). */
  quotas: LocalServiceQuotas;
  /** The alarm topic's subscriptions (confirm: the recipient followed the mail's link). */
  sns: LocalSns;
  /** Why pulling a task definition's image fails, as Fargate would say it; undefined when it is there. */
  pullFailure(taskDefinitionArn: string): string | undefined;
  close(): Promise<void>;
}

export interface DeploymentInputs {
  stackName: string;
  template: () => Template;
  /** The API stand-in's URL: the only address of the webhook API that works locally. */
  apiUrl: string;
  /** The Region the local cloud's clients use. */
  region: string;
  /** The front doors of the services the functions call too: Secrets Manager, S3, ECS. */
  frontDoors: { secretsManager: string; s3: string; ecs: string };
  iam: () => LocalIam;
  lambda: Pick<LocalLambda, 'configuration' | 'invocations'>;
}

/** An ECR image URI names the Region the clients use, as one in AWS names a real Region. */
const inRegion = (uri: string, region: string) => uri.replace(/\.dkr\.ecr\.[^.]+\.amazonaws\.com\//, `.dkr.ecr.${region}.amazonaws.com/`);

/** The template's outputs as CloudFormation resolves them, with local addresses where AWS's would not work. */
function stackOutputs(inputs: DeploymentInputs): LocalStack['outputs'] {
  const template = inputs.template();
  const outputs = (template as { Outputs?: Record<string, { Value: unknown; Description?: string }> }).Outputs ?? {};
  const local: Record<string, string> = {
    ApiUrl: `${inputs.apiUrl}/`,
    SlackEventsUrl: `${inputs.apiUrl}/slack/events`,
    TeamsMessagingEndpoint: `${inputs.apiUrl}/api/messages`,
  };
  return Object.entries(outputs).map(([key, output]) => {
    let value = local[key] ?? String(resolveCloudFormation(template, output.Value));
    if (key === 'SandboxImageUri') value = inRegion(value, inputs.region);
    return { key, value, description: output.Description };
  });
}

/** Each resource with the id CloudFormation gives it (what Ref yields; a placeholder where nothing local knows it). */
function stackResources(template: Template): LocalStack['resources'] {
  return Object.entries(template.Resources).map(([logicalId, resource]) => {
    let physicalId: string;
    try {
      physicalId = String(resolveCloudFormation(template, { Ref: logicalId }));
    } catch {
      physicalId = `local-${logicalId}`;
    }
    return { logicalId, physicalId, type: resource.Type };
  });
}

/** The image a task definition's first container runs. */
function taskDefinitionImage(template: Template, taskDefinitionArn: string): string | undefined {
  const found = resourcesOfType(template, 'AWS::ECS::TaskDefinition').find(
    ([id]) => String(resolveCloudFormation(template, { Ref: id })) === taskDefinitionArn,
  );
  const image = found?.[1].Properties?.ContainerDefinitions?.[0]?.Image;
  return image === undefined ? undefined : String(resolveCloudFormation(template, image));
}

export async function startDeploymentEndpoints(inputs: DeploymentInputs): Promise<DeploymentEndpoints> {
  const createdAt = new Date();
  let status: LocalStackStatus = 'CREATE_COMPLETE';
  const stack = (): LocalStack => ({
    name: inputs.stackName,
    id: `arn:${LOCAL_PARTITION}:cloudformation:${inputs.region}:${LOCAL_ACCOUNT}:stack/${inputs.stackName}/00000000-0000-0000-0000-000000000000`,
    status,
    createdAt,
    outputs: stackOutputs(inputs),
    resources: stackResources(inputs.template()),
  });
  const template = inputs.template();
  const resolve = (value: unknown) => String(resolveCloudFormation(template, value));
  const repositories = resourcesOfType(template, 'AWS::ECR::Repository').map(([id]) => localPhysicalName(template, id));
  // The images the deploy pushed: the sandbox image the task definition runs.
  const sandboxImage = parseEcrImage(stack().outputs.find((o) => o.key === 'SandboxImageUri')?.value ?? '');
  const images = sandboxImage?.tag ? [{ repositoryName: sandboxImage.repositoryName, tag: sandboxImage.tag }] : [];
  const topics = resourcesOfType(template, 'AWS::SNS::Topic').map(([id]) => resolve({ Ref: id }));
  const subscriptions = resourcesOfType(template, 'AWS::SNS::Subscription').map(([, s]) => ({
    topicArn: resolve(s.Properties.TopicArn),
    protocol: resolve(s.Properties.Protocol),
    endpoint: resolve(s.Properties.Endpoint),
  }));
  const quotas = await startLocalServiceQuotas();
  const [sts, cloudFormation, ecr, iamApi, lambdaApi, cloudWatch, sns] = await Promise.all([
    startLocalSts((accessKeyId) => {
      const principal = inputs.iam().principalOf(accessKeyId);
      if (principal === 'operator') return OPERATOR_IDENTITY;
      return {
        Arn: `arn:${LOCAL_PARTITION}:sts::${LOCAL_ACCOUNT}:assumed-role/${principal.role}/local`,
        UserId: `AROALOCAL:${principal.role}`,
        Account: LOCAL_ACCOUNT,
      };
    }),
    startLocalCloudFormation(stack),
    startLocalEcr(repositories, images),
    startLocalIamApi(inputs.iam),
    startLocalLambdaApi({
      template: inputs.template,
      lambda: inputs.lambda,
      concurrency: () => quotas.value('lambda', LAMBDA_CONCURRENCY_QUOTA) ?? 1000,
    }),
    startLocalCloudWatch({ template: inputs.template, invocations: () => inputs.lambda.invocations }),
    startLocalSns(topics, subscriptions),
  ]);
  return {
    stackName: inputs.stackName,
    variables: {
      AWS_ENDPOINT_URL_STS: sts.url,
      AWS_ENDPOINT_URL_CLOUDFORMATION: cloudFormation.url,
      AWS_ENDPOINT_URL_ECR: ecr.url,
      AWS_ENDPOINT_URL_IAM: iamApi.url,
      AWS_ENDPOINT_URL_LAMBDA: lambdaApi.url,
      AWS_ENDPOINT_URL_CLOUDWATCH: cloudWatch.url,
      AWS_ENDPOINT_URL_SNS: sns.url,
      AWS_ENDPOINT_URL_SERVICE_QUOTAS: quotas.url,
      AWS_ENDPOINT_URL_SECRETS_MANAGER: inputs.frontDoors.secretsManager,
      AWS_ENDPOINT_URL_S3: inputs.frontDoors.s3,
      AWS_ENDPOINT_URL_ECS: inputs.frontDoors.ecs,
    },
    updated() {
      // The deploy built and pushed the images its task definitions name before updating them.
      const next = inputs.template();
      for (const [id] of resourcesOfType(next, 'AWS::ECS::TaskDefinition')) {
        const uri = taskDefinitionImage(next, String(resolveCloudFormation(next, { Ref: id })));
        const image = uri === undefined ? undefined : parseEcrImage(inRegion(uri, inputs.region));
        if (image?.tag) ecr.push({ repositoryName: image.repositoryName, tag: image.tag });
      }
      status = 'UPDATE_COMPLETE';
    },
    setStatus(next) {
      status = next;
    },
    quotas,
    sns,
    pullFailure(taskDefinitionArn) {
      const uri = taskDefinitionImage(inputs.template(), taskDefinitionArn);
      const image = uri === undefined ? undefined : parseEcrImage(inRegion(uri, inputs.region));
      // Images of other registries are public: the local cloud does not pull them.
      if (!uri || !image || ecr.hasImage(image.repositoryName, { imageTag: image.tag, imageDigest: image.digest })) return undefined;
      return `CannotPullContainerError: pull image manifest has been retried 1 time(s): failed to resolve ref ${inRegion(uri, inputs.region)}: not found`;
    },
    async close() {
      await Promise.allSettled([sts, cloudFormation, ecr, iamApi, lambdaApi, cloudWatch, sns, quotas].map((server) => server.close()));
    },
  };
}
