// Budgets: spending limits in US dollars per deployment, adapter, channel or user, per day or month
// (UTC), optionally for one kind of run. Each applies through a counter item in the state table.
// Before a model call the step reserves its worst case on every counter that applies, on condition
// that the budget is not spent yet; after the call it settles (the real cost in, the reservation
// out). Conditions and updates are one transaction, so racing threads cannot all slip past a
// spent budget: each can overshoot it by at most the one step it had already reserved. The same
// items count tokens and cost for `usage` (the thread, the channel today and this month).
import {
  GetCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { retryOnConflict } from '../aws/retry.ts';
import { isConditionalCheckFailed, transactionCancellationReasons } from '../aws/errors.ts';
import { channelKeyOf, parseThreadId } from '../ids.ts';
import type { Price, StepUsage } from '../model/pricing.ts';
import { causedByOf } from '../events/chain.ts';
import type { Prompt } from '../contracts.ts';
import { TRIGGER_KINDS, triggerKindOf, type TriggerKind } from '../run/trigger-kind.ts';
import { spendKey, spendPeriodOf, threadSpendKey, type TableKey } from '../table.ts';

const MATCH_SHAPES = {
  deployment: undefined,
  adapter: { pattern: /^[a-z][a-z0-9-]*$/, example: 'slack' },
  channel: { pattern: /^[a-z][a-z0-9-]*:[^:\s]+/, example: 'slack:C0123' },
  user: { pattern: /^[a-z][a-z0-9-]*:[^:\s]+$/, example: 'slack:U0456' },
} as const;

export const budgetSchema = z
  .strictObject({
    scope: z.enum(['deployment', 'adapter', 'channel', 'user']),
    /** One adapter, channel or user; without it the budget applies to each one separately. */
    match: z.string().min(1).max(300).optional(),
    period: z.enum(['day', 'month']),
    usd: z.number().positive().max(1_000_000),
    /** The share of `usd` at which the thread that crosses it is warned, once per period. */
    warnAt: z.number().gt(0).lt(1).optional(),
    /** Only runs of this kind count against it: `message` (a person), `schedule` (event files, heartbeats, the bus), `trigger`. */
    trigger: z.enum(TRIGGER_KINDS).optional(),
  })
  .superRefine((budget, ctx) => {
    const shape = MATCH_SHAPES[budget.scope];
    if (budget.match === undefined) return;
    if (!shape) ctx.addIssue({ code: 'custom', path: ['match'], message: 'a deployment budget has no match' });
    else if (!shape.pattern.test(budget.match))
      ctx.addIssue({ code: 'custom', path: ['match'], message: `a ${budget.scope} budget's match looks like "${shape.example}"` });
  });
export type Budget = z.infer<typeof budgetSchema>;

/** Whose spending a run is: what budgets match against. */
export interface SpendSubject {
  threadId: string;
  adapter: string;
  channel: string;
  /**
   * `adapter:userId` of the person who asked, or whose run wrote the event file that started this
   * one (shared/events/chain.ts); absent for runs no person caused.
   */
  user?: string;
  trigger: TriggerKind;
}

export function spendSubjectOf(threadId: string, prompt: Pick<Prompt, 'author' | 'source' | 'heartbeat' | 'causedBy'>): SpendSubject {
  const user = causedByOf(threadId, prompt);
  return {
    threadId,
    adapter: parseThreadId(threadId).adapter,
    channel: channelKeyOf(threadId),
    ...(user ? { user } : {}),
    trigger: triggerKindOf(prompt),
  };
}

/** One budget as it applies to a run: its counter, and what a person is told about it. */
export interface AppliedBudget {
  budget: Budget;
  key: TableKey;
  /** "the daily budget of $5.00 for channel slack:C0123" */
  label: string;
  /** When the period ends and the counter starts again. */
  resetsAt: Date;
}

const periodEndOf = (period: Budget['period'], now: Date) =>
  period === 'day'
    ? new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1))
    : new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));

/** $5.00, $0.07, $0.123, $0.0042: cents always, finer only where it matters. */
export const dollars = (usd: number) => `$${usd >= 1 ? usd.toFixed(2) : usd >= 0.01 ? usd.toFixed(3).replace(/0$/, '') : usd.toFixed(4)}`;
const KIND_WORDS: Record<TriggerKind, string> = { message: "people's messages", schedule: 'scheduled runs', trigger: 'triggered runs' };

/** What budgets match against: a run's subject, or a firing's before its thread exists. */
type Spender = Omit<SpendSubject, 'threadId'>;

function whoOf(budget: Budget, subject: Spender): string | undefined {
  switch (budget.scope) {
    case 'deployment':
      return '*';
    case 'adapter':
      return budget.match ?? subject.adapter;
    case 'channel':
      return budget.match ?? subject.channel;
    case 'user':
      return budget.match ?? subject.user;
  }
}

function applies(budget: Budget, subject: Spender): boolean {
  if (budget.trigger && budget.trigger !== subject.trigger) return false;
  if (budget.match === undefined) return budget.scope !== 'user' || subject.user !== undefined;
  return {
    deployment: true,
    adapter: budget.match === subject.adapter,
    channel: budget.match === subject.channel,
    user: budget.match === subject.user,
  }[budget.scope];
}

/** The budgets of settings.json that apply to a run of `subject`, at `now`. */
export function budgetsFor(budgets: readonly Budget[], subject: Spender, now: Date): AppliedBudget[] {
  return budgets.flatMap((budget) => {
    const who = whoOf(budget, subject);
    if (!who || !applies(budget, subject)) return [];
    const each =
      budget.match === undefined && budget.scope !== 'deployment'
        ? `each ${budget.scope} (here ${who})`
        : budget.scope === 'deployment'
          ? 'this deployment'
          : `${budget.scope} ${who}`;
    const kind = budget.trigger ? ` of ${KIND_WORDS[budget.trigger]}` : '';
    return [
      {
        budget,
        key: spendKey(budget.period, now, budget.scope, who, budget.trigger),
        label: `the ${budget.period === 'day' ? 'daily' : 'monthly'} budget of ${dollars(budget.usd)} for ${each}${kind}`,
        resetsAt: periodEndOf(budget.period, now),
      },
    ];
  });
}

/** The counters every step adds to, budget or not: the thread, and the channel and deployment per day and month. */
export function usageKeys(subject: SpendSubject, now: Date): TableKey[] {
  return [
    threadSpendKey(subject.threadId),
    spendKey('day', now, 'channel', subject.channel),
    spendKey('month', now, 'channel', subject.channel),
    spendKey('day', now, 'deployment', '*'),
    spendKey('month', now, 'deployment', '*'),
  ];
}

/** The most a step can cost: every input token written to the cache (the dearest input) and a full answer. */
export function worstCaseUsd(price: Price, inputTokens: number, maxOutputTokens: number): number {
  return (inputTokens * Math.max(price.input, price.cacheWrite) + maxOutputTokens * price.output) / 1_000_000;
}

export interface BudgetDeps {
  db: DynamoDBDocumentClient;
  tableName: string;
}

export type Reservation = { ok: true } | { ok: false; refused: AppliedBudget; spentUsd: number };

// Items outlive their period long enough for `usage` and operators to look back.
const KEEP_SECONDS = { day: 40 * 86_400, month: 400 * 86_400, thread: 180 * 86_400 };
const expiryOf = (key: TableKey, now: Date) => Math.ceil(now.getTime() / 1000) + KEEP_SECONDS[spendPeriodOf(key)];

/**
 * Reserves `worstUsd` on each applied budget, all or none, unless one is spent: then the first
 * spent one is returned with what was spent, and nothing is reserved.
 */
export async function reserveStep(deps: BudgetDeps, applied: readonly AppliedBudget[], worstUsd: number, now: Date): Promise<Reservation> {
  if (!applied.length) return { ok: true };
  const items: TransactItems = applied.map(({ key, budget }) => ({
    Update: {
      TableName: deps.tableName,
      Key: key,
      UpdateExpression: 'ADD reservedUsd :worst SET expiresAt = :expires',
      ConditionExpression: 'attribute_not_exists(spentUsd) OR spentUsd < :usd',
      ExpressionAttributeValues: { ':worst': worstUsd, ':usd': budget.usd, ':expires': expiryOf(key, now) },
    },
  }));
  try {
    await transact(deps, items);
    return { ok: true };
  } catch (error) {
    const index = transactionCancellationReasons(error)?.indexOf('ConditionalCheckFailed') ?? -1;
    if (index < 0) throw error;
    const refused = applied[index]!;
    return { ok: false, refused, spentUsd: (await readSpend(deps, refused.key)).spentUsd };
  }
}

type TransactItems = NonNullable<TransactWriteCommandInput['TransactItems']>;

/** One transaction, tried again while it only lost a race to another thread's on the same counter. */
async function transact(deps: BudgetDeps, items: TransactItems): Promise<void> {
  await retryOnConflict('Could not update the spending counters', async () => {
    await deps.db.send(new TransactWriteCommand({ TransactItems: items }));
  });
}

export interface Spend {
  spentUsd: number;
  reservedUsd: number;
  steps: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

export async function readSpend(deps: BudgetDeps, key: TableKey): Promise<Spend> {
  const out = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: key, ConsistentRead: true }));
  const item = out.Item ?? {};
  const n = (name: string) => (typeof item[name] === 'number' ? (item[name] as number) : 0);
  return {
    spentUsd: n('spentUsd'),
    reservedUsd: Math.max(0, n('reservedUsd')),
    steps: n('steps'),
    inputTokens: n('inputTokens'),
    outputTokens: n('outputTokens'),
    cacheReadTokens: n('cacheReadTokens'),
    cacheWriteTokens: n('cacheWriteTokens'),
  };
}

/**
 * Settles a step: its real cost and tokens go on every counter (the applied budgets and the usage
 * counters), and the reservation comes off the budgets. `usage` undefined: the call failed and
 * cost nothing, so only the reservation is given back. Returns the budgets whose warning share
 * this step crossed first (each is warned once per period).
 */
export async function settleStep(
  deps: BudgetDeps,
  applied: readonly AppliedBudget[],
  usageCounters: readonly TableKey[],
  worstUsd: number,
  usage: (StepUsage & { costUsd?: number }) | undefined,
  now: Date,
): Promise<{ warn: { applied: AppliedBudget; spentUsd: number }[] }> {
  const reserved = new Set(applied.map(({ key }) => `${key.pk}|${key.sk}`));
  const keys = new Map<string, TableKey>();
  for (const key of [...applied.map((a) => a.key), ...(usage ? usageCounters : [])]) keys.set(`${key.pk}|${key.sk}`, key);
  if (!keys.size) return { warn: [] };
  const cost = usage?.costUsd ?? 0;
  const items = [...keys].map(([id, key]) => {
    const adds = [
      ...(reserved.has(id) ? ['reservedUsd :unreserve'] : []),
      ...(usage
        ? [
            'spentUsd :cost',
            'steps :one',
            'inputTokens :in',
            'outputTokens :out',
            'cacheReadTokens :cacheRead',
            'cacheWriteTokens :cacheWrite',
          ]
        : []),
    ];
    return {
      Update: {
        TableName: deps.tableName,
        Key: key,
        UpdateExpression: `ADD ${adds.join(', ')} SET expiresAt = :expires`,
        ExpressionAttributeValues: {
          ':expires': expiryOf(key, now),
          ...(reserved.has(id) ? { ':unreserve': -worstUsd } : {}),
          ...(usage
            ? {
                ':cost': cost,
                ':one': 1,
                ':in': usage.inputTokens ?? 0,
                ':out': usage.outputTokens ?? 0,
                ':cacheRead': usage.cacheReadInputTokens ?? 0,
                ':cacheWrite': usage.cacheWriteInputTokens ?? 0,
              }
            : {}),
        },
      },
    };
  });
  // Updates to different items: one transaction keeps the counters of one step in step.
  await transact(deps, items);
  const warn: { applied: AppliedBudget; spentUsd: number }[] = [];
  if (!usage) return { warn };
  for (const each of applied.filter((a) => a.budget.warnAt !== undefined)) {
    try {
      const out = await deps.db.send(
        new UpdateCommand({
          TableName: deps.tableName,
          Key: each.key,
          UpdateExpression: 'SET warnedAt = :now',
          ConditionExpression: 'attribute_not_exists(warnedAt) AND spentUsd >= :threshold',
          ExpressionAttributeValues: { ':now': now.toISOString(), ':threshold': each.budget.usd * each.budget.warnAt! },
          ReturnValues: 'ALL_NEW',
        }),
      );
      warn.push({ applied: each, spentUsd: (out.Attributes?.spentUsd as number | undefined) ?? 0 });
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
    }
  }
  return { warn };
}

const resetText = (resetsAt: Date) => `${resetsAt.toISOString().slice(0, 16).replace('T', ' ')} UTC`;

/** What a run stopped by a budget (`stopped`), or a prompt refused under one (`refused`), is told. */
/** "the daily budget of $5.00 for channel slack:C0123 is spent ($5.07 so far). It resets at 2026-11-25 00:00 UTC" */
export const budgetSpentText = (refused: AppliedBudget, spentUsd: number): string =>
  `${refused.label} is spent (${dollars(spentUsd)} so far). It resets at ${resetText(refused.resetsAt)}`;

export function budgetReachedText(refused: AppliedBudget, spentUsd: number, when: 'stopped' | 'refused'): string {
  const lead = when === 'stopped' ? "I've stopped" : "I didn't start on this";
  return `${lead}: ${budgetSpentText(refused, spentUsd)}; an admin can raise it in settings.json \`budgets\`.`;
}

export function budgetWarningText(applied: AppliedBudget, spentUsd: number): string {
  const share = Math.round((applied.budget.warnAt ?? 0) * 100);
  return `Heads up: ${dollars(spentUsd)} of ${applied.label} is spent (over ${share} %). It resets at ${resetText(applied.resetsAt)}.`;
}

/** The first applied budget that is spent already, for refusing a prompt before its run starts. */
export async function spentBudget(
  deps: BudgetDeps,
  applied: readonly AppliedBudget[],
): Promise<{ refused: AppliedBudget; spentUsd: number } | undefined> {
  const spends = await Promise.all(applied.map((a) => readSpend(deps, a.key)));
  const index = spends.findIndex((spend, i) => spend.spentUsd >= applied[i]!.budget.usd);
  return index < 0 ? undefined : { refused: applied[index]!, spentUsd: spends[index]!.spentUsd };
}
