// Container image references as a deployment setting gives them (sandboxImageUri), checked at synth.
//
//   <account>.dkr.ecr.<region>.amazonaws.com/<repository>[:tag | @sha256:digest]   a private ECR image
//   [registry[:port]/]<path>[:tag | @sha256:digest]                                 any other registry
//
// A private ECR image is the one case the stack can grant pull permission for (on exactly its
// repository); any other registry must be public, since the task definition carries no credentials.

/** ECS accepts at most this many characters in a container definition's image. */
export const MAX_IMAGE_URI_LENGTH = 255;

const COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const PATH = `${COMPONENT}(?:/${COMPONENT})*`;
const TAG = '[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}';
const DIGEST = 'sha256:[a-f0-9]{64}';
const DOMAIN = '(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]+)?';
const REFERENCE = new RegExp(`^(?:(${DOMAIN})/)?(${PATH})(?::(${TAG}))?(?:@(${DIGEST}))?$`);
// ECR's registry host names, FIPS and China partitions included.
const ECR_HOST = /^(\d{12})\.dkr\.ecr(?:-fips)?\.([a-z]{2}(?:-[a-z]+)+-\d)\.amazonaws\.com(?:\.cn)?$/;

export interface EcrImage {
  readonly account: string;
  readonly region: string;
  readonly repositoryName: string;
  readonly tag?: string;
  readonly digest?: string;
}

/** Whether the string is an image reference ECS can run (registry, path, optional tag or digest). */
export function isImageReference(uri: string): boolean {
  return uri.length <= MAX_IMAGE_URI_LENGTH && REFERENCE.test(uri);
}

/** The account, Region, repository and tag or digest of a private ECR image; undefined for any other registry. */
export function parseEcrImage(uri: string): EcrImage | undefined {
  const match = REFERENCE.exec(uri);
  const host = match?.[1] && ECR_HOST.exec(match[1]);
  if (!host) return undefined;
  return {
    account: host[1]!,
    region: host[2]!,
    repositoryName: match[2]!,
    ...(match[3] ? { tag: match[3] } : {}),
    ...(match[4] ? { digest: match[4] } : {}),
  };
}
