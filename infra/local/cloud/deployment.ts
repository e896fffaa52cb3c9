// The AWS side an operator sees of the local cloud's stack: STS (who the caller is), CloudFormation
// (the stack and its outputs, resolved from the template) and ECR (the images the deploy pushed),
// next to the Secrets Manager front door the functions use. `npm run doctor` runs against these as
// against AWS.
import { parseEcrImage } from '../../image-uri.ts';
import { startLocalCloudFormation, type LocalStack } from '../cloudformation.ts';
import { startLocalEcr } from '../ecr.ts';
import type { Principal } from '../iam/index.ts';
import { localPhysicalName, resolveCloudFormation } from '../resources.ts';
import { OPERATOR_IDENTITY, startLocalSts } from '../sts.ts';
import { LOCAL_ACCOUNT, LOCAL_PARTITION } from '../template.ts';
import { resourcesOfType, type Template } from './resources.ts';

export interface DeploymentEndpoints {
  stackName: string;
  /** AWS_ENDPOINT_URL_<SERVICE> for STS, CloudFormation, ECR and Secrets Manager. */
  variables: Record<string, string>;
  /** After a redeploy: the stack is UPDATE_COMPLETE, with the new template's outputs. */
  updated(): void;
  close(): Promise<void>;
}

export interface DeploymentInputs {
  stackName: string;
  template: () => Template;
  /** The API stand-in's URL: the only address of the webhook API that works locally. */
  apiUrl: string;
  /** The Region the local cloud's clients use. */
  region: string;
  secretsManager: string;
  principalOf(accessKeyId: string | undefined): Principal;
}

/** The template's outputs as CloudFormation resolves them, with local addresses where AWS's would not work. */
function stackOutputs(inputs: DeploymentInputs): LocalStack['outputs'] {
  const template = inputs.template();
  const outputs = (template as { Outputs?: Record<string, { Value: unknown; Description?: string }> }).Outputs ?? {};
  const local: Record<string, string> = { ApiUrl: `${inputs.apiUrl}/`, SlackEventsUrl: `${inputs.apiUrl}/slack/events` };
  return Object.entries(outputs).map(([key, output]) => {
    let value = local[key] ?? String(resolveCloudFormation(template, output.Value));
    // An ECR image URI names the Region the clients use, as one in AWS names a real Region.
    if (key === 'SandboxImageUri') value = value.replace(/\.dkr\.ecr\.[^.]+\.amazonaws\.com\//, `.dkr.ecr.${inputs.region}.amazonaws.com/`);
    return { key, value, description: output.Description };
  });
}

export async function startDeploymentEndpoints(inputs: DeploymentInputs): Promise<DeploymentEndpoints> {
  const createdAt = new Date();
  let status: LocalStack['status'] = 'CREATE_COMPLETE';
  const stack = (): LocalStack => ({
    name: inputs.stackName,
    id: `arn:${LOCAL_PARTITION}:cloudformation:${inputs.region}:${LOCAL_ACCOUNT}:stack/${inputs.stackName}/00000000-0000-0000-0000-000000000000`,
    status,
    createdAt,
    outputs: stackOutputs(inputs),
  });
  const template = inputs.template();
  const repositories = resourcesOfType(template, 'AWS::ECR::Repository').map(([id]) => localPhysicalName(template, id));
  // The images the deploy pushed: the sandbox image the task definition runs.
  const sandboxImage = parseEcrImage(stack().outputs.find((o) => o.key === 'SandboxImageUri')?.value ?? '');
  const images = sandboxImage?.tag ? [{ repositoryName: sandboxImage.repositoryName, tag: sandboxImage.tag }] : [];
  const [sts, cloudFormation, ecr] = await Promise.all([
    startLocalSts((accessKeyId) => {
      const principal = inputs.principalOf(accessKeyId);
      if (principal === 'operator') return OPERATOR_IDENTITY;
      return {
        Arn: `arn:${LOCAL_PARTITION}:sts::${LOCAL_ACCOUNT}:assumed-role/${principal.role}/local`,
        UserId: `AROALOCAL:${principal.role}`,
        Account: LOCAL_ACCOUNT,
      };
    }),
    startLocalCloudFormation(stack),
    startLocalEcr(repositories, images),
  ]);
  return {
    stackName: inputs.stackName,
    variables: {
      AWS_ENDPOINT_URL_STS: sts.url,
      AWS_ENDPOINT_URL_CLOUDFORMATION: cloudFormation.url,
      AWS_ENDPOINT_URL_ECR: ecr.url,
      AWS_ENDPOINT_URL_SECRETS_MANAGER: inputs.secretsManager,
    },
    updated() {
      status = 'UPDATE_COMPLETE';
    },
    async close() {
      await Promise.allSettled([sts.close(), cloudFormation.close(), ecr.close()]);
    },
  };
}
