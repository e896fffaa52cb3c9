// A model step's two calls to the state table, each carrying what the step used to read or write on
// its own. Before the call: that the run still holds the thread and was not stopped, that no earlier
// attempt of the step posted its reply, and the reservation of the step's worst case on every budget
// that applies (one transaction; with no budget to reserve on, one read of the two items). After
// it: the settlement (the real cost in, the reservation out), the record of the posted reply, and
// again that the run was neither stopped nor (when it would end) steered meanwhile, in one
// transaction. Where a transaction carries the checks, the flags and the record are read only when
// a check fails.
import type { SystemContentBlock } from '@aws-sdk/client-bedrock-runtime';
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import {
  type AppliedBudget,
  budgetReachedText,
  budgetsFor,
  budgetWarningText,
  crossedWarnings,
  refusalAt,
  reservationItems,
  settlementItems,
  spendSubjectOf,
  type TransactItem,
  usageKeys,
  worstCaseUsd,
} from '../../policy/budgets.ts';
import { transactionCancellationReasons } from '../../aws/errors.ts';
import { retryOnConflict, TRY_AGAIN } from '../../aws/retry.ts';
import { estimateTokens } from '../../context/compaction.ts';
import type { StepUsage } from '../../model/pricing.ts';
import type { RunInput } from '../../contracts.ts';
import type { ContextEntry } from '../../context/store.ts';
import { type ActorItem, flagsOf, runStillGoing } from '../actor.ts';
import { getItems } from '../../aws/dynamodb.ts';
import { postedMessage, readRecord, recordAbsent, recordPut, writeRecord, type PostedMessage } from '../ledger.ts';
import { actorKey, ledgerKey, RUN_RECORD } from '../../table.ts';
import type { AgentDeps } from './deps.ts';
import { holderRunId } from '../subagents/child-run.ts';
import type { RunSnapshot } from './snapshot.ts';

/** What the step reserved, to settle after the call. */
export interface StepSpend {
  applied: AppliedBudget[];
  worstUsd: number;
  usageCounters: ReturnType<typeof usageKeys>;
  at: Date;
  log: AgentDeps['logger'];
}

export type StepStart =
  | { stopped: true }
  | { refused: string }
  /** `earlier`: the reply an earlier attempt of this step posted (a retried step edits it). */
  | { spend: StepSpend; earlier?: PostedMessage };

const CHECK_FAILED = 'ConditionalCheckFailed';

/** One transaction, tried again while it only lost a race to another one on a shared counter. */
async function transact(deps: AgentDeps, what: string, items: TransactItem[]): Promise<void> {
  await retryOnConflict(what, async () => {
    await deps.ledger.db.send(new TransactWriteCommand({ TransactItems: items }));
  });
}

export async function beginModelStep(
  deps: AgentDeps,
  run: RunInput,
  snapshot: RunSnapshot,
  request: { system: SystemContentBlock[]; entries: readonly ContextEntry[] },
  step: number,
): Promise<StepStart> {
  const at = new Date(deps.now());
  const subject = spendSubjectOf(run.threadId, run.prompt);
  const price = snapshot.price;
  // Without a price a budget in dollars cannot be kept: prepare warned; tokens are still counted.
  const applied = price ? budgetsFor(snapshot.budgets ?? [], subject, at) : [];
  // The worst case is only reserved on budgets: with none to reserve on, the request is not measured.
  const inputTokens = () =>
    estimateTokens(JSON.stringify(request.system)) +
    estimateTokens(request.entries) +
    estimateTokens(JSON.stringify(deps.tools.toolConfig(false)));
  const worstUsd = price && applied.length > 0 ? worstCaseUsd(price, inputTokens(), snapshot.maxOutputTokens) : 0;
  const log = deps.logger.with({
    runId: run.runId,
    threadId: run.threadId,
    channel: subject.channel,
    user: subject.user,
    trigger: subject.trigger,
  });
  const spend: StepSpend = { applied, worstUsd, usageCounters: usageKeys(subject, at), at, log };
  const { tableName } = deps.ledger;
  const replyRecord = RUN_RECORD.reply(step);
  if (applied.length === 0) {
    // Nothing to reserve: the checks are a read of the two items (consistent, as the transaction's
    // are), which also hands over the earlier attempt's record. On AWS a read costs less, and
    // answers sooner, than a transaction.
    const [actor, record] = await getItems(deps.ledger, [actorKey(run.threadId), ledgerKey(run.runId, replyRecord)]);
    if (flagsOf(actor as ActorItem | undefined, holderRunId(run)).abort) return { stopped: true };
    const posted = record?.value as PostedMessage | undefined;
    return { spend, ...(posted ? { earlier: posted } : {}) };
  }
  let earlier: PostedMessage | undefined;
  let checkRecord = true;
  return retryOnConflict(`Could not begin step ${step} of ${run.runId}`, async () => {
    const checks = [
      runStillGoing(tableName, run.threadId, holderRunId(run)),
      ...(checkRecord ? [recordAbsent(deps.ledger, run.runId, replyRecord)] : []),
    ];
    try {
      await deps.ledger.db.send(
        new TransactWriteCommand({ TransactItems: [...checks, ...reservationItems(tableName, applied, worstUsd, at)] }),
      );
      return { spend, ...(earlier ? { earlier } : {}) };
    } catch (error) {
      const reasons = transactionCancellationReasons(error);
      if (!reasons || reasons.includes('TransactionConflict')) throw error;
      // Stopped, or the thread moved on: nothing was reserved.
      if (reasons[0] === CHECK_FAILED) return { stopped: true };
      if (checkRecord && reasons[1] === CHECK_FAILED) {
        // A retried step: its reply is in the thread already.
        earlier = await readRecord<PostedMessage>(deps.ledger, run.runId, replyRecord);
        checkRecord = false;
        return TRY_AGAIN;
      }
      const index = reasons.indexOf(CHECK_FAILED, checks.length) - checks.length;
      if (index < 0) throw error;
      const refusal = await refusalAt(deps.ledger, applied, index);
      if (refusal.ok) throw error;
      log.warn('budget reached: model call refused', { budget: refusal.refused.budget, spentUsd: refusal.spentUsd });
      return { refused: budgetReachedText(refusal.refused, refusal.spentUsd, step === 0 ? 'refused' : 'stopped') };
    }
  });
}

export interface StepEnd {
  /** What the call cost; undefined: it failed and cost nothing (only the reservation is given back). */
  usage: (StepUsage & { costUsd?: number }) | undefined;
  /** The id of the reply this attempt posted, to record. */
  posted?: string;
  /** Check the run's flags: that it was not stopped (and, with noSteer, not steered). */
  check?: { noSteer: boolean };
}

/**
 * Settles the step, records its reply and checks the flags, in one transaction. Returns 'flagged'
 * when the check failed (the settlement and the record are then written without it): the caller
 * reads the flags to see what happened. A settlement that cannot be written is logged, not thrown:
 * the reservation stays counted, and a budget errs on the side of spending less.
 */
export async function endModelStep(
  deps: AgentDeps,
  run: RunInput,
  step: number,
  spend: StepSpend,
  end: StepEnd,
): Promise<'going' | 'flagged'> {
  const settle = settlementItems(deps.ledger.tableName, spend.applied, spend.usageCounters, spend.worstUsd, end.usage, spend.at);
  const record = end.posted ? [recordPut(deps.ledger, run.runId, RUN_RECORD.reply(step), postedMessage({ id: end.posted }))] : [];
  const what = `Could not end step ${step} of ${run.runId}`;
  let outcome: 'going' | 'flagged' = 'going';
  try {
    if (end.check) {
      try {
        await transact(deps, what, [
          ...settle,
          ...record,
          runStillGoing(deps.ledger.tableName, run.threadId, holderRunId(run), { noSteer: end.check.noSteer && !run.child }),
        ]);
      } catch (error) {
        if (transactionCancellationReasons(error)?.at(-1) !== CHECK_FAILED) throw error;
        outcome = 'flagged';
      }
    }
    if (!end.check || outcome === 'flagged') {
      if (settle.length + record.length > 0) await transact(deps, what, [...settle, ...record]);
    }
  } catch (error) {
    spend.log.error('could not settle the step on its budgets', { error, usage: end.usage });
    if (end.posted) await writeRecord(deps.ledger, run.runId, RUN_RECORD.reply(step), postedMessage({ id: end.posted }));
    return end.check ? 'flagged' : 'going';
  }
  if (end.usage) await warnCrossedBudgets(deps, run, spend);
  return outcome;
}

async function warnCrossedBudgets(deps: AgentDeps, run: RunInput, spend: StepSpend): Promise<void> {
  try {
    for (const each of await crossedWarnings(deps.ledger, spend.applied, spend.at)) {
      spend.log.info('budget warning', { budget: each.applied.budget, spentUsd: each.spentUsd });
      await deps.thread(run).post(budgetWarningText(each.applied, each.spentUsd));
    }
  } catch (error) {
    spend.log.error('could not warn of a budget', { error });
  }
}
