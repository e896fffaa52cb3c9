// App credentials come from Secrets Manager in AWS (a secret ARN in the environment), read through
// Powertools' secrets provider: a read is reused for maxAgeSeconds, so a rotated secret is picked up
// within that time, without a cold start. A request that fails verification may re-read it at once
// (at most once per rereadSeconds per container, so forged requests cannot drive up reads): that is
// how the secret of an app created a moment ago verifies the app's first requests. Tests may pass
// credentials as they are. They never enter logs or the model's context.
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SecretsProvider } from '@aws-lambda-powertools/parameters/secrets';

export type CredentialSource<T> = { secretArn: string; maxAgeSeconds: number; rereadSeconds: number } | { credentials: T };

export interface CredentialReader<T> {
  /** The current credentials, from the secret (a read is reused for maxAgeSeconds) or as given. */
  current(): Promise<T>;
  /**
   * Reads the secret again now, unless it was re-read less than rereadSeconds ago: true when
   * the credentials differ from the last ones `current` or `reread` gave.
   */
  reread(): Promise<boolean>;
}

export function secretCredentials<T>(
  source: CredentialSource<T>,
  secrets: () => SecretsManagerClient,
  parse: (raw: unknown) => T,
  now: () => number = Date.now,
): CredentialReader<T> {
  if ('credentials' in source) return { current: async () => source.credentials, reread: async () => false };
  let provider: SecretsProvider | undefined;
  let last: T | undefined;
  let rereadAt = -Infinity;
  const read = async (forceFetch: boolean) => {
    provider ??= new SecretsProvider({ awsSdkV3Client: secrets() });
    last = parse(await provider.get(source.secretArn, { maxAge: source.maxAgeSeconds, forceFetch }));
    return last;
  };
  return {
    current: () => read(false),
    async reread() {
      if (now() - rereadAt < source.rereadSeconds * 1000) return false;
      rereadAt = now();
      const before = last;
      const latest = await read(true);
      return !before || JSON.stringify(before) !== JSON.stringify(latest);
    },
  };
}
