// The public entry point: an HTTP API with a POST route per served chat platform, each to that
// platform's webhook function (its descriptor's), and GET /health. No platform can send IAM
// credentials, so the routes are open and each function verifies every request before doing
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
import { FUNCTION_ENTRIES, type FunctionRole, type PlatformWebhookRole, type WebhookRole } from '../function-entries.ts';
import { bundleAliasesOf, createAgentFunction } from './agent-function.ts';
import { CHAT_STATE_ACTIONS, grantTableActions } from './state-table.ts';
import { grantSendToInbox } from './inbox.ts';
import { grantOptionalRead } from './data-bucket.ts';
import { ROOT_KEYS } from '../../shared/ids.ts';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import { useChatSecrets, type ChatSecrets } from './chat-secrets.ts';
import { handlerEnvironment, teamsWebhookEnv, webhookEnv, type HandlerEnvironment } from '../../shared/env.ts';
import { PLATFORM_DESCRIPTORS } from '../../shared/platforms/descriptors.ts';
import type { PlatformDescriptor } from '../../shared/platforms/platform.ts';

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

/** Each webhook function's environment, checked by the typecheck against its handler's schema (shared/env.ts). */
const webhookEnvironment = (props: WebhookApiProps) => {
  const common = { TABLE_NAME: props.table.tableName, INBOX_QUEUE_URL: props.inbox.queueUrl, STATE_MACHINE_ARN: props.stateMachineArn };
  return {
    webhook: handlerEnvironment(webhookEnv, { ...common, DATA_BUCKET: props.bucket.bucketName }),
    teamsWebhook: handlerEnvironment(teamsWebhookEnv, common),
  } satisfies Record<WebhookRole, HandlerEnvironment>;
};

/** The function with this role is the one that answers the health check too. */
const HEALTH_ROLE = 'webhook';

export class WebhookApi extends Construct {
  readonly api: HttpApi;
  readonly stage: HttpStage;
  readonly routes: HttpRoute[];
  /** The webhook function: the health check, and the platform whose webhook role is `webhook` (Slack). */
  readonly handler: NodejsFunction;
  /**
   * Each other platform's webhook function, where the deployment serves it: a function of its own.
   */
  readonly platformHandlers: Partial<Record<PlatformWebhookRole, NodejsFunction>> = {};

  constructor(scope: Construct, id: string, props: WebhookApiProps) {
    super(scope, id);
    const platforms: readonly PlatformDescriptor[] = PLATFORM_DESCRIPTORS;
    const servedOf = (platform: PlatformDescriptor) => props.chatSecrets.filter((served) => served.platform.name === platform.name);

    const handlers = new Map<string, NodejsFunction>();
    for (const platform of platforms) {
      const { role } = platform.deployment.webhook;
      const served = servedOf(platform);
      if (served.length === 0 && role !== HEALTH_ROLE) continue;
      handlers.set(role, this.webhookFunction(role === HEALTH_ROLE ? 'Handler' : `${platform.title}Handler`, props, platform, served));
    }
    this.handler = handlers.get(HEALTH_ROLE)!;
    for (const [role, handler] of handlers) {
      if (role !== HEALTH_ROLE) this.platformHandlers[role as PlatformWebhookRole] = handler;
    }
    // `/usage` answers with the budgets of settings.json: that one object, nothing else in the bucket.
    grantOptionalRead(props.bucket, this.handler, [ROOT_KEYS.settings]);

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
      ...platforms.flatMap((platform) => {
        const { role, path } = platform.deployment.webhook;
        if (servedOf(platform).length === 0) return [];
        const own = role === HEALTH_ROLE ? integration : new HttpLambdaIntegration(`${platform.title}Webhook`, handlers.get(role)!);
        return this.api.addRoutes({ path, methods: [HttpMethod.POST], integration: own });
      }),
      ...this.api.addRoutes({ path: HEALTH_PATH, methods: [HttpMethod.GET], integration }),
    ];
  }

  /** A platform's webhook function: it reads its platform's secret only, keeps Chat SDK state, enqueues, and stops runs. */
  private webhookFunction(id: string, props: WebhookApiProps, platform: PlatformDescriptor, secrets: ChatSecrets): NodejsFunction {
    const { role, description } = platform.deployment.webhook;
    const handler = createAgentFunction(this, id, {
      entry: FUNCTION_ENTRIES[role as FunctionRole],
      description,
      // Slack retries a delivery that is not acked within 3 s (Teams within 15 s); the handler only enqueues.
      timeout: Duration.seconds(10),
      memorySize: 512,
      logRetention: props.logRetention,
      bundleAliases: bundleAliasesOf(role as FunctionRole),
      environment: webhookEnvironment(props)[role as WebhookRole],
    });
    // Chat SDK state (dedupe, subscriptions, locks), and stop/steer on the actor.
    grantTableActions(props.table, handler, CHAT_STATE_ACTIONS);
    grantSendToInbox(props.inbox, handler);
    useChatSecrets(handler, secrets);
    handler.addToRolePolicy(new PolicyStatement({ actions: ['states:StopExecution'], resources: [props.executionArns] }));
    // An approval decided by a click lets its run go on with its task token: IAM knows no narrower resource.
    handler.addToRolePolicy(new PolicyStatement({ actions: ['states:SendTaskSuccess'], resources: ['*'] }));
    return handler;
  }
}
