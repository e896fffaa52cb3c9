// The per-thread actor on one DynamoDB item. Single-item conditional writes give actor semantics:
// one lease holder (the running run) per thread, and a FIFO of prompts waiting behind it.
// SQS FIFO keeps arrival order and dedupes; this item is what keeps one run per thread.
import {
  GetCommand,
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { isConditionalCheckFailed, transactionCancellationReasons } from './aws-errors.ts';
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
  /** Set by stop: the run that must end now. */
  abortRunId?: string;
  /** Steering texts waiting for the running run's next tool boundary. */
  steer?: { runId: string; text: string; at: number }[];
}

export type Admission = 'started' | 'queued' | 'duplicate' | 'busy';

export interface AdmitOptions {
  /** Most prompts that may wait behind the running one; beyond it the prompt is refused as busy. */
  maxQueueDepth?: number;
  /** 'interrupt': a new prompt stops the running run and runs next (it goes to the queue's front). */
  mode?: 'queue' | 'interrupt';
}

/** Admitted-prompt markers outlive any redelivery window by far. */
const ADMITTED_TTL_SECONDS = 7 * 24 * 3600;
const MAX_CONFLICT_RETRIES = 8;

const actorKey = (threadId: string) => ({ pk: `actor#${threadId}`, sk: 'actor' });
const admittedKey = (threadId: string, messageId: string) => ({ pk: `admitted#${threadId}`, sk: messageId });

export async function getActor(deps: ActorDeps, threadId: string): Promise<ActorItem | undefined> {
  const out = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: actorKey(threadId), ConsistentRead: true }));
  return out.Item as ActorItem | undefined;
}

/**
 * Admit a prompt exactly once per message id: take the idle thread's lease and start a run, or
 * append to the queue of the running thread. Safe to call again for the same prompt (redelivery):
 * a lease taken whose execution never started is started again, anything else is a no-op.
 */
export async function admitPrompt(deps: ActorDeps, prompt: Prompt, options: AdmitOptions = {}): Promise<Admission> {
  const maxQueueDepth = options.maxQueueDepth ?? 5;
  const interrupt = options.mode === 'interrupt';
  const now = (deps.now ?? Date.now)();
  const run: RunInput = { runId: runIdFor(prompt.threadId, prompt.messageId), threadId: prompt.threadId, prompt };
  const marker = {
    Put: {
      TableName: deps.tableName,
      Item: {
        ...admittedKey(prompt.threadId, prompt.messageId),
        runId: run.runId,
        expiresAt: Math.floor(now / 1000) + ADMITTED_TTL_SECONDS,
      },
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  };
  for (let attempt = 0; attempt < MAX_CONFLICT_RETRIES; attempt++) {
    const leased = await admitWith(deps, prompt.threadId, marker, {
      UpdateExpression:
        'SET #status = :running, #current = :run, started = :false, leaseTakenAt = :now, threadId = :thread, version = if_not_exists(version, :zero) + :one REMOVE previousRunId',
      ConditionExpression: 'attribute_not_exists(pk) OR #status = :idle',
      ExpressionAttributeNames: { '#status': 'status', '#current': 'current' },
      ExpressionAttributeValues: {
        ':running': 'running',
        ':idle': 'idle',
        ':run': run,
        ':false': false,
        ':now': now,
        ':thread': prompt.threadId,
        ':zero': 0,
        ':one': 1,
      },
    });
    if (leased === 'duplicate') return resumeDuplicate(deps, run);
    if (leased === 'done') {
      await startAndMark(deps, run);
      return 'started';
    }
    // The thread is running: wait in its queue (at the front, in interrupt mode, and the running run
    // is told to stop), unless the queue is full or the thread went idle in between (retry the lease).
    const queued = await admitWith(deps, prompt.threadId, marker, {
      UpdateExpression: interrupt
        ? 'SET #queue = list_append(:item, if_not_exists(#queue, :empty)), abortRunId = #current.runId, version = version + :one'
        : 'SET #queue = list_append(if_not_exists(#queue, :empty), :item), version = version + :one',
      ConditionExpression: '#status = :running AND (attribute_not_exists(#queue) OR size(#queue) < :max)',
      ExpressionAttributeNames: { '#status': 'status', '#queue': 'queue', ...(interrupt ? { '#current': 'current' } : {}) },
      ExpressionAttributeValues: { ':running': 'running', ':empty': [], ':item': [run], ':one': 1, ':max': maxQueueDepth },
    });
    if (queued === 'duplicate') return resumeDuplicate(deps, run);
    if (queued === 'done') return 'queued';
    const actor = await getActor(deps, prompt.threadId);
    if (actor?.status === 'running' && (actor.queue?.length ?? 0) >= maxQueueDepth) return 'busy';
  }
  throw new Error(`Could not admit prompt ${prompt.messageId} on ${prompt.threadId}: too many concurrent changes`);
}

type ActorUpdate = Pick<
  UpdateCommandInput,
  'UpdateExpression' | 'ConditionExpression' | 'ExpressionAttributeNames' | 'ExpressionAttributeValues'
>;

/**
 * The admitted-prompt marker and one actor update in a single transaction: 'done', 'duplicate'
 * (the marker exists: this prompt was admitted before), or 'actor-changed' (the update's condition
 * failed: the thread is not in the state it expected).
 */
async function admitWith(
  deps: ActorDeps,
  threadId: string,
  marker: { Put: Record<string, unknown> },
  update: ActorUpdate,
): Promise<'done' | 'duplicate' | 'actor-changed'> {
  try {
    await deps.db.send(
      new TransactWriteCommand({
        TransactItems: [marker as never, { Update: { TableName: deps.tableName, Key: actorKey(threadId), ...update } as never }],
      }),
    );
    return 'done';
  } catch (error) {
    const reasons = transactionCancellationReasons(error);
    if (!reasons) throw error;
    if (reasons[0] === 'ConditionalCheckFailed') return 'duplicate';
    if (reasons[1] !== 'ConditionalCheckFailed') throw error;
    return 'actor-changed';
  }
}

/** A redelivered prompt: if it holds the lease but its execution may not have started, start it. */
async function resumeDuplicate(deps: ActorDeps, run: RunInput): Promise<Admission> {
  const actor = await getActor(deps, run.threadId);
  if (actor?.status === 'running' && actor.current?.runId === run.runId && !actor.started) {
    await startAndMark(deps, actor.current);
  }
  return 'duplicate';
}

/** Start the execution of the run holding the lease, and record that it started. */
export async function startAndMark(deps: ActorDeps, run: RunInput): Promise<void> {
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
    if (!isConditionalCheckFailed(error)) throw error;
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
              'SET #current = :next, #queue = :rest, started = :false, previousRunId = :runId, leaseTakenAt = :now, version = version + :one REMOVE abortRunId, steer',
            ConditionExpression: 'version = :version',
            ExpressionAttributeNames: { '#current': 'current', '#queue': 'queue' },
            ExpressionAttributeValues: {
              ':next': next,
              ':rest': rest,
              ':false': false,
              ':runId': runId,
              ':now': now,
              ':one': 1,
              ':version': actor.version,
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
          UpdateExpression:
            'SET #status = :idle, previousRunId = :runId, version = version + :one REMOVE #current, started, leaseTakenAt, abortRunId, steer',
          ConditionExpression: 'version = :version',
          ExpressionAttributeNames: { '#status': 'status', '#current': 'current' },
          ExpressionAttributeValues: { ':idle': 'idle', ':runId': runId, ':one': 1, ':version': actor.version },
        }),
      );
      return { outcome: 'idle' };
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
      // A prompt was queued meanwhile: read again and decide again.
    }
  }
  throw new Error(`Could not release ${runId} on ${threadId}: too many concurrent changes`);
}

/** Stop: flag the running run to end now. Returns the run that was running, if any. */
export async function requestStop(deps: ActorDeps, threadId: string): Promise<RunInput | undefined> {
  try {
    const out = await deps.db.send(
      new UpdateCommand({
        TableName: deps.tableName,
        Key: actorKey(threadId),
        UpdateExpression: 'SET abortRunId = #current.runId',
        ConditionExpression: '#status = :running AND attribute_exists(#current)',
        ExpressionAttributeNames: { '#status': 'status', '#current': 'current' },
        ExpressionAttributeValues: { ':running': 'running' },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return (out.Attributes as ActorItem | undefined)?.current;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return undefined;
    throw error;
  }
}

/** Steering texts that may wait for one tool boundary; they share the actor item with the queue. */
export const MAX_PENDING_STEERS = 10;

/** Steer: queue text for the running run's next tool boundary; 'idle' when nothing runs. */
export async function addSteer(deps: ActorDeps, threadId: string, text: string): Promise<'queued' | 'idle' | 'full'> {
  try {
    await deps.db.send(
      new UpdateCommand({
        TableName: deps.tableName,
        Key: actorKey(threadId),
        UpdateExpression: 'SET steer = list_append(if_not_exists(steer, :empty), :item)',
        ConditionExpression: '#status = :running AND attribute_exists(#current) AND (attribute_not_exists(steer) OR size(steer) < :max)',
        ExpressionAttributeNames: { '#status': 'status', '#current': 'current' },
        ExpressionAttributeValues: {
          ':running': 'running',
          ':empty': [],
          ':item': [{ runId: 'current', text, at: (deps.now ?? Date.now)() }],
          ':max': MAX_PENDING_STEERS,
        },
      }),
    );
    return 'queued';
  } catch (error) {
    if (!isConditionalCheckFailed(error)) throw error;
    const actor = await getActor(deps, threadId);
    return actor?.status === 'running' && actor.current ? 'full' : 'idle';
  }
}

/** The running run's control flags: whether it must stop, and steering texts waiting for it. */
export async function runFlags(
  deps: Pick<ActorDeps, 'db' | 'tableName'>,
  threadId: string,
  runId: string,
): Promise<{ abort: boolean; steer: string[] }> {
  const actor = await getActor(deps as ActorDeps, threadId);
  if (!actor || actor.current?.runId !== runId) return { abort: true, steer: [] };
  return { abort: actor.abortRunId === runId, steer: (actor.steer ?? []).map((s) => s.text) };
}

/** Takes the steering texts (they enter the run's context once). */
export async function takeSteer(deps: Pick<ActorDeps, 'db' | 'tableName'>, threadId: string, runId: string): Promise<string[]> {
  try {
    const out = await deps.db.send(
      new UpdateCommand({
        TableName: deps.tableName,
        Key: actorKey(threadId),
        UpdateExpression: 'REMOVE steer',
        ConditionExpression: '#current.runId = :runId AND attribute_exists(steer)',
        ExpressionAttributeNames: { '#current': 'current' },
        ExpressionAttributeValues: { ':runId': runId },
        ReturnValues: 'ALL_OLD',
      }),
    );
    return ((out.Attributes as ActorItem | undefined)?.steer ?? []).map((s) => s.text);
  } catch (error) {
    if (isConditionalCheckFailed(error)) return [];
    throw error;
  }
}

/** Who last prompted in a channel, and in which thread: for slash commands, which carry no thread. */
const recentKey = (channelKey: string, userId: string) => ({ pk: `recent#${channelKey}`, sk: userId });

export async function rememberRecentThread(
  deps: Pick<ActorDeps, 'db' | 'tableName' | 'now'>,
  channelKey: string,
  userId: string,
  threadId: string,
): Promise<void> {
  const now = (deps.now ?? Date.now)();
  await deps.db.send(
    new PutCommand({
      TableName: deps.tableName,
      Item: { ...recentKey(channelKey, userId), threadId, at: now, expiresAt: Math.floor(now / 1000) + ADMITTED_TTL_SECONDS },
    }),
  );
}

export async function recentThread(
  deps: Pick<ActorDeps, 'db' | 'tableName'>,
  channelKey: string,
  userId: string,
): Promise<string | undefined> {
  const out = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: recentKey(channelKey, userId), ConsistentRead: true }));
  return out.Item?.threadId as string | undefined;
}

/** A run handed over to a fresh execution: record its name, so stop and lease checks find it. */
export async function setExecution(
  deps: Pick<ActorDeps, 'db' | 'tableName'>,
  threadId: string,
  runId: string,
  executionName: string,
): Promise<void> {
  await deps.db.send(
    new UpdateCommand({
      TableName: deps.tableName,
      Key: actorKey(threadId),
      UpdateExpression: 'SET #current.executionName = :name',
      ConditionExpression: '#current.runId = :runId',
      ExpressionAttributeNames: { '#current': 'current' },
      ExpressionAttributeValues: { ':name': executionName, ':runId': runId },
    }),
  );
}
