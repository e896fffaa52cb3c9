import { SQSClient } from '@aws-sdk/client-sqs';
import { once } from '../support/lazy.ts';

// Send to the configured endpoint even when a queue URL names another host (local emulators do).
export const sqsClient = once(() => new SQSClient({ useQueueUrlAsEndpoint: false }));
