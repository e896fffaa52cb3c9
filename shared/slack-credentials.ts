// The Slack app's credentials: a Secrets Manager secret in AWS (SLACK_SECRET_ARN), plain variables
// in the local cloud (shared/secret-credentials.ts).
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import * as z from 'zod';
import { secretCredentials, type CredentialSource } from './secret-credentials.ts';

export interface SlackCredentials {
  signingSecret: string;
  botToken: string;
}

export type SlackCredentialSource = CredentialSource<SlackCredentials>;

const secretSchema = z.object({ signingSecret: z.string().min(1), botToken: z.string().min(1) });

/** The current credentials, from the secret (cached for maxAgeSeconds) or as given. */
export function slackCredentials(source: SlackCredentialSource, secrets: () => SecretsManagerClient): () => Promise<SlackCredentials> {
  return secretCredentials(
    source,
    secrets,
    secretSchema,
    'The Slack secret must be JSON {"signingSecret": "...", "botToken": "xoxb-..."} (see README, "Deploying")',
  );
}
