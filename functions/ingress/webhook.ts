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
  const chats = await init();
  const pending: Promise<unknown>[] = [];
  const options = { waitUntil: (p: Promise<unknown>) => void pending.push(p) };
  let response = await (await chats()).webhooks.slack(toRequest(event), options);
  // The secret may have changed since it was read (a Slack app just created, its signing secret
  // just stored): verify once more with it re-read, rather than wait for the cached read to expire.
  if (response.status === 401 && (await chats.rereadCredentials())) {
    logger.info('a signature failed with the cached Slack credentials; verifying again with the secret re-read');
    response = await (await chats()).webhooks.slack(toRequest(event), options);
  }
  // Handlers only enqueue, so waiting for them keeps the ack fast and makes the enqueue durable.
  const outcomes = await Promise.allSettled(pending);
  for (const outcome of outcomes) {
    if (outcome.status === 'rejected') logger.error('webhook handler failed', { error: outcome.reason });
  }
  return toResult(response);
}
