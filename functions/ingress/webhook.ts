// POST /slack/events, POST /api/messages (Teams) and GET /health. Parsing and redelivery dedupe are
// the Chat SDK adapters'; verification is Slack's signature check, or for Teams our Bot Framework
// token check (shared/teams-auth.ts) run by the adapter before anything else. Our handlers only
// enqueue (shared/ingress.ts).
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { sqsClient } from '../../shared/aws/sqs.ts';
import { readEnv, webhookEnv } from '../../shared/env.ts';
import { chatFromEnv } from '../../shared/handler-context/chat.ts';
import { controlFromEnv } from '../../shared/handler-context/control.ts';
import { handlerLogger } from '../../shared/handler-context/logger.ts';
import { bodyBytes, jsonResult, MAX_BODY_BYTES, toRequest, toResult } from '../../shared/http.ts';
import { sqsEnqueue, wireIngress } from '../../shared/ingress.ts';
import { lazy } from '../../shared/lazy.ts';
import { hasPlatform, type Platform } from '../../shared/chat.ts';

const PLATFORM_ROUTES: Record<string, Platform> = { 'POST /slack/events': 'slack', 'POST /api/messages': 'teams' };
const PLATFORM_NAMES: Record<Platform, string> = { slack: 'Slack', teams: 'Teams' };

const logger = handlerLogger('webhook');
const init = lazy(() => {
  const env = readEnv(webhookEnv);
  const ingress = { enqueue: sqsEnqueue(sqsClient(), env.INBOX_QUEUE_URL), control: controlFromEnv(logger, env), logger };
  return chatFromEnv(logger, env, (chat) => wireIngress(chat, ingress));
});

export async function handler(event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> {
  const route = `${event.requestContext.http.method} ${event.rawPath}`;
  if (route === 'GET /health') return jsonResult(200, { ok: true });
  const platform = PLATFORM_ROUTES[route];
  if (!platform) return jsonResult(404, { error: `No route ${route}` });
  if (bodyBytes(event) > MAX_BODY_BYTES) {
    return jsonResult(413, { error: `Request body over the ${MAX_BODY_BYTES}-byte limit` });
  }
  const chat = await (await init())();
  if (!hasPlatform(chat, platform)) return jsonResult(404, { error: `${PLATFORM_NAMES[platform]} is not set up in this deployment` });
  const pending: Promise<unknown>[] = [];
  const response = await chat.webhooks[platform](toRequest(event), { waitUntil: (p) => void pending.push(p) });
  // Handlers only enqueue, so waiting for them keeps the ack fast and makes the enqueue durable.
  const outcomes = await Promise.allSettled(pending);
  for (const outcome of outcomes) {
    if (outcome.status === 'rejected') logger.error('webhook handler failed', { error: outcome.reason });
  }
  return toResult(response);
}
