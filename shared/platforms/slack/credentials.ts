// The Slack app's credentials: a Secrets Manager secret in AWS (SLACK_SECRET_ARN), read and re-read
// as shared/platforms/secret-credentials.ts says.
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import * as z from 'zod';
import { parseSecret, secretCredentials, type CredentialReader, type CredentialSource } from '../secret-credentials.ts';

export interface SlackCredentials {
  signingSecret: string;
  botToken: string;
}

export type SlackCredentialSource = CredentialSource<SlackCredentials>;
export type SlackCredentialReader = CredentialReader<SlackCredentials>;

const secretSchema = z.object({ signingSecret: z.string().min(1), botToken: z.string().min(1) });

/** The secret's value as the functions read it; an error that says what it must be. */
export const parseSlackSecret = (raw: unknown): SlackCredentials =>
  parseSecret(
    raw,
    secretSchema,
    'The Slack secret must be JSON {"signingSecret": "...", "botToken": "xoxb-..."} (see README, "Deploying")',
  );

export function slackCredentials(
  source: SlackCredentialSource,
  secrets: () => SecretsManagerClient,
  now: () => number = Date.now,
): SlackCredentialReader {
  return secretCredentials(source, secrets, parseSlackSecret, now);
}
