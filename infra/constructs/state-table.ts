// The single DynamoDB table: actor items, Chat SDK state, message log, audit and usage.
// Single-item conditional writes on it are what give each thread its one-run-at-a-time lease.
import { RemovalPolicy } from 'aws-cdk-lib';
import { AttributeType, BillingMode, type ITable, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import type { IGrantable } from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { TABLE_KEYS } from '../../shared/table.ts';

export class StateTable extends Construct {
  readonly table: Table;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    this.table = new Table(this, 'Table', {
      partitionKey: { name: TABLE_KEYS.partitionKey, type: AttributeType.STRING },
      sortKey: { name: TABLE_KEYS.sortKey, type: AttributeType.STRING },
      // TTL deletes lazily (within days), so the code also filters expired items itself.
      timeToLiveAttribute: TABLE_KEYS.ttlAttribute,
      // Traffic follows chat activity: spiky, idle at night. On-demand costs nothing when idle.
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: TableEncryption.AWS_MANAGED,
      // Conversation state outlives the stack: deleting the stack must not delete it.
      removalPolicy: RemovalPolicy.RETAIN,
    });
  }
}

/** The item-level actions the code calls; transactions are authorized as the item actions inside them. */
export type TableAction = 'GetItem' | 'BatchGetItem' | 'PutItem' | 'UpdateItem' | 'DeleteItem' | 'Query';

/**
 * What every function holding a Chat SDK instance needs: its state adapter (shared/platforms/chat-state.ts)
 * reads, puts, updates and deletes single items (subscriptions, locks, dedupe marks, caches).
 */
export const CHAT_STATE_ACTIONS: TableAction[] = ['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem'];

/** Exactly `actions` on the table (no Scan, batch, stream or describe actions unless listed). */
export function grantTableActions(table: ITable, grantee: IGrantable, actions: TableAction[]): void {
  table.grant(grantee, ...[...new Set(actions)].map((action) => `dynamodb:${action}`));
}
