// An ECR stand-in for the stack's image repositories: DescribeImages, and BatchDeleteImage to take
// an image away. A repository starts with the images the deploy pushed (the sandbox image, which
// locally is the bundled command server, not a container); the local ECS pulls from it (hasImage).
import { createHash } from 'node:crypto';
import { ApiError, epochSeconds, serveAwsJson } from './aws-protocol.ts';
import { listenLocally, type LocalHttpServer } from './http-server.ts';
import { LOCAL_ACCOUNT } from './template.ts';

export interface LocalImage {
  repositoryName: string;
  tag: string;
}

interface StoredImage {
  tag: string;
  digest: string;
  pushedAt: Date;
}

type ImageId = { imageTag?: string; imageDigest?: string };

export interface LocalEcr extends LocalHttpServer {
  /** Whether a pull of the image (by tag or digest) would find it. */
  hasImage(repositoryName: string, id: ImageId): boolean;
  /** What a deploy's image build does: the image is pushed to its repository. */
  push(image: LocalImage): void;
}

export async function startLocalEcr(repositoryNames: string[], images: LocalImage[]): Promise<LocalEcr> {
  const repositories = new Map<string, StoredImage[]>(repositoryNames.map((name) => [name, []]));
  const push = (image: LocalImage) => {
    const digest = `sha256:${createHash('sha256').update(`${image.repositoryName}:${image.tag}`).digest('hex')}`;
    const stored = repositories.get(image.repositoryName) ?? [];
    repositories.set(image.repositoryName, [
      ...stored.filter((s) => s.tag !== image.tag),
      { tag: image.tag, digest, pushedAt: new Date() },
    ]);
  };
  for (const image of images) if (repositories.has(image.repositoryName)) push(image);
  const repository = (input: Record<string, unknown>) => {
    const name = String(input.repositoryName);
    const found = repositories.get(name);
    if (!found) {
      throw new ApiError(
        'RepositoryNotFoundException',
        `The repository with name '${name}' does not exist in the registry with id '${LOCAL_ACCOUNT}'`,
      );
    }
    return { name, images: found };
  };
  const ids = (input: Record<string, unknown>) => (Array.isArray(input.imageIds) ? (input.imageIds as ImageId[]) : []);
  const matches = (image: StoredImage, id: ImageId) =>
    (id.imageTag === undefined || id.imageTag === image.tag) && (id.imageDigest === undefined || id.imageDigest === image.digest);
  const detail = (name: string, image: StoredImage) => ({
    registryId: LOCAL_ACCOUNT,
    repositoryName: name,
    imageDigest: image.digest,
    imageTags: [image.tag],
    imagePushedAt: epochSeconds(image.pushedAt),
  });
  const server = await listenLocally(
    (request, response) =>
      void serveAwsJson(
        {
          service: 'ecr',
          targetPrefix: 'AmazonEC2ContainerRegistry_V20150921.',
          contentType: 'application/x-amz-json-1.1',
          internalErrorType: 'ServerException',
        },
        {
          DescribeImages(input) {
            const { name, images: stored } = repository(input);
            const wanted = ids(input);
            if (wanted.length === 0) return { imageDetails: stored.map((image) => detail(name, image)) };
            return {
              imageDetails: wanted.map((id) => {
                const image = stored.find((candidate) => matches(candidate, id));
                if (!image) {
                  throw new ApiError(
                    'ImageNotFoundException',
                    `The image with imageId {imageDigest:'${id.imageDigest ?? 'null'}', imageTag:'${id.imageTag ?? 'null'}'} does not exist within the repository with name '${name}' in the registry with id '${LOCAL_ACCOUNT}'`,
                  );
                }
                return detail(name, image);
              }),
            };
          },
          BatchDeleteImage(input) {
            const { name, images: stored } = repository(input);
            const deleted: ImageId[] = [];
            const failures: unknown[] = [];
            for (const id of ids(input)) {
              const index = stored.findIndex((candidate) => matches(candidate, id));
              if (index < 0) {
                failures.push({ imageId: id, failureCode: 'ImageNotFound', failureReason: 'Requested image not found' });
                continue;
              }
              const [image] = stored.splice(index, 1);
              deleted.push({ imageTag: image!.tag, imageDigest: image!.digest });
            }
            return { imageIds: deleted, failures, repositoryName: name };
          },
        },
        request,
        response,
      ),
  );
  return {
    ...server,
    hasImage: (repositoryName, id) => (repositories.get(repositoryName) ?? []).some((image) => matches(image, id)),
    push,
  };
}
