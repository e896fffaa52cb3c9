// The SQS FIFO inbox between the webhook and dispatch. MessageGroupId = thread id keeps each
// thread's prompts in arrival order; the producer sets MessageDeduplicationId = chat message id,
// so content-based deduplication stays off (two identical texts are two prompts).
import { Duration } from 'aws-cdk-lib';
import { type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { DeduplicationScope, FifoThroughputLimit, type IQueue, Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

export interface InboxProps {
  /** Timeout of the function consuming the queue; the visibility timeout is derived from it. */
  readonly consumerTimeout: Duration;
}

/** A message that fails this many receives moves to the dead-letter queue. */
export const INBOX_MAX_RECEIVE_COUNT = 5;

export class Inbox extends Construct {
  readonly queue: Queue;
  readonly deadLetterQueue: Queue;
  /** A received message stays invisible this long; one whose processing failed comes back after it. */
  readonly visibilityTimeout: Duration;

  constructor(scope: Construct, id: string, props: InboxProps) {
    super(scope, id);

    this.deadLetterQueue = new Queue(this, 'DeadLetters', {
      fifo: true,
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });

    this.visibilityTimeout = Duration.seconds(props.consumerTimeout.toSeconds() * 6);
    this.queue = new Queue(this, 'Queue', {
      fifo: true,
      contentBasedDeduplication: false,
      // High-throughput FIFO: ordering and dedup are only needed within a thread, and per-group
      // limits let thousands of threads flow in parallel.
      deduplicationScope: DeduplicationScope.MESSAGE_GROUP,
      fifoThroughputLimit: FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
      // Lambda's guidance for SQS event sources: at least 6x the consumer's timeout, so a batch that
      // is retried by Lambda is not redelivered to a second invocation meanwhile.
      visibilityTimeout: this.visibilityTimeout,
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: INBOX_MAX_RECEIVE_COUNT },
    });
  }
}

/** Send to the inbox, nothing else: queue.grantSendMessages() adds GetQueueAttributes and GetQueueUrl, which no producer calls. */
export function grantSendToInbox(queue: IQueue, grantee: IGrantable): void {
  grantee.grantPrincipal.addToPrincipalPolicy(new PolicyStatement({ actions: ['sqs:SendMessage'], resources: [queue.queueArn] }));
}
