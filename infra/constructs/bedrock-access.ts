// Least-privilege Bedrock access for one model. A cross-Region inference profile id
// ("global.anthropic…", "us.anthropic…") is invoked through the profile in this Region, and
// Bedrock then runs the underlying foundation model in whichever Region has capacity, so the role
// needs the profile plus that one foundation model in every Region, and only through the profile.
import { Aws, Stack } from 'aws-cdk-lib';
import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { Construct } from 'constructs';
import { parseModelId } from '../../shared/model/ids.ts';

export { parseModelId, type ParsedModelId } from '../../shared/model/ids.ts';

/** Converse uses InvokeModel; ConverseStream uses InvokeModelWithResponseStream. */
export const BEDROCK_INVOKE_ACTIONS = ['bedrock:InvokeModel', 'bedrock:InvokeModelWithResponseStream'];

/** The foundation model in every Region: where a cross-Region profile may run it. */
export function anyRegionFoundationModelArn(foundationModelId: string): string {
  return `arn:${Aws.PARTITION}:bedrock:*::foundation-model/${foundationModelId}`;
}

export function bedrockInvokeStatements(scope: Construct, modelId: string): PolicyStatement[] {
  const stack = Stack.of(scope);
  const { profileScope, foundationModelId } = parseModelId(modelId);

  if (!profileScope) {
    // A plain foundation model id is invoked in this Region only.
    return [
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: BEDROCK_INVOKE_ACTIONS,
        resources: [`arn:${Aws.PARTITION}:bedrock:${Aws.REGION}::foundation-model/${foundationModelId}`],
      }),
    ];
  }

  const profileArn = stack.formatArn({ service: 'bedrock', resource: 'inference-profile', resourceName: modelId });
  const foundationModelArns = [anyRegionFoundationModelArn(foundationModelId)];
  // A global profile's requests are authorized against a Region-less foundation model ARN too.
  if (profileScope === 'global') {
    foundationModelArns.push(`arn:${Aws.PARTITION}:bedrock:::foundation-model/${foundationModelId}`);
  }
  return [
    new PolicyStatement({ effect: Effect.ALLOW, actions: BEDROCK_INVOKE_ACTIONS, resources: [profileArn] }),
    new PolicyStatement({
      effect: Effect.ALLOW,
      actions: BEDROCK_INVOKE_ACTIONS,
      resources: foundationModelArns,
      // The foundation model is reachable only through this deployment's profile, never directly.
      conditions: { StringEquals: { 'bedrock:InferenceProfileArn': profileArn } },
    }),
  ];
}
