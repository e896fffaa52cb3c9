import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { once } from '../support/lazy.ts';

export const secretsClient = once(() => new SecretsManagerClient({}));
