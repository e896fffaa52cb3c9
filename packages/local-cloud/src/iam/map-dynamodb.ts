// DynamoDB (awsJson1.0, X-Amz-Target DynamoDB_20120810.<Operation>): which table (or index) each
// operation is authorized on. Transactions and batches are authorized item by item, or table by
// table, as DynamoDB does.
import { localArn } from '../resources.ts';
import {
  type Authorization,
  type AwsHttpRequest,
  type JsonObject,
  UnknownOperationError,
  jsonBody,
  jsonTarget,
  unique,
} from './request-types.ts';
import { onAnyResource } from './service-reference.ts';

function tableArn(table: unknown): string {
  const name = String(table);
  return name.startsWith('arn:') ? name : localArn('dynamodb', `table/${name}`);
}

// Context keys DynamoDB sets from the request (dynamodb:LeadingKeys and dynamodb:Attributes need the
// table's key schema and expressions: not modelled).
function authorization(action: string, resource: string, input: JsonObject): Authorization {
  const context: Record<string, string> = {};
  if (typeof input.ReturnValues === 'string') context['dynamodb:ReturnValues'] = input.ReturnValues;
  if (typeof input.Select === 'string') context['dynamodb:Select'] = input.Select;
  if (typeof input.ReturnConsumedCapacity === 'string') context['dynamodb:ReturnConsumedCapacity'] = input.ReturnConsumedCapacity;
  return Object.keys(context).length > 0 ? { action, resource, context } : { action, resource };
}

const ON_TABLE = new Set([
  'GetItem',
  'PutItem',
  'UpdateItem',
  'DeleteItem',
  'DescribeTable',
  'CreateTable',
  'DeleteTable',
  'UpdateTable',
  'DescribeTimeToLive',
  'UpdateTimeToLive',
  'DescribeContinuousBackups',
  'UpdateContinuousBackups',
]);
const ON_RESOURCE_ARN = new Set(['TagResource', 'UntagResource', 'ListTagsOfResource']);
// Each item of a TransactWriteItems is authorized as the single-item operation it is.
const TRANSACT_WRITE_ACTIONS: Record<string, string> = {
  Put: 'PutItem',
  Update: 'UpdateItem',
  Delete: 'DeleteItem',
  ConditionCheck: 'ConditionCheckItem',
};

export function dynamoDbAuthorizations(request: AwsHttpRequest): Authorization[] {
  const operation = jsonTarget(request);
  const input = jsonBody(request);
  const action = `dynamodb:${operation}`;
  if (ON_TABLE.has(operation)) return [authorization(action, tableArn(input.TableName), input)];
  if (operation === 'Query' || operation === 'Scan') {
    const table = tableArn(input.TableName);
    const resource = typeof input.IndexName === 'string' ? `${table}/index/${input.IndexName}` : table;
    return [authorization(action, resource, input)];
  }
  if (operation === 'BatchGetItem' || operation === 'BatchWriteItem') {
    return Object.keys((input.RequestItems ?? {}) as JsonObject).map((table) => ({ action, resource: tableArn(table) }));
  }
  if (operation === 'TransactWriteItems') {
    return ((input.TransactItems ?? []) as JsonObject[]).map((item) => {
      const [kind, detail] = Object.entries(item)[0] ?? [];
      const itemAction = TRANSACT_WRITE_ACTIONS[String(kind)];
      if (!itemAction) throw new UnknownOperationError('dynamodb', `TransactWriteItems item ${String(kind)}`);
      return { action: `dynamodb:${itemAction}`, resource: tableArn((detail as JsonObject).TableName) };
    });
  }
  if (operation === 'TransactGetItems') {
    const tables = ((input.TransactItems ?? []) as { Get?: JsonObject }[]).map((item) => tableArn(item.Get?.TableName));
    return unique(tables).map((resource) => ({ action: 'dynamodb:GetItem', resource }));
  }
  if (ON_RESOURCE_ARN.has(operation)) return [{ action, resource: String(input.ResourceArn) }];
  // ListTables, DescribeLimits…: what the reference authorizes against "*" only.
  const any = onAnyResource('dynamodb', operation);
  if (any) return [any];
  throw new UnknownOperationError('dynamodb', operation);
}
