// POST /slack/events and GET /health. Verification, url_verification, redelivery dedupe and
// parsing are the Chat SDK Slack adapter's; our handlers only enqueue (shared/ingress.ts).
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { clients, requireEnv } from '../../shared/aws.ts';
import { actorFromEnv, chatFromEnv, handlerLogger } from '../../shared/handler-context.ts';
import { bodyBytes, jsonResult, MAX_BODY_BYTES, toRequest, toResult } from '../../shared/http.ts';
import { sqsEnqueue, wireIngress } from '../../shared/ingress.ts';
import type { AgentChat } from '../../shared/chat.ts';

const logger = handlerLogger('webhook');
const loadChat = chatFromEnv(logger);
let wired: Promise<AgentChat> | undefined;

function chat(): Promise<AgentChat> {
  return (wired ??= loadChat().then((c) => {
    const control = { actor: actorFromEnv(logger), sfn: clients.sfn(), stateMachineArn: requireEnv('STATE_MACHINE_ARN'), logger };
    wireIngress(c, { enqueue: sqsEnqueue(clients.sqs(), requireEnv('INBOX_QUEUE_URL')), control, logger });
    return c;
  })).catch((error: unknown) => {
    wired = undefined;
    throw error;
  });
}

export async function handler(event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> {
  const route = `${event.requestContext.http.method} ${event.rawPath}`;
  if (route === 'GET /health') return jsonResult(200, { ok: true });
  if (route !== 'POST /slack/events') return jsonResult(404, { error: `No route ${route}` });
  if (bodyBytes(event) > MAX_BODY_BYTES) {
    return jsonResult(413, { error: `Request body over the ${MAX_BODY_BYTES}-byte limit` });
  }
  const pending: Promise<unknown>[] = [];
  const response = await (await chat()).webhooks.slack(toRequest(event), { waitUntil: (p) => void pending.push(p) });
  // Handlers only enqueue, so waiting for them keeps the ack fast and makes the enqueue durable.
  const outcomes = await Promise.allSettled(pending);
  for (const outcome of outcomes) {
    if (outcome.status === 'rejected') logger.error('webhook handler failed', { error: outcome.reason });
  }
  return toResult(response);
}
