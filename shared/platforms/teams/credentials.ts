// The Teams app's credentials (the Azure Bot's app id, its client secret and its tenant): a Secrets
// Manager secret in AWS (TEAMS_SECRET_ARN), read and re-read as shared/platforms/secret-credentials.ts says.
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import * as z from 'zod';
import { parseSecret, secretCredentials, type CredentialReader, type CredentialSource } from '../secret-credentials.ts';

export interface TeamsCredentials {
  appId: string;
  appPassword: string;
  /** The app's Entra tenant; empty only for a multi-tenant app. */
  tenantId: string;
}

const secretSchema = z.object({ appId: z.string().min(1), appPassword: z.string().min(1), tenantId: z.string().default('') });

export const parseTeamsSecret = (raw: unknown): TeamsCredentials =>
  parseSecret(
    raw,
    secretSchema,
    'The Teams secret must be JSON {"appId": "...", "appPassword": "...", "tenantId": "..."} (see README, "Teams")',
  );

export function teamsCredentials(
  source: CredentialSource<TeamsCredentials>,
  secrets: () => SecretsManagerClient,
): CredentialReader<TeamsCredentials> {
  return secretCredentials(source, secrets, parseTeamsSecret);
}
