// What a run costs and what it may spend: prices, the cost line, budgets.
import * as z from 'zod';
import { budgetSchema } from '../../policy/budgets.ts';
import { priceSchema } from '../../model/pricing.ts';
import { settingsGroup } from '../group.ts';

export const spendingSettings = settingsGroup({
  keys: {
    /** USD per million tokens by model or inference profile id, over the built-in list (shared/model/pricing.ts). */
    prices: z.record(z.string(), priceSchema).default({}),
    /** Post the run's tokens and cost in the thread when it finishes. */
    showCost: z.boolean().default(false),
    /** Spending limits, checked before every model call (shared/policy/budgets.ts). */
    budgets: z.array(budgetSchema).max(50).default([]),
  },
});
