import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { once } from '../support/lazy.ts';

// Throttles are retried by the model step itself (backoff with jitter, before any text streams).
export const bedrockClient = once(() => new BedrockRuntimeClient({ maxAttempts: 1 }));
