// The public entry point: an HTTP API whose routes go to the webhook function. Neither platform can
// send IAM credentials, so the routes are open and the function verifies each request before doing
// anything: Slack's request signature (HMAC of the body with the signing secret), or the Bot
// Framework JWT Teams sends (shared/platforms/teams/auth.ts).
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
import { bundleAliasesOf, createAgentFunction } from './agent-function.ts';
import { CHAT_STATE_ACTIONS, grantTableActions } from './state-table.ts';
import { grantSendToInbox } from './inbox.ts';
import { grantOptionalRead } from './data-bucket.ts';
import { ROOT_KEYS } from '../../shared/ids.ts';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import { useChatSecrets, type ChatSecrets } from './chat-secrets.ts';
import { handlerEnvironment, teamsWebhookEnv, webhookEnv, type HandlerEnvironment } from '../../shared/env.ts';

export const SLACK_EVENTS_PATH = '/slack/events';
export const TEAMS_MESSAGES_PATH = '/api/messages';
export const HEALTH_PATH = '/health';

export interface WebhookApiProps {
  readonly table: ITable;
  readonly bucket: IBucket;
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
  /** Slack's events and the health check. */
  readonly handler: NodejsFunction;
  /** Teams' activities, when the deployment serves Teams: a function of its own, the only one carrying the Teams SDK. */
  readonly teamsHandler?: NodejsFunction;

  constructor(scope: Construct, id: string, props: WebhookApiProps) {
    super(scope, id);
    const { slack, teams, teamsMultiTenant } = props.chatSecrets;

    const environment = {
      TABLE_NAME: props.table.tableName,
      INBOX_QUEUE_URL: props.inbox.queueUrl,
      STATE_MACHINE_ARN: props.stateMachineArn,
    };
    this.handler = this.webhookFunction('Handler', props, {
      entry: FUNCTION_ENTRIES.webhook,
      description: 'Verifies Slack webhooks, acks fast, enqueues prompts and sets stop/steer flags',
      // `/usage` answers with the budgets of settings.json: that one object, nothing else in the bucket.
      environment: handlerEnvironment(webhookEnv, { ...environment, DATA_BUCKET: props.bucket.bucketName }),
      secrets: { slack },
    });
    grantOptionalRead(props.bucket, this.handler, [ROOT_KEYS.settings]);
    if (teams) {
      this.teamsHandler = this.webhookFunction('TeamsHandler', props, {
        entry: FUNCTION_ENTRIES.teamsWebhook,
        description: 'Verifies Teams activities (Bot Framework tokens), acks fast, enqueues prompts and sets stop/steer flags',
        environment: handlerEnvironment(teamsWebhookEnv, environment),
        secrets: { teams, teamsMultiTenant },
        bundleAliases: bundleAliasesOf('teamsWebhook'),
      });
    }

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
    this.routes = [
      ...(slack ? this.api.addRoutes({ path: SLACK_EVENTS_PATH, methods: [HttpMethod.POST], integration }) : []),
      ...(this.teamsHandler
        ? this.api.addRoutes({
            path: TEAMS_MESSAGES_PATH,
            methods: [HttpMethod.POST],
            integration: new HttpLambdaIntegration('TeamsWebhook', this.teamsHandler),
          })
        : []),
      ...this.api.addRoutes({ path: HEALTH_PATH, methods: [HttpMethod.GET], integration }),
    ];
  }

  /** A webhook function: it reads its platform's secret only, keeps Chat SDK state, enqueues, and stops runs. */
  private webhookFunction(
    id: string,
    props: WebhookApiProps,
    fn: {
      entry: string;
      description: string;
      environment: HandlerEnvironment;
      secrets: ChatSecrets;
      bundleAliases?: Readonly<Record<string, string>>;
    },
  ): NodejsFunction {
    const handler = createAgentFunction(this, id, {
      entry: fn.entry,
      description: fn.description,
      // Slack retries a delivery that is not acked within 3 s (Teams within 15 s); the handler only enqueues.
      timeout: Duration.seconds(10),
      memorySize: 512,
      logRetention: props.logRetention,
      bundleAliases: fn.bundleAliases,
      environment: fn.environment,
    });
    // Chat SDK state (dedupe, subscriptions, locks), and stop/steer on the actor.
    grantTableActions(props.table, handler, CHAT_STATE_ACTIONS);
    grantSendToInbox(props.inbox, handler);
    useChatSecrets(handler, fn.secrets);
    handler.addToRolePolicy(new PolicyStatement({ actions: ['states:StopExecution'], resources: [props.executionArns] }));
    return handler;
  }
}
