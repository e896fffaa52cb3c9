// The per-thread actor on one DynamoDB item. Single-item conditional writes give actor semantics:
// one lease holder (the running run) per thread, and a FIFO of prompts waiting behind it.
// SQS FIFO keeps arrival order and dedupes; this item is what keeps one run per thread.
import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { isConditionalCheckFailed, isTransactionConflict, transactionCancellationReasons } from '../aws/errors.ts';
import { giveRunSlots, type RunCaps, SLOT_ATTRIBUTE, takeRunSlots } from './capacity.ts';
import { queryPartition } from '../aws/dynamodb.ts';
import { retryOnConflict, TRY_AGAIN } from '../aws/retry.ts';
import { actorKey, admittedPromptKey, pauseKey, recentThreadKey, WAITING_THREADS, waitingThreadKey } from '../table.ts';
import { runIdFor } from '../ids.ts';
import { type Prompt, type RunInput, utf8Bytes } from '../contracts.ts';
import type { ControlPolicy } from '../policy/access.ts';

export interface ActorDeps {
  db: DynamoDBDocumentClient;
  tableName: string;
  /** Starts the run's execution; must be idempotent by `input.runId` (Step Functions execution names are). */
  startRun(input: RunInput): Promise<void>;
  now?: () => number;
  /** Whether an operator paused the deployment: a finished run then hands its thread to no queued prompt. */
  paused?: () => Promise<boolean>;
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
  /** The lease holds a run slot of its channel and of the deployment (see capacity.ts). */
  holdsSlot?: boolean;
  /** Who may stop or steer the thread's runs, as settings.json said at the latest admission (absent: anyone). */
  control?: ControlPolicy;
  /** The agent the thread works as since a prompt began with `/agent NAME` (absent: the channel's default). */
  agent?: string;
}

/** `channel-full` / `deployment-full`: the thread is idle, but as many runs as allowed already run. */
export type Admission = 'started' | 'queued' | 'duplicate' | 'busy' | 'channel-full' | 'deployment-full';

/** `newThread` admission only: the thread has an actor item after all, or the deployment is paused. Nothing was written. */
export const NOT_NEW = 'not-new';

export interface AdmitOptions {
  /** Most prompts that may wait behind the running one; beyond it the prompt is refused as busy. */
  maxQueueDepth?: number;
  /**
   * 'interrupt': a new prompt stops the running run and runs next (it goes to the queue's front).
   * 'collect': it waits as in 'queue', and the collect prompts queued behind it go with it (`takeNext`).
   */
  mode?: 'queue' | 'interrupt' | 'collect';
  /**
   * Runs that may hold a lease at once. Only taking an idle thread's lease takes a slot: a prompt
   * queued behind a running one inherits its slot when the lease is handed over, so it always runs.
   */
  caps?: RunCaps;
  /** Who may stop or steer the thread's runs (settings.json `access`); absent: anyone in the thread. */
  control?: ControlPolicy;
  /** The deployment is paused: the prompt waits in the thread's queue, whatever the thread is doing, and starts nothing. */
  hold?: boolean;
  /** The agent the run works as; with `keepAgent`, the thread keeps it for its later prompts too. */
  agent?: string;
  keepAgent?: boolean;
  /**
   * The prompt opens its thread, and the caller took it to have no actor item and the deployment not
   * to be paused without reading either: the lease is taken only if so, else nothing is written and
   * the answer is NOT_NEW (read the thread and admit it again).
   */
  newThread?: boolean;
}

/** Admitted-prompt markers outlive any redelivery window by far. */
const ADMITTED_TTL_SECONDS = 7 * 24 * 3600;

// Threads whose queue waits with nothing running (prompts held while paused), so resume finds them
// without reading every actor.
const waitingPut = (tableName: string, threadId: string) => ({ Put: { TableName: tableName, Item: waitingThreadKey(threadId) } });

/** Threads with prompts waiting and nothing running: held while the deployment was paused. */
export async function waitingThreads(deps: { db: DynamoDBDocumentClient; tableName: string }): Promise<string[]> {
  return (await queryPartition(deps, WAITING_THREADS)).map((item) => item.sk as string);
}

export async function getActor(deps: ActorDeps, threadId: string): Promise<ActorItem | undefined> {
  const out = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: actorKey(threadId), ConsistentRead: true }));
  return out.Item as ActorItem | undefined;
}

/**
 * Admit a prompt exactly once per message id: take the idle thread's lease and start a run, or
 * append to the queue of the running thread. Safe to call again for the same prompt (redelivery):
 * a lease taken whose execution never started is started again, anything else is a no-op.
 */
export async function admitPrompt(deps: ActorDeps, prompt: Prompt, options: AdmitOptions = {}): Promise<Admission | typeof NOT_NEW> {
  const maxQueueDepth = options.maxQueueDepth ?? 5;
  const interrupt = options.mode === 'interrupt';
  const now = (deps.now ?? Date.now)();
  const run: RunInput = {
    runId: runIdFor(prompt.threadId, prompt.messageId),
    threadId: prompt.threadId,
    prompt,
    ...(options.agent ? { agent: options.agent } : {}),
    ...(options.mode === 'collect' ? { collect: true as const } : {}),
  };
  const control = controlUpdate(options.control, options.keepAgent ? options.agent : undefined);
  const marker = {
    Put: {
      TableName: deps.tableName,
      Item: {
        ...admittedPromptKey(prompt.threadId, prompt.messageId),
        runId: run.runId,
        expiresAt: Math.floor(now / 1000) + ADMITTED_TTL_SECONDS,
      },
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  };
  const caps = options.caps;
  const slots = caps ? takeRunSlots(deps.tableName, prompt.threadId, caps, now) : [];
  const newThread = options.newThread === true && !options.hold;
  // Transactions of many threads meet on the shared run counters: each lost one is tried again.
  return retryOnConflict(`Could not admit prompt ${prompt.messageId} on ${prompt.threadId}`, async () => {
    const leased = options.hold
      ? 'actor-changed'
      : await admitWith(
          deps,
          prompt.threadId,
          marker,
          {
            UpdateExpression: `SET #status = :running, #current = :run, started = :false, leaseTakenAt = :now, threadId = :thread, version = if_not_exists(version, :zero) + :one${caps ? `, ${SLOT_ATTRIBUTE} = :true` : ''}${control.set} REMOVE previousRunId${control.remove ? `, ${control.remove}` : ''}`,
            // An idle thread with prompts waiting (held while paused) starts them first: this one waits behind.
            ConditionExpression: newThread
              ? 'attribute_not_exists(pk)'
              : '(attribute_not_exists(pk) OR #status = :idle) AND (attribute_not_exists(#queue) OR size(#queue) = :zero)',
            ExpressionAttributeNames: {
              '#status': 'status',
              '#current': 'current',
              ...(newThread ? {} : { '#queue': 'queue' }),
              ...control.names,
            },
            ExpressionAttributeValues: {
              ...control.values,
              ':running': 'running',
              ...(newThread ? {} : { ':idle': 'idle' }),
              ':run': run,
              ':false': false,
              ':now': now,
              ':thread': prompt.threadId,
              ':zero': 0,
              ':one': 1,
              ...(caps ? { ':true': true } : {}),
            },
          },
          slots,
          newThread,
        );
    if (leased === 'duplicate') return resumeDuplicate(deps, run);
    if (newThread && (leased === 'actor-changed' || leased === 'paused')) return NOT_NEW;
    if (leased === 'channel-full' || leased === 'deployment-full') return leased;
    if (leased === 'conflict') return TRY_AGAIN;
    if (leased === 'done') {
      await startAndMark(deps, run);
      return 'started';
    }
    // The thread is running (or has prompts waiting): wait in its queue (at the front, in interrupt
    // mode, and the running run is told to stop), unless the queue is full or the thread went idle in
    // between (retry the lease). Held while paused: at the back, whatever the thread is doing.
    const front = interrupt && !options.hold;
    const queued = await admitWith(
      deps,
      prompt.threadId,
      marker,
      {
        UpdateExpression:
          (front
            ? 'SET #queue = list_append(:item, if_not_exists(#queue, :empty)), abortRunId = #current.runId, version = version + :one'
            : 'SET #queue = list_append(if_not_exists(#queue, :empty), :item), version = if_not_exists(version, :zero) + :one') +
          ', threadId = :thread' +
          control.set +
          (control.remove ? ` REMOVE ${control.remove}` : ''),
        ConditionExpression: `${queueCondition(options.hold, front)}(attribute_not_exists(#queue) OR size(#queue) < :max)`,
        ExpressionAttributeNames: {
          '#queue': 'queue',
          ...(options.hold ? {} : { '#status': 'status' }),
          ...(front ? { '#current': 'current' } : {}),
          ...control.names,
        },
        ExpressionAttributeValues: {
          ...(options.hold ? {} : { ':running': 'running' }),
          ':empty': [],
          ':item': [run],
          ':one': 1,
          ...(front ? {} : { ':zero': 0 }),
          ':max': maxQueueDepth,
          ':thread': prompt.threadId,
          ...control.values,
        },
      },
      options.hold ? [waitingPut(deps.tableName, prompt.threadId)] : [],
    );
    if (queued === 'duplicate') return resumeDuplicate(deps, run);
    if (queued === 'done') return 'queued';
    if (queued === 'conflict') return TRY_AGAIN;
    const actor = await getActor(deps, prompt.threadId);
    const waiting = actor?.queue?.length ?? 0;
    if ((options.hold || actor?.status === 'running' || waiting > 0) && waiting >= maxQueueDepth) return 'busy';
    // Interrupting an idle thread whose prompts wait (a resume that has not reached it): start them first.
    if (front && actor?.status !== 'running' && waiting > 0) await startWaiting(deps, prompt.threadId);
    return TRY_AGAIN;
  });
}

/**
 * When a prompt may join the queue: held, always (within the depth); interrupting, only a running
 * run; otherwise behind a running run or behind prompts that wait.
 */
function queueCondition(hold: boolean | undefined, front: boolean): string {
  if (hold) return '';
  if (front) return '#status = :running AND ';
  return '(#status = :running OR (attribute_exists(#queue) AND size(#queue) > :zero)) AND ';
}

/**
 * The actor update's part that records (or clears) who may stop or steer the thread's runs, and
 * records the agent a prompt chose for the thread.
 */
function controlUpdate(policy: ControlPolicy | undefined, agent?: string) {
  const kept: { set: string; names: Record<string, string>; values: Record<string, unknown> } = agent
    ? { set: ', #agent = :agent', names: { '#agent': 'agent' }, values: { ':agent': agent } }
    : { set: '', names: {}, values: {} };
  return policy
    ? {
        set: `, #control = :control${kept.set}`,
        remove: '',
        names: { '#control': 'control', ...kept.names },
        values: { ':control': policy, ...kept.values },
      }
    : { set: kept.set, remove: '#control', names: { '#control': 'control', ...kept.names }, values: { ...kept.values } };
}

type ActorUpdate = Pick<
  UpdateCommandInput,
  'UpdateExpression' | 'ConditionExpression' | 'ExpressionAttributeNames' | 'ExpressionAttributeValues'
>;

/**
 * The admitted-prompt marker, one actor update and the run slots it takes in a single transaction:
 * 'done', 'duplicate' (the marker exists: this prompt was admitted before), 'actor-changed' (the
 * update's condition failed: the thread is not in the state it expected), which run slots are
 * all taken (the channel's, then the deployment's), or, with `unlessPaused`, 'paused' (the
 * deployment's pause flag is set: checked here, in place of a read before).
 */
async function admitWith(
  deps: ActorDeps,
  threadId: string,
  marker: { Put: Record<string, unknown> },
  update: ActorUpdate,
  slots: object[] = [],
  unlessPaused = false,
): Promise<'done' | 'duplicate' | 'actor-changed' | 'conflict' | 'channel-full' | 'deployment-full' | 'paused'> {
  const pauseCheck = { ConditionCheck: { TableName: deps.tableName, Key: pauseKey, ConditionExpression: 'attribute_not_exists(pk)' } };
  const items = [
    marker as never,
    { Update: { TableName: deps.tableName, Key: actorKey(threadId), ...update } as never },
    ...slots,
    ...(unlessPaused ? [pauseCheck] : []),
  ];
  try {
    await deps.db.send(new TransactWriteCommand({ TransactItems: items }));
    return 'done';
  } catch (error) {
    const reasons = transactionCancellationReasons(error);
    if (!reasons) throw error;
    // Another thread's transaction on a shared counter item won: try again.
    if (reasons.includes('TransactionConflict')) return 'conflict';
    if (reasons[0] === 'ConditionalCheckFailed') return 'duplicate';
    if (reasons[1] === 'ConditionalCheckFailed') return 'actor-changed';
    if (slots.length > 0 && reasons[2] === 'ConditionalCheckFailed') return 'channel-full';
    if (slots.length > 0 && reasons[3] === 'ConditionalCheckFailed') return 'deployment-full';
    if (unlessPaused && reasons[items.length - 1] === 'ConditionalCheckFailed') return 'paused';
    throw error;
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

/** Collected prompts one run takes at most: its execution input stays far below Step Functions' 256 KB. */
export const MAX_COLLECTED_PROMPTS = 20;
export const MAX_COLLECTED_BYTES = 64 * 1024;

/**
 * The run the lease goes to next, and the queue after it. A prompt admitted in collect mode takes
 * the collect prompts queued right behind it along (in order, within the bounds above); the rest
 * wait for the run after.
 */
export function takeNext(queue: readonly RunInput[]): { next: RunInput | undefined; rest: RunInput[] } {
  const [first, ...rest] = queue;
  if (!first?.collect) return { next: first, rest };
  const collected: Prompt[] = [];
  let bytes = utf8Bytes(JSON.stringify(first));
  while (rest[0]?.collect && collected.length < MAX_COLLECTED_PROMPTS) {
    const size = utf8Bytes(JSON.stringify(rest[0].prompt));
    if (bytes + size > MAX_COLLECTED_BYTES) break;
    bytes += size;
    collected.push(rest.shift()!.prompt);
  }
  return { next: collected.length ? { ...first, collected } : first, rest };
}

export type Release = { outcome: 'idle' } | { outcome: 'next'; next: RunInput } | { outcome: 'not-holder' };

/** A thread going idle: the lease, its flags and its run slots' marker go (the slots themselves are given back beside it). */
const GOING_IDLE = `SET #status = :idle, previousRunId = :runId, version = version + :one REMOVE #current, started, leaseTakenAt, abortRunId, steer, ${SLOT_ATTRIBUTE}`;

/**
 * End `runId`'s hold on the thread: start the next queued prompt, or go idle. Exactly once per run
 * whatever calls it (finish, the failure handler, the run-ended rule), and safe to retry: a retry
 * after the hand-over completes a start that may have been interrupted.
 */
export async function releaseLease(deps: ActorDeps, threadId: string, runId: string): Promise<Release> {
  if (await releaseToIdle(deps, threadId, runId)) return { outcome: 'idle' };
  return retryOnConflict(`Could not release ${runId} on ${threadId}`, async () => {
    const actor = await getActor(deps, threadId);
    if (!actor || actor.current?.runId !== runId || actor.status !== 'running') {
      if (actor?.previousRunId === runId && actor.current && !actor.started) {
        await startAndMark(deps, actor.current);
        return { outcome: 'next', next: actor.current };
      }
      return { outcome: 'not-holder' };
    }
    const { next, rest } = takeNext(actor.queue ?? []);
    const now = (deps.now ?? Date.now)();
    // Paused: the run ends as usual, but its queue waits (resume starts it).
    const hold = next !== undefined && ((await deps.paused?.()) ?? false);
    try {
      if (next && !hold) {
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
      const idle = {
        TableName: deps.tableName,
        Key: actorKey(threadId),
        UpdateExpression: GOING_IDLE,
        ConditionExpression: 'version = :version',
        ExpressionAttributeNames: { '#status': 'status', '#current': 'current' },
        ExpressionAttributeValues: { ':idle': 'idle', ':runId': runId, ':one': 1, ':version': actor.version },
      };
      // Going idle gives the lease's run slots back, in the same write: exactly once, whoever releases.
      const alongside = [
        ...(actor.holdsSlot ? giveRunSlots(deps.tableName, threadId) : []),
        ...(hold ? [waitingPut(deps.tableName, threadId)] : []),
      ];
      if (alongside.length > 0) {
        await deps.db.send(new TransactWriteCommand({ TransactItems: [{ Update: idle }, ...alongside] }));
      } else {
        await deps.db.send(new UpdateCommand(idle));
      }
      return { outcome: 'idle' };
    } catch (error) {
      const lost = isConditionalCheckFailed(error) || transactionCancellationReasons(error)?.[0] === 'ConditionalCheckFailed';
      if (!lost && !isTransactionConflict(error)) throw error;
      // A prompt was queued meanwhile (or another release changed a counter): read again and decide again.
      return TRY_AGAIN;
    }
  });
}

/**
 * The usual end of a run, in one conditional write instead of a read and a write: the run holds the
 * lease with its run slots (admissions take them by default) and no prompt waits, so the thread goes
 * idle and the slots go back. In any other case it changes nothing, and releaseLease reads the item
 * and decides.
 */
async function releaseToIdle(deps: ActorDeps, threadId: string, runId: string): Promise<boolean> {
  try {
    await deps.db.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Update: {
              TableName: deps.tableName,
              Key: actorKey(threadId),
              UpdateExpression: GOING_IDLE,
              ConditionExpression: `#status = :running AND #current.#runId = :runId AND ${SLOT_ATTRIBUTE} = :true AND (attribute_not_exists(#queue) OR size(#queue) = :zero)`,
              ExpressionAttributeNames: { '#status': 'status', '#current': 'current', '#runId': 'runId', '#queue': 'queue' },
              ExpressionAttributeValues: { ':idle': 'idle', ':running': 'running', ':runId': runId, ':one': 1, ':true': true, ':zero': 0 },
            },
          },
          ...giveRunSlots(deps.tableName, threadId),
        ],
      }),
    );
    return true;
  } catch (error) {
    if (transactionCancellationReasons(error)?.[0] === 'ConditionalCheckFailed' || isTransactionConflict(error)) return false;
    throw error;
  }
}

/** Run slots a held prompt takes when the deployment resumes: it was promised a run, so no limit refuses it. */
const UNLIMITED: RunCaps = { perChannel: Number.MAX_SAFE_INTEGER, perDeployment: Number.MAX_SAFE_INTEGER };

/**
 * After a pause: if the thread is idle with prompts waiting, hand its lease to the first of them and
 * start it (the rest run after it, in order). Returns the run started, if any; safe to repeat.
 */
export async function startWaiting(deps: ActorDeps, threadId: string): Promise<RunInput | undefined> {
  return retryOnConflict(`Could not start the waiting prompts of ${threadId}`, async () => {
    const actor = await getActor(deps, threadId);
    const { next, rest } = takeNext(actor?.queue ?? []);
    if (!actor || actor.status === 'running' || !next) {
      await deps.db.send(new DeleteCommand({ TableName: deps.tableName, Key: waitingThreadKey(threadId) }));
      return undefined;
    }
    const now = (deps.now ?? Date.now)();
    const [channelSlot, deploymentSlot, holder] = takeRunSlots(deps.tableName, threadId, UNLIMITED, now);
    try {
      await deps.db.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: deps.tableName,
                Key: actorKey(threadId),
                UpdateExpression: `SET #status = :running, #current = :next, #queue = :rest, started = :false, leaseTakenAt = :now, ${SLOT_ATTRIBUTE} = :true, version = version + :one`,
                ConditionExpression: 'version = :version',
                ExpressionAttributeNames: { '#status': 'status', '#current': 'current', '#queue': 'queue' },
                ExpressionAttributeValues: {
                  ':running': 'running',
                  ':next': next,
                  ':rest': rest,
                  ':false': false,
                  ':now': now,
                  ':true': true,
                  ':one': 1,
                  ':version': actor.version,
                },
              },
            },
            channelSlot!,
            deploymentSlot!,
            holder!,
            { Delete: { TableName: deps.tableName, Key: waitingThreadKey(threadId) } },
          ] as never,
        }),
      );
    } catch (error) {
      if (!transactionCancellationReasons(error)) throw error;
      return TRY_AGAIN;
    }
    await startAndMark(deps, next);
    return next;
  });
}

/** The condition that `runId` (when given) is the run holding the lease, for a control checked against it. */
const runningRun = (runId: string | undefined) => ({
  condition: `#status = :running AND attribute_exists(#current)${runId ? ' AND #current.runId = :runId' : ''}`,
  values: { ':running': 'running', ...(runId ? { ':runId': runId } : {}) },
});

/**
 * Stop: flag the running run (`runId` only, when given) to end now. Returns the run that was
 * running, if any.
 */
export async function requestStop(deps: ActorDeps, threadId: string, runId?: string): Promise<RunInput | undefined> {
  const running = runningRun(runId);
  try {
    const out = await deps.db.send(
      new UpdateCommand({
        TableName: deps.tableName,
        Key: actorKey(threadId),
        UpdateExpression: 'SET abortRunId = #current.runId',
        ConditionExpression: running.condition,
        ExpressionAttributeNames: { '#status': 'status', '#current': 'current' },
        ExpressionAttributeValues: running.values,
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

/** Steer: queue text for the running run's (`runId`'s, when given) next tool boundary; 'idle' when nothing runs. */
export async function addSteer(deps: ActorDeps, threadId: string, text: string, runId?: string): Promise<'queued' | 'idle' | 'full'> {
  try {
    await deps.db.send(new UpdateCommand(steerUpdate(deps, threadId, text, runId)));
    return 'queued';
  } catch (error) {
    if (!isConditionalCheckFailed(error)) throw error;
    return steerRefusal(deps, threadId, runId);
  }
}

/**
 * Steer mode: a message in a running thread steers `runId` instead of waiting for it, once per
 * message id however often it is delivered (the admitted-prompt marker goes in the same transaction).
 */
export async function steerWithMessage(
  deps: ActorDeps,
  prompt: Prompt,
  text: string,
  runId: string,
): Promise<'queued' | 'duplicate' | 'idle' | 'full'> {
  const now = (deps.now ?? Date.now)();
  const marker = {
    TableName: deps.tableName,
    Item: { ...admittedPromptKey(prompt.threadId, prompt.messageId), runId, expiresAt: Math.floor(now / 1000) + ADMITTED_TTL_SECONDS },
    ConditionExpression: 'attribute_not_exists(pk)',
  };
  try {
    await deps.db.send(
      new TransactWriteCommand({ TransactItems: [{ Put: marker }, { Update: steerUpdate(deps, prompt.threadId, text, runId) }] }),
    );
    return 'queued';
  } catch (error) {
    const reasons = transactionCancellationReasons(error);
    if (!reasons) throw error;
    if (reasons[0] === 'ConditionalCheckFailed') return 'duplicate';
    if (reasons[1] !== 'ConditionalCheckFailed') throw error;
    return steerRefusal(deps, prompt.threadId, runId);
  }
}

function steerUpdate(deps: ActorDeps, threadId: string, text: string, runId: string | undefined) {
  const running = runningRun(runId);
  return {
    TableName: deps.tableName,
    Key: actorKey(threadId),
    UpdateExpression: 'SET steer = list_append(if_not_exists(steer, :empty), :item)',
    ConditionExpression: `${running.condition} AND (attribute_not_exists(steer) OR size(steer) < :max)`,
    ExpressionAttributeNames: { '#status': 'status', '#current': 'current' },
    ExpressionAttributeValues: {
      ...running.values,
      ':empty': [],
      ':item': [{ runId: 'current', text, at: (deps.now ?? Date.now)() }],
      ':max': MAX_PENDING_STEERS,
    },
  };
}

/** Why a steer's condition failed: too many waiting for the run, or the run is not running (any more). */
async function steerRefusal(deps: ActorDeps, threadId: string, runId: string | undefined): Promise<'idle' | 'full'> {
  const actor = await getActor(deps, threadId);
  return actor?.status === 'running' && actor.current && (!runId || actor.current.runId === runId) ? 'full' : 'idle';
}

/** What a run's steps check: whether to stop, and the steering texts waiting for it. */
export interface RunFlags {
  abort: boolean;
  steer: string[];
}

/** The running run's control flags: whether it must stop, and steering texts waiting for it. */
export async function runFlags(deps: Pick<ActorDeps, 'db' | 'tableName'>, threadId: string, runId: string): Promise<RunFlags> {
  return flagsOf(await getActor(deps as ActorDeps, threadId), runId);
}

/** The flags of `runId` on the thread's actor item as read: a run that no longer holds the thread is to stop. */
export function flagsOf(actor: ActorItem | undefined, runId: string): RunFlags {
  if (!actor || actor.current?.runId !== runId) return { abort: true, steer: [] };
  return { abort: actor.abortRunId === runId, steer: (actor.steer ?? []).map((s) => s.text) };
}

/**
 * A transaction's check that `runId` still holds the thread and was not told to stop (and, with
 * `noSteer`, that no steering text waits): a step folds its stop and steer check into a write it
 * makes anyway, and reads the flags only when the check fails.
 */
export function runStillGoing(tableName: string, threadId: string, runId: string, options: { noSteer?: boolean } = {}) {
  return {
    ConditionCheck: {
      TableName: tableName,
      Key: actorKey(threadId),
      ConditionExpression: `#current.runId = :runId AND (attribute_not_exists(abortRunId) OR abortRunId <> :runId)${options.noSteer ? ' AND attribute_not_exists(steer)' : ''}`,
      ExpressionAttributeNames: { '#current': 'current' },
      ExpressionAttributeValues: { ':runId': runId },
    },
  };
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
      Item: { ...recentThreadKey(channelKey, userId), threadId, at: now, expiresAt: Math.floor(now / 1000) + ADMITTED_TTL_SECONDS },
    }),
  );
}

export async function recentThread(
  deps: Pick<ActorDeps, 'db' | 'tableName'>,
  channelKey: string,
  userId: string,
): Promise<string | undefined> {
  const out = await deps.db.send(
    new GetCommand({ TableName: deps.tableName, Key: recentThreadKey(channelKey, userId), ConsistentRead: true }),
  );
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
