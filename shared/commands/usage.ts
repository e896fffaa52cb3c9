// `usage` in a thread, or `/usage` in a channel: what the thread, the channel today and the channel
// this month have cost, and each budget that applies to the person asking, with what is left.
// Read from the same counters the model steps settle on (shared/policy/budgets.ts).
import {
  budgetsFor,
  spendSubjectOf,
  dollars,
  readSpend,
  type Budget,
  type BudgetDeps,
  type Spend,
  type SpendSubject,
} from '../policy/budgets.ts';
import { spendKey, threadSpendKey } from '../table.ts';
import { thousands } from '../model/pricing.ts';
import { defineCommand } from './command.ts';

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

/**
 * `usage` in a thread: the report for its prompt's author there (or for whoever caused an event's
 * prompt); `/usage` in a channel: the report for its sender, with their most recent thread there.
 */
export const usageCommand = defineCommand({
  name: 'usage',
  parse: (text) => (/^\/?usage$/i.test(text) ? {} : undefined),
  runsAt: 'dispatch',
  who: 'anyone',
  slash: { command: '/usage' },
  async answer({ who, channel, threadId, prompt }, deps) {
    const settings = await deps.settings();
    const subject: SpendSubject = prompt
      ? spendSubjectOf(prompt.threadId, prompt)
      : {
          threadId: threadId ?? '',
          adapter: who?.adapter ?? '',
          channel,
          ...(who ? { user: `${who.adapter}:${who.userId}` } : {}),
          trigger: 'message',
        };
    return { text: await usageReport(deps.control.actor, settings.budgets, subject, new Date()) };
  },
});
