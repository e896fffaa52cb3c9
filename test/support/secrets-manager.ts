// A Secrets Manager stand-in that knows one secret, for the Slack credentials tests: the real
// SecretsManagerClient (and Powertools' provider over it) talks to it over HTTP.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiError, serveAwsJson } from '../../infra/local/aws-protocol.ts';

export interface SecretsStandIn {
  endpoint: string;
  /** The secret's current value; undefined: the secret does not exist (yet). */
  value: string | undefined;
  /** GetSecretValue calls so far. */
  reads: number;
  close(): Promise<void>;
}

export async function startSecretsManager(value?: string): Promise<SecretsStandIn> {
  const server = createServer(
    (request, response) =>
      void serveAwsJson(
        {
          service: 'secretsmanager',
          targetPrefix: 'secretsmanager.',
          contentType: 'application/x-amz-json-1.1',
          internalErrorType: 'InternalServiceError',
        },
        {
          GetSecretValue: (input) => {
            standIn.reads++;
            if (standIn.value === undefined)
              throw new ApiError('ResourceNotFoundException', "Secrets Manager can't find the specified secret.");
            return { ARN: input.SecretId, Name: 'slack', SecretString: standIn.value };
          },
        },
        request,
        response,
      ),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const standIn: SecretsStandIn = {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    value,
    reads: 0,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  return standIn;
}
