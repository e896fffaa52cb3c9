// AWS SDK clients for the Lambda handlers. Endpoints and credentials come from the standard chain
// (AWS_ENDPOINT_URL_<SERVICE> locally), so the same code talks to AWS or to the local cloud.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SFNClient } from '@aws-sdk/client-sfn';
import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { ECSClient } from '@aws-sdk/client-ecs';
import { SchedulerClient } from '@aws-sdk/client-scheduler';

export function documentClient(client = new DynamoDBClient({})): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: true },
  });
}

function once<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= make());
}

export const clients = {
  db: once(() => documentClient()),
  s3: once(() => new S3Client({ forcePathStyle: process.env.AWS_S3_FORCE_PATH_STYLE === 'true' })),
  // Send to the configured endpoint even when a queue URL names another host (local emulators do).
  sqs: once(() => new SQSClient({ useQueueUrlAsEndpoint: false })),
  sfn: once(() => new SFNClient({})),
  // Throttles are retried by the model step itself (backoff with jitter, before any text streams).
  bedrock: once(() => new BedrockRuntimeClient({ maxAttempts: 1 })),
  secrets: once(() => new SecretsManagerClient({})),
  ecs: once(() => new ECSClient({})),
  scheduler: once(() => new SchedulerClient({})),
};
