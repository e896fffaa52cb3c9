// App credentials come from Secrets Manager in AWS (a secret ARN in the environment), read through
// Powertools' secrets provider: a read is reused for maxAgeSeconds, so a rotated secret is picked up
// within that time, without a cold start. The local cloud passes them as environment variables
// instead. They never enter logs or the model's context.
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SecretsProvider } from '@aws-lambda-powertools/parameters/secrets';
import type * as z from 'zod';

export type CredentialSource<T> = { secretArn: string; maxAgeSeconds: number } | { credentials: T };

/**
 * The current credentials, from the secret (cached for maxAgeSeconds) or as given. A secret that is
 * not JSON of `schema`'s shape fails with `shapeError`, which says what it must be (never its value).
 */
export function secretCredentials<S extends z.ZodType>(
  source: CredentialSource<z.output<S>>,
  secrets: () => SecretsManagerClient,
  schema: S,
  shapeError: string,
): () => Promise<z.output<S>> {
  if ('credentials' in source) return async () => source.credentials;
  let provider: SecretsProvider | undefined;
  return async () => {
    provider ??= new SecretsProvider({ awsSdkV3Client: secrets() });
    const raw = await provider.get(source.secretArn, { maxAge: source.maxAgeSeconds });
    let json: unknown;
    try {
      json = JSON.parse(typeof raw === 'string' ? raw : '');
    } catch {
      json = undefined;
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) throw new Error(shapeError);
    return parsed.data;
  };
}
