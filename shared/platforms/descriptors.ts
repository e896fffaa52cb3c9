// The chat platforms this runtime knows, as every function and the infra know them: without their
// SDKs (shared/platforms/platform.ts). A new platform adds its descriptor here and its ChatPlatform
// to shared/platforms/platforms.ts, in the same order.
import type { PlatformDescriptor } from './platform.ts';
import { slackDescriptor } from './slack/descriptor.ts';
import { teamsDescriptor } from './teams/descriptor.ts';

export const PLATFORM_DESCRIPTORS = [slackDescriptor, teamsDescriptor] as const;

export type PlatformName = (typeof PLATFORM_DESCRIPTORS)[number]['name'];
export const PLATFORM_NAMES: readonly PlatformName[] = PLATFORM_DESCRIPTORS.map((platform) => platform.name);

/** The list as the contract types it, to iterate. */
const DESCRIPTORS: readonly PlatformDescriptor[] = PLATFORM_DESCRIPTORS;

/** The platform whose thread ids start with `name`, if this runtime knows it. */
export function descriptorNamed(name: string): PlatformDescriptor | undefined {
  return DESCRIPTORS.find((platform) => platform.name === name);
}

/** The webhook of the platform whose webhook function has this role (infra/function-entries.ts), if any. */
export function webhookOfRole(role: string): PlatformDescriptor['deployment']['webhook'] | undefined {
  return DESCRIPTORS.find((platform) => platform.deployment.webhook.role === role)?.deployment.webhook;
}

type Intersection<U> = (U extends unknown ? (union: U) => void : never) extends (all: infer I) => void ? I : never;

/** Every platform's environment variables: each chat function's environment has them all (shared/env.ts). */
export type PlatformEnvShape = Intersection<(typeof PLATFORM_DESCRIPTORS)[number]['env']['shape']>;
export const platformEnvShape = Object.assign({}, ...DESCRIPTORS.map((platform) => platform.env.shape)) as PlatformEnvShape;

/** The platforms a function's environment serves: those whose secret (or stand-in variables) it has. */
export const servedPlatforms = (env: Record<string, unknown>): PlatformDescriptor[] =>
  DESCRIPTORS.filter((platform) => platform.env.credentials(env) !== undefined);
