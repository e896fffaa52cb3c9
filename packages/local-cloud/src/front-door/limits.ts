// Service limits AWS enforces on requests that no emulator here enforces, with AWS's own error
// names and messages. Limits count bytes (UTF-8), not characters.
import { isPlainObject } from '../aws-protocol.ts';

export const SQS_MESSAGE_LIMIT = 256 * 1024;
export const DYNAMODB_TRANSACTION_ITEMS = 100;
export const DYNAMODB_TRANSACTION_BYTES = 4 * 1024 * 1024;

export interface LimitViolation {
  status: number;
  type: string;
  message: string;
}

function sqsMessageBytes(entry: Record<string, unknown>): number {
  let bytes = Buffer.byteLength(String(entry.MessageBody ?? ''));
  const attributes = isPlainObject(entry.MessageAttributes) ? entry.MessageAttributes : {};
  for (const [name, value] of Object.entries(attributes)) {
    const v = value as { DataType?: string; StringValue?: string; BinaryValue?: string };
    bytes += Buffer.byteLength(name) + Buffer.byteLength(v.DataType ?? '') + Buffer.byteLength(v.StringValue ?? '');
    if (v.BinaryValue) bytes += Buffer.from(v.BinaryValue, 'base64').length;
  }
  return bytes;
}

/** SQS (JSON protocol): a message, or a batch in total, over 256 KiB. */
export function sqsViolation(operation: string, input: Record<string, unknown>): LimitViolation | undefined {
  if (operation === 'SendMessage' && sqsMessageBytes(input) > SQS_MESSAGE_LIMIT) {
    return {
      status: 400,
      type: 'InvalidParameterValue',
      message: `One or more parameters are invalid. Reason: Message must be shorter than ${SQS_MESSAGE_LIMIT} bytes.`,
    };
  }
  if (operation === 'SendMessageBatch') {
    const entries = Array.isArray(input.Entries) ? (input.Entries as Record<string, unknown>[]) : [];
    const total = entries.reduce((sum, entry) => sum + sqsMessageBytes(entry), 0);
    if (total > SQS_MESSAGE_LIMIT) {
      return {
        status: 400,
        type: 'BatchRequestTooLong',
        message: `Batch requests cannot be longer than ${SQS_MESSAGE_LIMIT} bytes. You have sent ${total} bytes.`,
      };
    }
  }
  return undefined;
}

/** DynamoDB: TransactWriteItems/TransactGetItems over 100 actions or 4 MB (DynamoDB Local checks items itself). */
export function dynamoDbViolation(operation: string, input: Record<string, unknown>, bodyBytes: number): LimitViolation | undefined {
  if (operation !== 'TransactWriteItems' && operation !== 'TransactGetItems') return undefined;
  const items = Array.isArray(input.TransactItems) ? input.TransactItems.length : 0;
  if (items > DYNAMODB_TRANSACTION_ITEMS) {
    return {
      status: 400,
      type: 'com.amazon.coral.validate#ValidationException',
      message: `1 validation error detected: Value at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to ${DYNAMODB_TRANSACTION_ITEMS}`,
    };
  }
  if (bodyBytes > DYNAMODB_TRANSACTION_BYTES) {
    return {
      status: 400,
      type: 'com.amazon.coral.validate#ValidationException',
      message: 'Transaction request cannot be larger than 4 MB',
    };
  }
  return undefined;
}
