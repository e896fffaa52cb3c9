// The stack's stateful resources, created in the emulators as CloudFormation would create them:
// the table, the data bucket, the inbox FIFO queue with its dead-letter queue. They start empty,
// as after a first deploy.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { createLocalTable } from '../tables.ts';
import { localPhysicalName, resolveCloudFormation } from '../resources.ts';

/* eslint-disable @typescript-eslint/no-explicit-any -- CloudFormation template JSON */
export type Template = { Resources: Record<string, { Type: string; Properties?: any; DeletionPolicy?: string }> };

export function resourcesOfType(template: Template, type: string) {
  return Object.entries(template.Resources).filter(([, r]) => r.Type === type);
}

export function onlyResource(template: Template, type: string): [string, { Properties?: any }] {
  const found = resourcesOfType(template, type);
  if (found.length !== 1) throw new Error(`Expected one ${type} in the template, found ${found.length}`);
  return found[0]!;
}

export interface LocalResources {
  table: string;
  bucket: string;
  inboxUrl: string;
  inboxArn: string;
  dlqUrl: string;
  stateMachineId: string;
  stateMachineArn: string;
}

export async function createLocalResources(
  template: Template,
  ids: { dataBucketId: string; inboxId: string },
  clients: { dynamodb: DynamoDBClient; s3: S3Client; sqs: SQSClient },
  options: { visibilityTimeoutSeconds?: number },
): Promise<LocalResources> {
  const resolve = (value: unknown) => resolveCloudFormation(template, value);
  const [tableId] = onlyResource(template, 'AWS::DynamoDB::Table');
  const table = String(resolve({ Ref: tableId }));
  await createLocalTable(clients.dynamodb, table);
  const bucket = String(resolve({ Ref: ids.dataBucketId }));
  await clients.s3.send(new CreateBucketCommand({ Bucket: bucket }));

  const inboxProps = template.Resources[ids.inboxId]!.Properties;
  const dlqId = String(inboxProps.RedrivePolicy.deadLetterTargetArn['Fn::GetAtt'][0]);
  const queueArn = async (url: string | undefined) =>
    (await clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }))).Attributes?.QueueArn ?? '';
  const dlq = await clients.sqs.send(
    new CreateQueueCommand({ QueueName: localPhysicalName(template, dlqId), Attributes: { FifoQueue: 'true' } }),
  );
  const inbox = await clients.sqs.send(
    new CreateQueueCommand({
      QueueName: localPhysicalName(template, ids.inboxId),
      Attributes: {
        FifoQueue: 'true',
        ContentBasedDeduplication: String(inboxProps.ContentBasedDeduplication ?? false),
        VisibilityTimeout: String(options.visibilityTimeoutSeconds ?? inboxProps.VisibilityTimeout ?? 30),
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: await queueArn(dlq.QueueUrl),
          maxReceiveCount: inboxProps.RedrivePolicy.maxReceiveCount,
        }),
      },
    }),
  );
  const [stateMachineId] = onlyResource(template, 'AWS::StepFunctions::StateMachine');
  return {
    table,
    bucket,
    inboxUrl: inbox.QueueUrl!,
    inboxArn: await queueArn(inbox.QueueUrl),
    dlqUrl: dlq.QueueUrl!,
    stateMachineId,
    stateMachineArn: String(resolve({ Ref: stateMachineId })),
  };
}
