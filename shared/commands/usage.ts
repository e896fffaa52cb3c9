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
import { withoutMention } from '../run/control.ts';
import { useRefusal } from '../policy/access.ts';
import { REFUSAL_TEXTS } from '../admission/access-gate.ts';
import type { UsageRequest } from '../admission/ingress.ts';
import type { Prompt, Settings } from '../schemas.ts';
import { thousands } from '../model/pricing.ts';

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

/** `/usage` from someone in a channel: their usage report, if settings.json `access` lets them use the agent there. */
export async function answerUsage(
  deps: BudgetDeps,
  settings: Pick<Settings, 'access' | 'budgets'>,
  request: UsageRequest,
  now: Date,
): Promise<string> {
  const refusal = useRefusal(settings.access, request.who, request.channel);
  if (refusal) return REFUSAL_TEXTS[refusal];
  const subject: SpendSubject = {
    threadId: request.threadId ?? '',
    adapter: request.who.adapter,
    channel: request.channel,
    user: `${request.who.adapter}:${request.who.userId}`,
    trigger: 'message',
  };
  return usageReport(deps, settings.budgets, subject, now);
}

/** `usage` as a message in a thread: the report for its author there. */
export const threadUsageReport = (deps: BudgetDeps, budgets: readonly Budget[], prompt: Prompt, now: Date): Promise<string> =>
  usageReport(deps, budgets, spendSubjectOf(prompt.threadId, prompt), now);
