// POST /api/messages: Teams activities. Every request's Bot Framework token is checked by our
// verifier (shared/platforms/teams/auth.ts) before anything else; the Connector adapter reads the
// activity (shared/platforms/teams/receive.ts), the Chat SDK dedupes redeliveries, and our handlers
// only enqueue (shared/admission/ingress.ts). No function loads the Teams SDK.
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { sqsClient } from '../../shared/aws/sqs.ts';
import { readEnv, teamsWebhookEnv } from '../../shared/env.ts';
import { chatFromEnv } from '../../shared/handler-context/chat.ts';
import { controlFromEnv } from '../../shared/handler-context/control.ts';
import { handlerLogger } from '../../shared/handler-context/logger.ts';
import { handlerMetrics, publishingMetrics } from '../../shared/handler-context/metrics.ts';
import { jsonResult } from '../../shared/platforms/http.ts';
import { wireIngress } from '../../shared/admission/ingress.ts';
import { sqsEnqueue } from '../../shared/admission/enqueue.ts';
import { lazy } from '../../shared/support/lazy.ts';
import { teamsReceivingAdapter } from '../../shared/platforms/teams/adapter.ts';
import { teamsDescriptor } from '../../shared/platforms/teams/descriptor.ts';
import { platformWebhook } from '../../shared/platforms/webhook.ts';
import { routeMentionsUnread, webhookState } from '../../shared/platforms/webhook-state.ts';

const logger = handlerLogger('teams-webhook');
const metrics = handlerMetrics();
const init = lazy(() => {
  const env = readEnv(teamsWebhookEnv);
  const ingress = { enqueue: sqsEnqueue(sqsClient(), env.INBOX_QUEUE_URL), control: controlFromEnv(logger, env, metrics), logger, metrics };
  return chatFromEnv(logger, env, {
    setup: (chat) => {
      routeMentionsUnread(chat);
      wireIngress(chat, ingress);
    },
    state: webhookState,
    adapters: { teams: teamsReceivingAdapter },
  });
});

export async function handler(event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> {
  const route = `${event.requestContext.http.method} ${event.rawPath}`;
  if (route !== `POST ${teamsDescriptor.deployment.webhook.path}`) return jsonResult(404, { error: `No route ${route}` });
  return publishingMetrics(metrics, () => platformWebhook(event, teamsDescriptor.name, init, logger));
}
