// A Secrets Manager stand-in for the stack's secrets (the Slack app's credentials): the real
// SecretsManagerClient, and Powertools' provider over it, talk to it over HTTP (awsJson1.1). A
// secret is known by its ARN or its name, as in AWS; the operator changes it with PutSecretValue.
import { randomUUID } from 'node:crypto';
import { ApiError, serveAwsJson } from './aws-protocol.ts';
import { listenLocally } from './http-server.ts';

export interface LocalSecret {
  arn: string;
  name: string;
  /** The current SecretString; undefined: the secret has no value yet. */
  value: string | undefined;
}

export interface LocalSecretsManager {
  endpoint: string;
  /** Adds a secret (as CloudFormation creates it). */
  create(secret: LocalSecret): void;
  /** The secret named by ARN or name, to read or change directly in tests. */
  secret(id: string): LocalSecret | undefined;
  /** GetSecretValue calls answered so far. */
  readonly reads: number;
  close(): Promise<void>;
}

const notFound = () => new ApiError('ResourceNotFoundException', "Secrets Manager can't find the specified secret.");

export async function startLocalSecretsManager(secrets: LocalSecret[] = []): Promise<LocalSecretsManager> {
  const known = new Map<string, LocalSecret>();
  let reads = 0;
  const find = (id: unknown) => known.get(String(id));
  const found = (id: unknown) => {
    const secret = find(id);
    if (!secret) throw notFound();
    return secret;
  };
  const operations = {
    GetSecretValue(input: Record<string, unknown>) {
      reads++;
      const secret = found(input.SecretId);
      if (secret.value === undefined) {
        throw new ApiError(
          'ResourceNotFoundException',
          "Secrets Manager can't find the specified secret value for staging label: AWSCURRENT",
        );
      }
      return { ARN: secret.arn, Name: secret.name, SecretString: secret.value, VersionId: randomUUID(), VersionStages: ['AWSCURRENT'] };
    },
    PutSecretValue(input: Record<string, unknown>) {
      const secret = found(input.SecretId);
      if (typeof input.SecretString !== 'string' || input.SecretString === '') {
        throw new ApiError('InvalidParameterException', 'You must provide either SecretString or SecretBinary.');
      }
      secret.value = input.SecretString;
      return { ARN: secret.arn, Name: secret.name, VersionId: randomUUID(), VersionStages: ['AWSCURRENT'] };
    },
    DescribeSecret(input: Record<string, unknown>) {
      const secret = found(input.SecretId);
      return { ARN: secret.arn, Name: secret.name };
    },
  };
  const server = await listenLocally(
    (request, response) =>
      void serveAwsJson(
        {
          service: 'secretsmanager',
          targetPrefix: 'secretsmanager.',
          contentType: 'application/x-amz-json-1.1',
          internalErrorType: 'InternalServiceError',
        },
        operations,
        request,
        response,
      ),
  );
  const standIn: LocalSecretsManager = {
    endpoint: server.url,
    create(secret) {
      known.set(secret.arn, secret);
      known.set(secret.name, secret);
    },
    secret: find,
    get reads() {
      return reads;
    },
    close: () => server.close(),
  };
  for (const secret of secrets) standIn.create(secret);
  return standIn;
}
