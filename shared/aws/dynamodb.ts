// The DynamoDB document client. Endpoints and credentials come from the standard chain
// (AWS_ENDPOINT_URL_DYNAMODB locally), so the same code talks to AWS or to the local cloud. Each
// AWS client has its own module so that a function's bundle carries only the clients it imports.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { once } from '../lazy.ts';

export function documentClient(client = new DynamoDBClient({})): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: true },
  });
}

export const dbClient = once(() => documentClient());
