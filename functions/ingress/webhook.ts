// POST /slack/events and GET /health. Verification, url_verification, redelivery dedupe and
// parsing are the Chat SDK Slack adapter's; our handlers only enqueue (shared/ingress.ts).
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { sqsClient } from '../../shared/aws/sqs.ts';
import { readEnv, webhookEnv } from '../../shared/env.ts';
import { chatFromEnv } from '../../shared/handler-context/chat.ts';
import { controlFromEnv } from '../../shared/handler-context/control.ts';
import { handlerLogger } from '../../shared/handler-context/logger.ts';
import { bodyBytes, jsonResult, MAX_BODY_BYTES, toRequest, toResult } from '../../shared/http.ts';
import { sqsEnqueue, wireIngress } from '../../shared/ingress.ts';
import { lazy } from '../../shared/lazy.ts';

const logger = handlerLogger('webhook');
const init = lazy(() => {
  const env = readEnv(webhookEnv);
  const ingress = { enqueue: sqsEnqueue(sqsClient(), env.INBOX_QUEUE_URL), control: controlFromEnv(logger, env), logger };
  return chatFromEnv(logger, env, (chat) => wireIngress(chat, ingress));
});

export async function handler(event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> {
  const route = `${event.requestContext.http.method} ${event.rawPath}`;
  if (route === 'GET /health') return jsonResult(200, { ok: true });
  if (route !== 'POST /slack/events') return jsonResult(404, { error: `No route ${route}` });
  if (bodyBytes(event) > MAX_BODY_BYTES) {
    return jsonResult(413, { error: `Request body over the ${MAX_BODY_BYTES}-byte limit` });
  }
  const chat = await (await init())();
  const pending: Promise<unknown>[] = [];
  const response = await chat.webhooks.slack(toRequest(event), { waitUntil: (p) => void pending.push(p) });
  // Handlers only enqueue, so waiting for them keeps the ack fast and makes the enqueue durable.
  const outcomes = await Promise.allSettled(pending);
  for (const outcome of outcomes) {
    if (outcome.status === 'rejected') logger.error('webhook handler failed', { error: outcome.reason });
  }
  return toResult(response);
}
