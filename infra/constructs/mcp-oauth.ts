// GET /oauth/start and GET /oauth/callback on the stack's API, served by a small function of their
// own: a person's browser comes here from a Connect link, goes on to an MCP server's authorization
// server and comes back with a code. The function reads and writes only Connect states and tokens
// (sealed with the tokens key) and may read the MCP secrets (an operator's OAuth client). The routes
// are open, as a browser has no credential: the single-use `state` is what binds a request to a person.
import { Duration } from 'aws-cdk-lib';
import { type HttpApi, HttpMethod, type HttpRoute } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { FUNCTION_ENTRIES } from '../function-entries.ts';
import { createAgentFunction } from './agent-function.ts';
import type { McpTokensKey } from './mcp-tokens-key.ts';
import { grantTableActions } from './state-table.ts';
import { handlerEnvironment, mcpOAuthEnv } from '../../shared/env.ts';
import { OAUTH_CALLBACK_PATH, OAUTH_START_PATH } from '../../shared/reach/oauth/routes.ts';

export interface McpOAuthProps {
  readonly api: HttpApi;
  readonly table: ITable;
  readonly tokensKey: McpTokensKey;
  /** `<stack>/mcp/` */
  readonly secretPrefix: string;
  /** Every MCP secret (ReachStep's secretsArn). */
  readonly secretsArn: string;
  readonly logRetention: RetentionDays;
}

export class McpOAuth extends Construct {
  readonly handler: NodejsFunction;
  readonly routes: HttpRoute[];
  /** Where a Connect link goes (`?state=…`). */
  readonly startUrl: string;

  constructor(scope: Construct, id: string, props: McpOAuthProps) {
    super(scope, id);
    this.handler = createAgentFunction(this, 'Handler', {
      entry: FUNCTION_ENTRIES.mcpOAuth,
      description: 'Connects a person to an MCP server that needs OAuth (GET /oauth/start, /oauth/callback)',
      // Discovery, registration and the code exchange with the authorization server, each a few seconds at most.
      timeout: Duration.seconds(29),
      memorySize: 256,
      logRetention: props.logRetention,
      environment: handlerEnvironment(mcpOAuthEnv, {
        TABLE_NAME: props.table.tableName,
        OAUTH_KEY_ARN: props.tokensKey.key.keyArn,
        MCP_SECRET_PREFIX: props.secretPrefix,
      }),
    });
    // A state is read, started (updated) and deleted on condition; tokens are put.
    grantTableActions(props.table, this.handler, ['GetItem', 'UpdateItem', 'DeleteItem', 'PutItem']);
    props.tokensKey.grantSealing(this.handler);
    this.handler.addToRolePolicy(
      new PolicyStatement({ effect: Effect.ALLOW, actions: ['secretsmanager:GetSecretValue'], resources: [props.secretsArn] }),
    );
    const integration = new HttpLambdaIntegration('McpOAuth', this.handler);
    this.routes = [OAUTH_START_PATH, OAUTH_CALLBACK_PATH].flatMap((path) =>
      props.api.addRoutes({ path, methods: [HttpMethod.GET], integration }),
    );
    this.startUrl = `${props.api.apiEndpoint}${OAUTH_START_PATH}`;
  }
}
