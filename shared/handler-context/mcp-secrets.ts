// Reading the MCP secrets (`${secret:NAME}`: the secret `<stack>/mcp/NAME`), for the functions IAM
// lets read them: the reach step (headers) and the OAuth function (an operator's OAuth client).
import { SecretsProvider } from '@aws-lambda-powertools/parameters/secrets';
import { secretsClient } from '../aws/secrets.ts';

/** A secret read is reused this long: a rotated value is picked up within it. */
const SECRET_MAX_AGE_SECONDS = 300;

export function mcpSecretReader(prefix: string): (name: string) => Promise<string> {
  const secrets = new SecretsProvider({ awsSdkV3Client: secretsClient() });
  return async (name) => {
    const value = await secrets.get(`${prefix}${name}`, { maxAge: SECRET_MAX_AGE_SECONDS });
    if (typeof value !== 'string') throw Object.assign(new Error(`secret ${name} has no string value`), { name: 'SecretNotText' });
    return value;
  };
}
