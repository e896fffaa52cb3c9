// The public entry point: an HTTP API whose routes go to the webhook function. Neither platform can
// send IAM credentials, so the routes are open and the function verifies each request before doing
// anything: Slack's request signature (HMAC of the body with the signing secret), or the Bot
// Framework JWT Teams sends (shared/teams-auth.ts).
import { Duration } from 'aws-cdk-lib';
import { HttpApi, HttpMethod, type HttpRoute, type HttpStage, LogGroupLogDestination } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { FUNCTION_ENTRIES } from '../function-entries.ts';
import { createAgentFunction } from './agent-function.ts';
import { CHAT_STATE_ACTIONS, grantTableActions } from './state-table.ts';
import { grantSendToInbox } from './inbox.ts';
import { useChatSecrets, type ChatSecrets } from './chat-secrets.ts';

export const SLACK_EVENTS_PATH = '/slack/events';
export const TEAMS_MESSAGES_PATH = '/api/messages';
export const HEALTH_PATH = '/health';

export interface WebhookApiProps {
  readonly table: ITable;
  readonly inbox: IQueue;
  readonly chatSecrets: ChatSecrets;
  readonly logRetention: RetentionDays;
  /** stop (a message, /stop, the Stop button) ends the running execution at once. */
  readonly stateMachineArn: string;
  readonly executionArns: string;
}

export class WebhookApi extends Construct {
  readonly api: HttpApi;
  readonly stage: HttpStage;
  readonly routes: HttpRoute[];
  readonly handler: NodejsFunction;

  constructor(scope: Construct, id: string, props: WebhookApiProps) {
    super(scope, id);

    this.handler = createAgentFunction(this, 'Handler', {
      entry: FUNCTION_ENTRIES.webhook,
      description: 'Verifies chat webhooks, acks fast, enqueues prompts and sets stop/steer flags',
      // Slack retries a delivery that is not acked within 3 s (Teams within 15 s); the handler only enqueues.
      timeout: Duration.seconds(10),
      memorySize: 512,
      logRetention: props.logRetention,
      environment: {
        TABLE_NAME: props.table.tableName,
        INBOX_QUEUE_URL: props.inbox.queueUrl,
        STATE_MACHINE_ARN: props.stateMachineArn,
      },
    });
    // Chat SDK state (dedupe, subscriptions, locks), and stop/steer on the actor.
    grantTableActions(props.table, this.handler, CHAT_STATE_ACTIONS);
    grantSendToInbox(props.inbox, this.handler);
    useChatSecrets(this.handler, props.chatSecrets);
    this.handler.addToRolePolicy(new PolicyStatement({ actions: ['states:StopExecution'], resources: [props.executionArns] }));

    // The default stage is declared explicitly: the one HttpApi creates cannot take access logs
    // or throttling.
    this.api = new HttpApi(this, 'Api', {
      description: 'Chat webhooks for the agent runtime',
      createDefaultStage: false,
    });
    const accessLogs = new LogGroup(this, 'AccessLogs', { retention: props.logRetention });
    this.stage = this.api.addStage('DefaultStage', {
      stageName: '$default',
      autoDeploy: true,
      // A ceiling against floods; far above what a team's chat produces.
      throttle: { rateLimit: 50, burstLimit: 100 },
      accessLogSettings: { destination: new LogGroupLogDestination(accessLogs) },
    });

    const integration = new HttpLambdaIntegration('Webhook', this.handler);
    const platformPaths = [
      ...(props.chatSecrets.slack ? [SLACK_EVENTS_PATH] : []),
      ...(props.chatSecrets.teams ? [TEAMS_MESSAGES_PATH] : []),
    ];
    this.routes = [
      ...platformPaths.flatMap((path) => this.api.addRoutes({ path, methods: [HttpMethod.POST], integration })),
      ...this.api.addRoutes({ path: HEALTH_PATH, methods: [HttpMethod.GET], integration }),
    ];
  }
}
