import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { once } from '../lazy.ts';

export const secretsClient = once(() => new SecretsManagerClient({}));
