// One chat platform's webhook request: the body limit, the adapter's verification and parsing, a
// second verification with the secret re-read when the first fails, and our handlers' enqueues
// awaited before the ack. Each platform's webhook function serves that one platform.
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { PlatformName } from './descriptors.ts';
import type { ChatLoader } from '../handler-context/chat.ts';
import { bodyBytes, jsonResult, MAX_BODY_BYTES, toRequest, toResult } from './http.ts';
import type { JsonLogger } from '../observability/log.ts';

export async function platformWebhook(
  event: APIGatewayProxyEventV2,
  platform: PlatformName,
  chats: () => Promise<ChatLoader>,
  logger: JsonLogger,
): Promise<APIGatewayProxyStructuredResultV2> {
  if (bodyBytes(event) > MAX_BODY_BYTES) {
    return jsonResult(413, { error: `Request body over the ${MAX_BODY_BYTES}-byte limit` });
  }
  const loader = await chats();
  const pending: Promise<unknown>[] = [];
  const options = { waitUntil: (p: Promise<unknown>) => void pending.push(p) };
  let response = await (await loader()).webhooks[platform](toRequest(event), options);
  // The secret may have changed since it was read (an app just created, its secret just stored):
  // verify once more with it re-read, rather than wait for the cached read to expire.
  if (response.status === 401 && (await loader.rereadCredentials())) {
    logger.info(`a ${platform} request failed verification with the cached credentials; verifying again with the secret re-read`);
    response = await (await loader()).webhooks[platform](toRequest(event), options);
  }
  // Handlers only enqueue, so waiting for them keeps the ack fast and makes the enqueue durable.
  const outcomes = await Promise.allSettled(pending);
  for (const outcome of outcomes) {
    if (outcome.status === 'rejected') logger.error('webhook handler failed', { error: outcome.reason });
  }
  return toResult(response);
}
