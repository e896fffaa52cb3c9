// POST /slack/events and GET /health. Verification, redelivery dedupe and parsing are the Chat SDK's
// full Slack adapter's (shared/platforms/slack/adapter.ts: only this function carries it, the others
// send with the lighter sender.ts); our handlers only enqueue (shared/admission/ingress.ts). A
// url_verification request of exactly Slack's shape is answered before verification
// (shared/platforms/slack/url-verification.ts). Teams
// has a webhook function of its own (teams-webhook.ts): its adapter's SDK would more than triple
// this bundle.
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { sqsClient } from '../../shared/aws/sqs.ts';
import { readEnv, webhookEnv } from '../../shared/env.ts';
import { chatFromEnv } from '../../shared/handler-context/chat.ts';
import { controlFromEnv } from '../../shared/handler-context/control.ts';
import { handlerLogger } from '../../shared/handler-context/logger.ts';
import { handlerMetrics, publishingMetrics } from '../../shared/handler-context/metrics.ts';
import { bodyText, jsonResult } from '../../shared/platforms/http.ts';
import { wireIngress, type IngressDeps } from '../../shared/admission/ingress.ts';
import { sqsEnqueue } from '../../shared/admission/enqueue.ts';
import { settingsFromEnv } from '../../shared/handler-context/settings.ts';
import { lazy } from '../../shared/support/lazy.ts';
import { platformWebhook } from '../../shared/platforms/webhook.ts';
import { routeMentionsUnread, webhookState } from '../../shared/platforms/webhook-state.ts';
import { urlVerificationChallenge } from '../../shared/platforms/slack/url-verification.ts';
import { slackDescriptor } from '../../shared/platforms/slack/descriptor.ts';
import { slackReceivingAdapter } from '../../shared/platforms/slack/adapter.ts';

const logger = handlerLogger('webhook');
const metrics = handlerMetrics();
const init = lazy(() => {
  const env = readEnv(webhookEnv);
  const settings = settingsFromEnv(env, logger);
  const ingress: IngressDeps = {
    enqueue: sqsEnqueue(sqsClient(), env.INBOX_QUEUE_URL),
    control: controlFromEnv(logger, env, metrics),
    logger,
    // Read for `/usage` alone: a message or a stop never waits on S3.
    settings: () => settings.get(),
    metrics,
  };
  return chatFromEnv(logger, env, {
    setup: (chat) => {
      routeMentionsUnread(chat);
      wireIngress(chat, ingress);
    },
    state: webhookState,
    adapters: { slack: slackReceivingAdapter },
  });
});

export async function handler(event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> {
  const route = `${event.requestContext.http.method} ${event.rawPath}`;
  if (route === 'GET /health') return jsonResult(200, { ok: true });
  if (route !== `POST ${slackDescriptor.deployment.webhook.path}`) return jsonResult(404, { error: `No route ${route}` });
  // Before the app's signing secret can be stored, Slack already checks this URL.
  const challenge = urlVerificationChallenge(event.headers['content-type'], bodyText(event));
  if (challenge !== undefined) {
    logger.info('answered a url_verification challenge without a signature: it carries no data');
    return jsonResult(200, { challenge });
  }
  return publishingMetrics(metrics, () => platformWebhook(event, slackDescriptor.name, init, logger));
}
