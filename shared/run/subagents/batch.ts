// The parent's wait for the subagents one model answer started, as one state table item
// (shared/table.ts subagentBatchKey): the children, how many still work, the task token the parent's
// AwaitSubagents state waits with, and each child's progress for the thread's status line. The token
// and the last child's end may come in either order: each write returns the item as it left it, so
// whichever comes second sees both and resumes the parent.
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { isConditionalCheckFailed } from '../../aws/errors.ts';
import type { LedgerDeps } from '../ledger.ts';
import { subagentBatchKey } from '../../table.ts';

export interface BatchChild {
  runId: string;
  toolUseId: string;
  /** The agent it works as, for the status line. */
  agent?: string;
}

export interface SubagentBatch {
  children: BatchChild[];
  /** Children that have not ended. */
  pending: number;
  token?: string;
  /** Each child's latest progress, by run id. */
  progress?: Record<string, string>;
  /** Epoch milliseconds when the children were started. */
  startedAt?: number;
}

const KEEP_SECONDS = 30 * 24 * 3600;

export async function createBatch(deps: LedgerDeps, runId: string, batch: string, children: BatchChild[], now: number): Promise<void> {
  try {
    await deps.db.send(
      new PutCommand({
        TableName: deps.tableName,
        Item: {
          ...subagentBatchKey(runId, batch),
          children,
          pending: children.length,
          progress: {},
          startedAt: now,
          expiresAt: Math.floor(now / 1000) + KEEP_SECONDS,
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
  } catch (error) {
    // A retried step: the batch stands as first written.
    if (!isConditionalCheckFailed(error)) throw error;
  }
}

export async function readBatch(deps: LedgerDeps, runId: string, batch: string): Promise<SubagentBatch | undefined> {
  const out = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: subagentBatchKey(runId, batch), ConsistentRead: true }));
  return out.Item as SubagentBatch | undefined;
}

/** Stores the token the parent waits with; returns the batch as it is now. */
export async function setBatchToken(deps: LedgerDeps, runId: string, batch: string, token: string): Promise<SubagentBatch> {
  const stored = await updateBatch(deps, runId, batch, {
    expression: 'SET #token = :token',
    names: { '#token': 'token' },
    values: { ':token': token },
  });
  if (!stored) throw new Error(`no subagents batch ${batch} of run ${runId} to wait for`);
  return stored;
}

/** An update of the batch, if it exists; returns it as the update left it (undefined: no such batch). */
async function updateBatch(
  deps: LedgerDeps,
  runId: string,
  batch: string,
  update: { expression: string; condition?: string; names?: Record<string, string>; values: Record<string, unknown> },
): Promise<SubagentBatch | undefined> {
  try {
    const out = await deps.db.send(
      new UpdateCommand({
        TableName: deps.tableName,
        Key: subagentBatchKey(runId, batch),
        UpdateExpression: update.expression,
        ConditionExpression: `attribute_exists(pk)${update.condition ? ` AND ${update.condition}` : ''}`,
        ...(update.names ? { ExpressionAttributeNames: update.names } : {}),
        ExpressionAttributeValues: update.values,
        ReturnValues: 'ALL_NEW',
      }),
    );
    return out.Attributes as SubagentBatch;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return undefined;
    throw error;
  }
}

/** Counts the child done, once however often its end is retried; returns the batch as it is now. */
export async function countChildDone(
  deps: LedgerDeps,
  runId: string,
  batch: string,
  childRunId: string,
): Promise<SubagentBatch | undefined> {
  const counted = await updateBatch(deps, runId, batch, {
    expression: 'SET pending = pending - :one ADD done :child',
    condition: 'NOT contains(done, :id)',
    values: { ':one': 1, ':child': new Set([childRunId]), ':id': childRunId },
  });
  return counted ?? readBatch(deps, runId, batch);
}

/** Sets one child's progress; returns the batch with every child's, for the one status line. */
export async function setProgress(
  deps: LedgerDeps,
  runId: string,
  batch: string,
  childRunId: string,
  progress: string,
): Promise<SubagentBatch | undefined> {
  return updateBatch(deps, runId, batch, {
    expression: 'SET progress.#child = :progress',
    names: { '#child': childRunId },
    values: { ':progress': progress },
  });
}
