// A prompt under a spent budget is answered now, without a run (the model step checks again). A
// person hears it each time they ask; a scheduled prompt's thread hears it once per budget period (a
// heartbeat every half hour would otherwise repeat it all day).
import { budgetReachedText, budgetsFor, spendSubjectOf } from '../../policy/budgets.ts';
import { countBudgetRefusal } from '../../observability/run-metrics.ts';
import { end, next, type Gate } from '../context.ts';
import { CHAT_VALUE } from '../../table.ts';

const TOLD_TTL_MS = 32 * 86_400_000;

export const refuseOverBudget: Gate = async ({ prompt, person, settings, thread, now }, deps) => {
  const spent = await deps.spentBudget(budgetsFor(settings.budgets, spendSubjectOf(prompt.threadId, prompt), now));
  if (!spent) return next();
  const { key } = spent.refused;
  const tell =
    person !== undefined ||
    (await (await deps.chatState()).setIfNotExists(CHAT_VALUE.budgetRefusalTold(prompt.threadId, key), true, TOLD_TTL_MS));
  deps.logger.warn('prompt refused: budget spent', {
    threadId: prompt.threadId,
    messageId: prompt.messageId,
    user: prompt.author.userId,
    budget: spent.refused.budget,
    spentUsd: spent.spentUsd,
    told: tell,
  });
  if (tell) await thread.tell(budgetReachedText(spent.refused, spent.spentUsd, 'refused'));
  countBudgetRefusal(deps.metrics, prompt);
  return end('refused');
};
