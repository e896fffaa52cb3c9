// A model step under the run's budgets: reserve the step's worst case before the call, settle with
// what it really cost after (or give the reservation back when the call failed), and warn the
// thread once when a budget's warning share is crossed.
import type { SystemContentBlock } from '@aws-sdk/client-bedrock-runtime';
import {
  budgetReachedText,
  budgetsFor,
  budgetWarningText,
  reserveStep,
  settleStep,
  spendSubjectOf,
  usageKeys,
  worstCaseUsd,
} from '../../policy/budgets.ts';
import { estimateTokens } from '../../context/compaction.ts';
import type { StepUsage } from '../../model/pricing.ts';
import type { RunInput } from '../../contracts.ts';
import type { ContextEntry } from '../../context/store.ts';
import type { AgentDeps } from './deps.ts';
import type { RunSnapshot } from './snapshot.ts';

export type StepSpend = { refused: string } | { settle(usage: (StepUsage & { costUsd?: number }) | undefined): Promise<void> };

export async function reserveModelStep(
  deps: AgentDeps,
  run: RunInput,
  snapshot: RunSnapshot,
  request: { system: SystemContentBlock[]; entries: readonly ContextEntry[] },
  firstStep: boolean,
): Promise<StepSpend> {
  const now = new Date(deps.now());
  const subject = spendSubjectOf(run.threadId, run.prompt);
  const price = snapshot.price;
  // Without a price a budget in dollars cannot be kept: prepare warned; tokens are still counted.
  const applied = price ? budgetsFor(snapshot.budgets ?? [], subject, now) : [];
  const inputTokens =
    estimateTokens(JSON.stringify(request.system)) +
    estimateTokens(request.entries) +
    estimateTokens(JSON.stringify(deps.tools.toolConfig(false)));
  const worst = price ? worstCaseUsd(price, inputTokens, snapshot.maxOutputTokens) : 0;
  const reservation = await reserveStep(deps.ledger, applied, worst, now);
  const log = deps.logger.with({
    runId: run.runId,
    threadId: run.threadId,
    channel: subject.channel,
    user: subject.user,
    trigger: subject.trigger,
  });
  if (!reservation.ok) {
    log.warn('budget reached: model call refused', { budget: reservation.refused.budget, spentUsd: reservation.spentUsd });
    return { refused: budgetReachedText(reservation.refused, reservation.spentUsd, firstStep ? 'refused' : 'stopped') };
  }
  return {
    settle: async (usage) => {
      try {
        const { warn } = await settleStep(deps.ledger, applied, usageKeys(subject, now), worst, usage, now);
        for (const each of warn) {
          log.info('budget warning', { budget: each.applied.budget, spentUsd: each.spentUsd });
          await deps.thread(run).post(budgetWarningText(each.applied, each.spentUsd));
        }
      } catch (error) {
        // The reservation stays counted: a budget errs on the side of spending less.
        log.error('could not settle the step on its budgets', { error, usage });
      }
    },
  };
}
