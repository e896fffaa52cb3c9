// Slack credentials come from Secrets Manager in AWS (SLACK_SECRET_ARN), read through Powertools'
// secrets provider: a read is reused for maxAgeSeconds, so a rotated secret is picked up within
// that time, without a cold start. A request whose signature fails may re-read it at once (at most
// once per rereadSeconds per container, so forged requests cannot drive up reads): that is how the
// signing secret of a Slack app created a moment ago verifies the app's first requests. Tests may pass credentials as they are. They
// never enter logs or the model's context.
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SecretsProvider } from '@aws-lambda-powertools/parameters/secrets';
import * as z from 'zod';

export interface SlackCredentials {
  signingSecret: string;
  botToken: string;
}

export type SlackCredentialSource = { secretArn: string; maxAgeSeconds: number; rereadSeconds: number } | { credentials: SlackCredentials };

export interface SlackCredentialReader {
  /** The current credentials, from the secret (a read is reused for maxAgeSeconds) or as given. */
  current(): Promise<SlackCredentials>;
  /**
   * Reads the secret again now, unless it was re-read less than rereadSeconds ago: true when
   * the credentials differ from the last ones `current` or `reread` gave.
   */
  reread(): Promise<boolean>;
}

const secretSchema = z.object({ signingSecret: z.string().min(1), botToken: z.string().min(1) });

/** The secret's value as the functions read it; an error that says what it must be. */
export function parseSlackSecret(raw: unknown): SlackCredentials {
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
}

export function slackCredentials(
  source: SlackCredentialSource,
  secrets: () => SecretsManagerClient,
  now: () => number = Date.now,
): SlackCredentialReader {
  if ('credentials' in source) return { current: async () => source.credentials, reread: async () => false };
  let provider: SecretsProvider | undefined;
  let last: SlackCredentials | undefined;
  let rereadAt = -Infinity;
  const read = async (forceFetch: boolean) => {
    provider ??= new SecretsProvider({ awsSdkV3Client: secrets() });
    last = parseSlackSecret(await provider.get(source.secretArn, { maxAge: source.maxAgeSeconds, forceFetch }));
    return last;
  };
  return {
    current: () => read(false),
    async reread() {
      if (now() - rereadAt < source.rereadSeconds * 1000) return false;
      rereadAt = now();
      const before = last;
      const latest = await read(true);
      return !before || !sameCredentials(before, latest);
    },
  };
}

export const sameCredentials = (a: SlackCredentials, b: SlackCredentials) =>
  a.signingSecret === b.signingSecret && a.botToken === b.botToken;
