// Bedrock model ids: a foundation model id ("anthropic.claude…") or a system-defined cross-Region
// inference profile id, which is the foundation model id with a geography prefix ("us.anthropic…").

// Prefixes of system-defined cross-Region inference profile ids.
const PROFILE_PREFIX = /^(global|us|us-gov|eu|apac|jp|au|ca)\.(.+)$/;

export interface ParsedModelId {
  /** The profile's scope ("global", "us", …) when the id names a cross-Region inference profile. */
  readonly profileScope?: string;
  /** The foundation model behind the id. */
  readonly foundationModelId: string;
}

export function parseModelId(modelId: string): ParsedModelId {
  const match = PROFILE_PREFIX.exec(modelId);
  if (!match) return { foundationModelId: modelId };
  return { profileScope: match[1], foundationModelId: match[2] ?? modelId };
}

// Where a geographic cross-Region profile may route a request (a representative set per
// geography): the foundation model must be allowed in each, as any may serve the request.
const GEOGRAPHY_REGIONS: Record<string, string[]> = {
  us: ['us-east-1', 'us-east-2', 'us-west-2'],
  'us-gov': ['us-gov-east-1', 'us-gov-west-1'],
  eu: ['eu-central-1', 'eu-west-1', 'eu-west-3', 'eu-north-1'],
  apac: ['ap-northeast-1', 'ap-south-1', 'ap-southeast-1', 'ap-southeast-2'],
  jp: ['ap-northeast-1', 'ap-northeast-3'],
  au: ['ap-southeast-2', 'ap-southeast-4'],
  ca: ['ca-central-1', 'ca-west-1'],
};

/** One IAM authorization: an action on a resource, in a request context. */
export interface ModelAuthorization {
  action: string;
  resource: string;
  context?: Record<string, string>;
}

/** Where the caller is: the partition, Region and account its ARNs name. */
export interface ArnScope {
  partition: string;
  region: string;
  account: string;
}

/**
 * What IAM checks for one model invocation (`action`, e.g. bedrock:InvokeModel) by a caller in
 * `where`: a foundation model in the caller's Region; or through an inference profile, the profile,
 * then the foundation model where it runs with bedrock:InferenceProfileArn naming the profile: for a
 * geographic profile in the source Region and each Region of its geography; for a global one in the
 * source Region and Region-less (aws:RequestedRegion "unspecified").
 */
export function modelInvocationAuthorizations(action: string, modelId: string, where: ArnScope): ModelAuthorization[] {
  const foundationModelArn = (model: string, region: string) => `arn:${where.partition}:bedrock:${region}::foundation-model/${model}`;
  const profileArnMatch = /^arn:[^:]+:bedrock:[^:]*:[^:]*:inference-profile\/(.+)$/.exec(modelId);
  const profileId = profileArnMatch?.[1] ?? (modelId.startsWith('arn:') ? undefined : modelId);
  const parsed = profileId === undefined ? undefined : parseModelId(profileId);
  if (!parsed?.profileScope) {
    return [{ action, resource: modelId.startsWith('arn:') ? modelId : foundationModelArn(modelId, where.region) }];
  }
  const profileArn = profileArnMatch
    ? modelId
    : `arn:${where.partition}:bedrock:${where.region}:${where.account}:inference-profile/${modelId}`;
  const throughProfile = (resource: string, region: string): ModelAuthorization => ({
    action,
    resource,
    context: { 'bedrock:InferenceProfileArn': profileArn, 'aws:RequestedRegion': region },
  });
  const model = parsed.foundationModelId;
  const destinations =
    parsed.profileScope === 'global'
      ? [throughProfile(foundationModelArn(model, ''), 'unspecified')]
      : (GEOGRAPHY_REGIONS[parsed.profileScope] ?? []).map((region) => throughProfile(foundationModelArn(model, region), region));
  return [{ action, resource: profileArn }, throughProfile(foundationModelArn(model, where.region), where.region), ...destinations];
}
