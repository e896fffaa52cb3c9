// Slack credentials come from Secrets Manager in AWS (SLACK_SECRET_ARN), read through Powertools'
// secrets provider: a read is reused for maxAgeSeconds, so a rotated secret is picked up within
// that time, without a cold start. The local cloud passes them as environment variables instead.
// They never enter logs or the model's context.
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SecretsProvider } from '@aws-lambda-powertools/parameters/secrets';
import * as z from 'zod';

export interface SlackCredentials {
  signingSecret: string;
  botToken: string;
}

export type SlackCredentialSource = { secretArn: string; maxAgeSeconds: number } | { credentials: SlackCredentials };

const secretSchema = z.object({ signingSecret: z.string().min(1), botToken: z.string().min(1) });

/** The current credentials, from the secret (cached for maxAgeSeconds) or as given. */
export function slackCredentials(source: SlackCredentialSource, secrets: () => SecretsManagerClient): () => Promise<SlackCredentials> {
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
    const parsed = secretSchema.safeParse(json);
    if (!parsed.success) {
      throw new Error('The Slack secret must be JSON {"signingSecret": "...", "botToken": "xoxb-..."} (see README, "Deploying")');
    }
    return parsed.data;
  };
}

export const sameCredentials = (a: SlackCredentials, b: SlackCredentials) =>
  a.signingSecret === b.signingSecret && a.botToken === b.botToken;
