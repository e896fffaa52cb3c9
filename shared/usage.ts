// `usage` in a thread, or `/usage` in a channel: what the thread, the channel today and the channel
// this month have cost, and each budget that applies to the person asking, with what is left.
// Read from the same counters the model steps settle on (shared/budgets.ts).
import {
  budgetsFor,
  dollars,
  readSpend,
  spendKey,
  threadSpendKey,
  type Budget,
  type BudgetDeps,
  type Spend,
  type SpendSubject,
} from './budgets.ts';
import { withoutMention } from './control.ts';
import { thousands } from './pricing.ts';

/** `usage` (or `/usage`), after any leading mention of the bot. */
export const isUsageCommand = (text: string): boolean => /^\/?usage$/i.test(withoutMention(text));

function line(label: string, spend: Spend): string {
  const tokens = `${thousands(spend.inputTokens + spend.cacheWriteTokens)} tokens in, ${thousands(spend.outputTokens)} out${
    spend.cacheReadTokens ? `, ${thousands(spend.cacheReadTokens)} from cache` : ''
  }`;
  return `• ${label}: ${dollars(spend.spentUsd)} (${spend.steps} model call${spend.steps === 1 ? '' : 's'}; ${tokens})`;
}

/** The answer to `usage`; `subject.threadId` empty when asked outside a thread (a slash command with no recent thread). */
export async function usageReport(deps: BudgetDeps, budgets: readonly Budget[], subject: SpendSubject, now: Date): Promise<string> {
  const applied = budgetsFor(budgets, subject, now);
  const [thread, today, month, ...spent] = await Promise.all([
    subject.threadId ? readSpend(deps, threadSpendKey(subject.threadId)) : undefined,
    readSpend(deps, spendKey('day', now, 'channel', subject.channel)),
    readSpend(deps, spendKey('month', now, 'channel', subject.channel)),
    ...applied.map((a) => readSpend(deps, a.key)),
  ]);
  const lines = [
    ...(thread ? [line('This thread', thread)] : []),
    line(`This channel today (UTC)`, today!),
    line('This channel this month', month!),
  ];
  const budgetLines = applied.map((a, i) => {
    const used = spent[i]!.spentUsd;
    const left = Math.max(0, a.budget.usd - used);
    const resets = `${a.resetsAt.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
    return `• ${a.label[0]!.toUpperCase()}${a.label.slice(1)}: ${dollars(used)} spent, ${left > 0 ? `${dollars(left)} left` : 'none left'} (resets ${resets})`;
  });
  return [
    '*Usage*',
    ...lines,
    budgetLines.length ? '*Budgets that apply here*' : 'No budget applies here (settings.json `budgets`).',
    ...budgetLines,
  ].join('\n');
}
