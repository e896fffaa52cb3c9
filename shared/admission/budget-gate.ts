// Dispatch's budget check: a prompt under a spent budget is answered without a run. A person hears
// it each time they ask; a scheduled prompt's thread hears it once per budget period (a heartbeat
// every half hour would otherwise repeat it all day).
import { type AccessGateDeps, personOf } from './access-gate.ts';
import { budgetReachedText, budgetsFor, spendSubjectOf, spentBudget, type Budget, type BudgetDeps } from '../policy/budgets.ts';
import type { Prompt } from '../schemas.ts';
import { CHAT_VALUE } from '../table.ts';

const TOLD_TTL_MS = 32 * 86_400_000;

export async function refusedByBudget(
  deps: AccessGateDeps & { budgets: BudgetDeps; now?: () => Date },
  budgets: readonly Budget[],
  prompt: Prompt,
): Promise<boolean> {
  const now = deps.now?.() ?? new Date();
  const spent = await spentBudget(deps.budgets, budgetsFor(budgets, spendSubjectOf(prompt.threadId, prompt), now));
  if (!spent) return false;
  const { key } = spent.refused;
  const tell =
    personOf(prompt) !== undefined ||
    (await (await deps.state()).setIfNotExists(CHAT_VALUE.budgetRefusalTold(prompt.threadId, key), true, TOLD_TTL_MS));
  deps.logger.warn('prompt refused: budget spent', {
    threadId: prompt.threadId,
    messageId: prompt.messageId,
    user: prompt.author.userId,
    budget: spent.refused.budget,
    spentUsd: spent.spentUsd,
    told: tell,
  });
  if (tell) await deps.reply(prompt, budgetReachedText(spent.refused, spent.spentUsd, 'refused'));
  return true;
}
