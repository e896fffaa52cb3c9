// The per-thread actor on one DynamoDB item. Single-item conditional writes give actor semantics:
// one lease holder (the running run) per thread, and a FIFO of prompts waiting behind it.
// SQS FIFO keeps arrival order and dedupes; this item is what keeps one run per thread.
import {
  GetCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { runIdFor } from './ids.ts';
import type { Prompt, RunInput } from './schemas.ts';

export interface ActorDeps {
  db: DynamoDBDocumentClient;
  tableName: string;
  /** Starts the run's execution; must be idempotent by `input.runId` (Step Functions execution names are). */
  startRun(input: RunInput): Promise<void>;
  now?: () => number;
}

export interface ActorItem {
  threadId: string;
  status: 'idle' | 'running';
  /** The run holding the lease, with the prompt it runs. */
  current?: RunInput;
  /** False between handing the lease to a run and that run's execution having started. */
  started?: boolean;
  /** The run that held the lease before `current`, so a retried finish can complete its hand-over. */
  previousRunId?: string;
  queue?: RunInput[];
  version: number;
  leaseTakenAt?: number;
}

export type Admission = 'started' | 'queued' | 'duplicate';

/** Admitted-prompt markers outlive any redelivery window by far. */
const ADMITTED_TTL_SECONDS = 7 * 24 * 3600;
const MAX_CONFLICT_RETRIES = 8;

const actorKey = (threadId: string) => ({ pk: `actor#${threadId}`, sk: 'actor' });
const admittedKey = (threadId: string, messageId: string) => ({ pk: `admitted#${threadId}`, sk: messageId });

export async function getActor(deps: ActorDeps, threadId: string): Promise<ActorItem | undefined> {
  const out = await deps.db.send(
    new GetCommand({ TableName: deps.tableName, Key: actorKey(threadId), ConsistentRead: true }),
  );
  return out.Item as ActorItem | undefined;
}

function cancellationReasons(error: unknown): string[] | undefined {
  if (!(error instanceof Error) || error.name !== 'TransactionCanceledException') return undefined;
  const reasons = (error as { CancellationReasons?: { Code?: string }[] }).CancellationReasons ?? [];
  return reasons.map((r) => r.Code ?? 'None');
}

function isConditionFailure(error: unknown): boolean {
  return error instanceof Error && error.name === 'ConditionalCheckFailedException';
}

/**
 * Admit a prompt exactly once per message id: take the idle thread's lease and start a run, or
 * append to the queue of the running thread. Safe to call again for the same prompt (redelivery):
 * a lease taken whose execution never started is started again, anything else is a no-op.
 */
export async function admitPrompt(deps: ActorDeps, prompt: Prompt): Promise<Admission> {
  const now = (deps.now ?? Date.now)();
  const run: RunInput = { runId: runIdFor(prompt.threadId, prompt.messageId), threadId: prompt.threadId, prompt };
  const marker = {
    Put: {
      TableName: deps.tableName,
      Item: { ...admittedKey(prompt.threadId, prompt.messageId), runId: run.runId, expiresAt: Math.floor(now / 1000) + ADMITTED_TTL_SECONDS },
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  };
  for (let attempt = 0; attempt < MAX_CONFLICT_RETRIES; attempt++) {
    try {
      await deps.db.send(
        new TransactWriteCommand({
          TransactItems: [
            marker,
            {
              Update: {
                TableName: deps.tableName,
                Key: actorKey(prompt.threadId),
                UpdateExpression:
                  'SET #status = :running, #current = :run, started = :false, leaseTakenAt = :now, threadId = :thread, version = if_not_exists(version, :zero) + :one REMOVE previousRunId',
                ConditionExpression: 'attribute_not_exists(pk) OR #status = :idle',
                ExpressionAttributeNames: { '#status': 'status', '#current': 'current' },
                ExpressionAttributeValues: {
                  ':running': 'running', ':idle': 'idle', ':run': run, ':false': false, ':now': now,
                  ':thread': prompt.threadId, ':zero': 0, ':one': 1,
                },
              },
            },
          ],
        }),
      );
      await startAndMark(deps, run);
      return 'started';
    } catch (error) {
      const reasons = cancellationReasons(error);
      if (!reasons) throw error;
      if (reasons[0] === 'ConditionalCheckFailed') return resumeDuplicate(deps, run);
      if (reasons[1] !== 'ConditionalCheckFailed') throw error;
    }
    // The thread is running: wait in its queue, unless it went idle in between (then retry the lease).
    try {
      await deps.db.send(
        new TransactWriteCommand({
          TransactItems: [
            marker,
            {
              Update: {
                TableName: deps.tableName,
                Key: actorKey(prompt.threadId),
                UpdateExpression: 'SET #queue = list_append(if_not_exists(#queue, :empty), :item), version = version + :one',
                ConditionExpression: '#status = :running',
                ExpressionAttributeNames: { '#status': 'status', '#queue': 'queue' },
                ExpressionAttributeValues: { ':running': 'running', ':empty': [], ':item': [run], ':one': 1 },
              },
            },
          ],
        }),
      );
      return 'queued';
    } catch (error) {
      const reasons = cancellationReasons(error);
      if (!reasons) throw error;
      if (reasons[0] === 'ConditionalCheckFailed') return resumeDuplicate(deps, run);
      if (reasons[1] !== 'ConditionalCheckFailed') throw error;
    }
  }
  throw new Error(`Could not admit prompt ${prompt.messageId} on ${prompt.threadId}: too many concurrent changes`);
}

/** A redelivered prompt: if it holds the lease but its execution may not have started, start it. */
async function resumeDuplicate(deps: ActorDeps, run: RunInput): Promise<Admission> {
  const actor = await getActor(deps, run.threadId);
  if (actor?.status === 'running' && actor.current?.runId === run.runId && !actor.started) {
    await startAndMark(deps, actor.current);
  }
  return 'duplicate';
}

async function startAndMark(deps: ActorDeps, run: RunInput): Promise<void> {
  await deps.startRun(run);
  try {
    await deps.db.send(
      new UpdateCommand({
        TableName: deps.tableName,
        Key: actorKey(run.threadId),
        UpdateExpression: 'SET started = :true',
        ConditionExpression: '#current.runId = :runId',
        ExpressionAttributeNames: { '#current': 'current' },
        ExpressionAttributeValues: { ':true': true, ':runId': run.runId },
      }),
    );
  } catch (error) {
    // The run already finished and handed the lease on: nothing to mark.
    if (!isConditionFailure(error)) throw error;
  }
}

export type Release = { outcome: 'idle' } | { outcome: 'next'; next: RunInput } | { outcome: 'not-holder' };

/**
 * End `runId`'s hold on the thread: start the next queued prompt, or go idle. Exactly once per run
 * whatever calls it (finish, the failure handler, the run-ended rule), and safe to retry: a retry
 * after the hand-over completes a start that may have been interrupted.
 */
export async function releaseLease(deps: ActorDeps, threadId: string, runId: string): Promise<Release> {
  for (let attempt = 0; attempt < MAX_CONFLICT_RETRIES; attempt++) {
    const actor = await getActor(deps, threadId);
    if (!actor || actor.current?.runId !== runId || actor.status !== 'running') {
      if (actor?.previousRunId === runId && actor.current && !actor.started) {
        await startAndMark(deps, actor.current);
        return { outcome: 'next', next: actor.current };
      }
      return { outcome: 'not-holder' };
    }
    const [next, ...rest] = actor.queue ?? [];
    const now = (deps.now ?? Date.now)();
    try {
      if (next) {
        await deps.db.send(
          new UpdateCommand({
            TableName: deps.tableName,
            Key: actorKey(threadId),
            UpdateExpression:
              'SET #current = :next, #queue = :rest, started = :false, previousRunId = :runId, leaseTakenAt = :now, version = version + :one',
            ConditionExpression: 'version = :version',
            ExpressionAttributeNames: { '#current': 'current', '#queue': 'queue' },
            ExpressionAttributeValues: {
              ':next': next, ':rest': rest, ':false': false, ':runId': runId, ':now': now, ':one': 1, ':version': actor.version,
            },
          }),
        );
        await startAndMark(deps, next);
        return { outcome: 'next', next };
      }
      await deps.db.send(
        new UpdateCommand({
          TableName: deps.tableName,
          Key: actorKey(threadId),
          UpdateExpression: 'SET #status = :idle, previousRunId = :runId, version = version + :one REMOVE #current, started, leaseTakenAt',
          ConditionExpression: 'version = :version',
          ExpressionAttributeNames: { '#status': 'status', '#current': 'current' },
          ExpressionAttributeValues: { ':idle': 'idle', ':runId': runId, ':one': 1, ':version': actor.version },
        }),
      );
      return { outcome: 'idle' };
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      // A prompt was queued meanwhile: read again and decide again.
    }
  }
  throw new Error(`Could not release ${runId} on ${threadId}: too many concurrent changes`);
}
