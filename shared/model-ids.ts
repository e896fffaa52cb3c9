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
