// Acting on a thread's running run at once, beside its queue: stop and steer (the commands in
// shared/commands/, the kill switch), and releasing a lease whose run ended without releasing it.
import { DescribeExecutionCommand, StopExecutionCommand, type SFNClient } from '@aws-sdk/client-sfn';
import { isExecutionDoesNotExist } from '../aws/errors.ts';
import { slotHolders } from './capacity.ts';
import { addSteer, getActor, releaseLease, requestStop, startAndMark, steerWithMessage, type ActorDeps, type ActorItem } from './actor.ts';
import { type Prompt, type RunInput, utf8Bytes } from '../contracts.ts';
import type { JsonLogger } from '../observability/log.ts';

/** The Stop button's action id, on the card a run posts while it works. */
export const STOP_ACTION = 'stop-run';

export interface ControlDeps {
  actor: ActorDeps;
  sfn: SFNClient;
  stateMachineArn: string;
  logger: JsonLogger;
}

/** Executions are named by run id, so the ARN follows from the state machine's. */
export function executionArnFor(stateMachineArn: string, runId: string): string {
  return `${stateMachineArn.replace(':stateMachine:', ':execution:')}:${runId}`;
}

/**
 * Stop: flag the run (its in-flight model stream and sandbox command watch the flag and end) and
 * stop its execution; the run-ended rule then releases the thread and the next queued prompt runs.
 * With `runId`, only that run: the one whose requester the caller was checked against.
 */
export async function stopThread(
  deps: ControlDeps,
  threadId: string,
  reason = 'Stopped from the thread',
  runId?: string,
): Promise<'stopped' | 'idle'> {
  const run = await requestStop(deps.actor, threadId, runId);
  if (!run) return 'idle';
  try {
    await deps.sfn.send(
      new StopExecutionCommand({
        executionArn: executionArnFor(deps.stateMachineArn, run.executionName ?? run.runId),
        error: 'Stopped',
        cause: reason,
      }),
    );
  } catch (error) {
    // Not started yet: it sees the flag when it does. Already ended: nothing to stop.
    if (!isExecutionDoesNotExist(error)) throw error;
  }
  deps.logger.info('run stopped', { threadId, runId: run.runId, reason });
  return 'stopped';
}

/** Longest steering text (UTF-8 bytes): it waits in the actor item until the next tool boundary. */
export const MAX_STEER_BYTES = 4 * 1024;

export type SteerOutcome = Awaited<ReturnType<typeof addSteer>> | 'too-long';

export async function steerThread(deps: ControlDeps, threadId: string, text: string, runId?: string): Promise<SteerOutcome> {
  const outcome = utf8Bytes(text) > MAX_STEER_BYTES ? 'too-long' : await addSteer(deps.actor, threadId, text, runId);
  deps.logger.info(outcome === 'queued' ? 'steer queued' : 'steer dropped', { threadId, outcome });
  return outcome;
}

/** Steer mode: `prompt`'s text (`text`, with its author's name) steers the running `runId`, once per message. */
export async function steerWithPrompt(deps: ControlDeps, prompt: Prompt, text: string, runId: string): Promise<SteerOutcome | 'duplicate'> {
  const outcome = utf8Bytes(text) > MAX_STEER_BYTES ? 'too-long' : await steerWithMessage(deps.actor, prompt, text, runId);
  deps.logger.info(outcome === 'queued' ? 'message steered the running run' : 'message not steered', {
    threadId: prompt.threadId,
    outcome,
  });
  return outcome;
}

/** A lease held longer than this is checked against its execution when a prompt arrives. */
export const LEASE_CHECK_AFTER_MS = 2 * 60_000;

/**
 * A lease whose execution has ended (every end path releases, so this means a release was lost:
 * a dropped event, a handler that failed all its retries) is released now, so no thread can stick.
 */
export async function reclaimStaleLease(
  deps: ControlDeps,
  threadId: string,
  arrivingMessageId: string,
  now = Date.now(),
): Promise<boolean> {
  return reclaimStaleLeaseOf(deps, await getActor(deps.actor, threadId), arrivingMessageId, now);
}

/** The same, for a thread whose actor item (`actor`) the caller has just read (strongly consistent). */
export async function reclaimStaleLeaseOf(
  deps: ControlDeps,
  actor: ActorItem | undefined,
  arrivingMessageId: string,
  now = Date.now(),
): Promise<boolean> {
  const run = actor?.current;
  if (actor?.status !== 'running' || !run || now - (actor.leaseTakenAt ?? now) < LEASE_CHECK_AFTER_MS) return false;
  // The lease holder's own redelivery: admitting it resumes its start.
  if (run.prompt.messageId === arrivingMessageId) return false;
  let status: string | undefined;
  try {
    status = (
      await deps.sfn.send(
        new DescribeExecutionCommand({ executionArn: executionArnFor(deps.stateMachineArn, run.executionName ?? run.runId) }),
      )
    ).status;
  } catch (error) {
    if (!isExecutionDoesNotExist(error)) throw error;
    if (!actor.started) return startOrReclaim(deps, actor, run);
  }
  if (status === 'RUNNING' || status === 'PENDING_REDRIVE') return false;
  const release = await releaseLease(deps.actor, run.threadId, run.runId);
  deps.logger.warn('reclaimed a lease whose run had ended', { threadId: run.threadId, runId: run.runId, status, release: release.outcome });
  return true;
}

/**
 * A new thread found its channel's or the deployment's run slots all taken: release the slots of
 * leases whose run has ended (a release that was lost) before refusing it, instead of waiting for
 * those threads' next prompts. Returns how many were freed.
 */
export async function reclaimStaleSlots(deps: ControlDeps, channelKey: string | undefined, now = Date.now()): Promise<number> {
  let freed = 0;
  for (const holder of await slotHolders(deps.actor, channelKey)) {
    if (now - holder.at < LEASE_CHECK_AFTER_MS) continue;
    if (await reclaimStaleLease(deps, holder.threadId, '', now)) freed++;
  }
  return freed;
}

/**
 * A lease whose execution never started, found by a later prompt of the thread: the inbox is FIFO
 * per thread, so the holder's own retries have run out (a start that can never succeed). Try once more; if that fails too, release the thread so
 * it is not stuck behind a run that will never exist, and keep the prompt in the log.
 */
async function startOrReclaim(deps: ControlDeps, actor: ActorItem, run: RunInput): Promise<boolean> {
  try {
    await startAndMark(deps.actor, run);
    deps.logger.warn('started a run whose start had been lost', { threadId: run.threadId, runId: run.runId });
    return false;
  } catch (error) {
    const release = await releaseLease(deps.actor, run.threadId, run.runId);
    deps.logger.error('released a lease whose run could not start', {
      threadId: run.threadId,
      runId: run.runId,
      leaseTakenAt: actor.leaseTakenAt,
      release: release.outcome,
      prompt: { messageId: run.prompt.messageId, user: run.prompt.author.userId, text: run.prompt.text },
      error,
    });
    return true;
  }
}
