// Slack credentials come from Secrets Manager in AWS (SLACK_SECRET_ARN); the local cloud passes them
// as environment variables instead. They never enter logs or the model's context.
import { GetSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { z } from 'zod';

export interface SlackCredentials {
  signingSecret: string;
  botToken: string;
}

const secretSchema = z.object({ signingSecret: z.string().min(1), botToken: z.string().min(1) });

export async function loadSlackCredentials(
  env: Record<string, string | undefined>,
  secrets: () => SecretsManagerClient,
): Promise<SlackCredentials> {
  if (env.SLACK_SECRET_ARN) {
    const out = await secrets().send(new GetSecretValueCommand({ SecretId: env.SLACK_SECRET_ARN }));
    const parsed = secretSchema.safeParse(JSON.parse(out.SecretString ?? '{}'));
    if (!parsed.success) {
      throw new Error('The Slack secret must be JSON {"signingSecret": "...", "botToken": "xoxb-..."} (see README, "Deploying")');
    }
    return parsed.data;
  }
  const { SLACK_SIGNING_SECRET: signingSecret, SLACK_BOT_TOKEN: botToken } = env;
  if (!signingSecret || !botToken) {
    throw new Error('Set SLACK_SECRET_ARN, or SLACK_SIGNING_SECRET and SLACK_BOT_TOKEN');
  }
  return { signingSecret, botToken };
}
