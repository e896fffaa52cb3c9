// GET /oauth/start and GET /oauth/callback: a person connecting their own account to an MCP server
// that needs OAuth (shared/reach/oauth/routes.ts). Reads and writes only Connect states and tokens.
import { SecretsProvider } from '@aws-lambda-powertools/parameters/secrets';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { dbClient } from '../../shared/aws/dynamodb.ts';
import { kmsClient } from '../../shared/aws/kms.ts';
import { secretsClient } from '../../shared/aws/secrets.ts';
import { mcpOAuthEnv, readEnv } from '../../shared/env.ts';
import { handlerLogger } from '../../shared/handler-context/logger.ts';
import { oauthRoute } from '../../shared/reach/oauth/routes.ts';
import { lazy } from '../../shared/support/lazy.ts';

const logger = handlerLogger('mcp-oauth');
const init = lazy(() => {
  const env = readEnv(mcpOAuthEnv);
  const secrets = new SecretsProvider({ awsSdkV3Client: secretsClient() });
  return {
    db: dbClient(),
    tableName: env.TABLE_NAME,
    kms: kmsClient(),
    keyId: env.OAUTH_KEY_ARN,
    readSecret: async (name: string) => {
      const value = await secrets.get(`${env.MCP_SECRET_PREFIX}${name}`);
      if (typeof value !== 'string') throw Object.assign(new Error(`secret ${name} has no string value`), { name: 'SecretNotText' });
      return value;
    },
    now: Date.now,
    logger,
  };
});

export async function handler(event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> {
  const proto = event.headers['x-forwarded-proto'] ?? 'https';
  return oauthRoute(await init(), {
    path: event.rawPath,
    query: event.queryStringParameters ?? {},
    origin: `${proto}://${event.requestContext.domainName}`,
  });
}
