// GET /oauth/start and GET /oauth/callback: a person connecting their own account to an MCP server
// that needs OAuth (shared/reach/oauth/routes.ts). Reads and writes only Connect states and tokens.
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { dbClient } from '../../shared/aws/dynamodb.ts';
import { kmsClient } from '../../shared/aws/kms.ts';
import { mcpOAuthEnv, readEnv } from '../../shared/env.ts';
import { handlerLogger } from '../../shared/handler-context/logger.ts';
import { mcpSecretReader } from '../../shared/handler-context/mcp-secrets.ts';
import { oauthRoute } from '../../shared/reach/oauth/routes.ts';
import { lazy } from '../../shared/support/lazy.ts';

const logger = handlerLogger('mcp-oauth');
const init = lazy(() => {
  const env = readEnv(mcpOAuthEnv);
  return {
    db: dbClient(),
    tableName: env.TABLE_NAME,
    kms: kmsClient(),
    keyId: env.OAUTH_KEY_ARN,
    readSecret: mcpSecretReader(env.MCP_SECRET_PREFIX),
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
