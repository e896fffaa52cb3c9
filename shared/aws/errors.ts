// Which AWS error is which. Matched by name (and S3's status code), never instanceof: a second copy
// of an SDK client in a bundle has its own exception classes.

function nameOf(error: unknown): string | undefined {
  const name = (error as { name?: unknown } | null | undefined)?.name;
  return typeof name === 'string' ? name : undefined;
}

function statusOf(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } } | null | undefined)?.$metadata?.httpStatusCode;
}

/** A DynamoDB write whose ConditionExpression did not hold. */
export const isConditionalCheckFailed = (error: unknown): boolean => nameOf(error) === 'ConditionalCheckFailedException';

/**
 * The cancellation codes of a DynamoDB transaction, one per item in order ('None' for an item that
 * was fine, 'ConditionalCheckFailed' for one whose condition failed); undefined for any other error.
 */
export function transactionCancellationReasons(error: unknown): string[] | undefined {
  if (nameOf(error) !== 'TransactionCanceledException') return undefined;
  const reasons = (error as { CancellationReasons?: { Code?: string }[] }).CancellationReasons ?? [];
  return reasons.map((r) => r.Code ?? 'None');
}

/** A transaction that lost to another one on a shared item (a capacity counter): worth retrying at once. */
export const isTransactionConflict = (error: unknown): boolean =>
  transactionCancellationReasons(error)?.includes('TransactionConflict') ?? false;

/** GetObject's NoSuchKey or HeadObject's NotFound. */
export const isS3NotFound = (error: unknown): boolean => nameOf(error) === 'NoSuchKey' || nameOf(error) === 'NotFound';

/**
 * An S3 conditional write that lost: If-Match / If-None-Match did not hold (412), or a concurrent
 * conditional write to the same key won (409).
 */
export function isS3PreconditionFailed(error: unknown): boolean {
  const name = nameOf(error);
  const status = statusOf(error);
  return name === 'PreconditionFailed' || name === 'ConditionalRequestConflict' || status === 412 || status === 409;
}

/** Step Functions: no execution by that ARN (never started, or its history expired). */
export const isExecutionDoesNotExist = (error: unknown): boolean => nameOf(error) === 'ExecutionDoesNotExist';

/** Step Functions: an execution by that name already exists (with another input, or closed). */
export const isExecutionAlreadyExists = (error: unknown): boolean => nameOf(error) === 'ExecutionAlreadyExists';

/** EventBridge Scheduler (and other JSON APIs): the named resource does not exist. */
export const isResourceNotFound = (error: unknown): boolean => nameOf(error) === 'ResourceNotFoundException';

/** EventBridge Scheduler: a resource by that name already exists. */
export const isConflict = (error: unknown): boolean => nameOf(error) === 'ConflictException';

/** SendTaskSuccess for a task that no longer waits (timed out, its execution stopped) or never did. */
export const isTaskGone = (error: unknown): boolean => nameOf(error) === 'TaskTimedOut' || nameOf(error) === 'TaskDoesNotExist';
