// The single DynamoDB table: actor items, Chat SDK state, message log, audit and usage.
// Single-item conditional writes on it are what give each thread its one-run-at-a-time lease.
import { RemovalPolicy } from 'aws-cdk-lib';
import { AttributeType, BillingMode, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
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
