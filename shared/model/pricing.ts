// What a model step costs: Bedrock's on-demand list prices in USD per million tokens, by model,
// for input, output, cache reads and cache writes (prompt caching). Bedrock reports the cached
// tokens apart from `inputTokens`, so each kind is priced once. settings.json `prices` overrides
// or adds models (a team with a private price, or a model not listed here); a model without a
// price counts tokens only, with a warning when its run starts.
import * as z from 'zod';

export const priceSchema = z.strictObject({
  input: z.number().nonnegative(),
  output: z.number().nonnegative(),
  cacheRead: z.number().nonnegative().default(0),
  cacheWrite: z.number().nonnegative().default(0),
});
export type Price = z.output<typeof priceSchema>;

/**
 * List prices (USD per million tokens) of the Anthropic models on Bedrock this project defaults to,
 * by foundation model id (without the inference profile's `global.`/`us.`/`eu.`/`apac.` prefix).
 * Regional (geography) profiles of the newest models cost about 10 % more than global ones: set
 * `prices` in settings.json when that matters to you.
 */
export const DEFAULT_PRICES: Record<string, Price> = {
  'anthropic.claude-sonnet-4-5-20250929-v1:0': { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  'anthropic.claude-sonnet-4-20250514-v1:0': { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  'anthropic.claude-haiku-4-5-20251001-v1:0': { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 },
  'anthropic.claude-opus-4-5-20251101-v1:0': { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 },
  'anthropic.claude-3-5-haiku-20241022-v1:0': { input: 0.8, output: 4, cacheRead: 0.08, cacheWrite: 1 },
};

const PROFILE_PREFIX = /^(global|us|eu|apac|jp|au|ca|us-gov)\./;

/** The price of a model id or inference profile id: settings first, then the list; undefined when unknown. */
export function priceOf(modelId: string, overrides: Record<string, Price> = {}): Price | undefined {
  const foundation = modelId.replace(PROFILE_PREFIX, '');
  return overrides[modelId] ?? overrides[foundation] ?? DEFAULT_PRICES[foundation];
}

export interface StepUsage {
  inputTokens?: number;
  outputTokens?: number;
  cacheReadInputTokens?: number;
  cacheWriteInputTokens?: number;
}

/** USD, rounded to a millionth of a dollar (what one token of the cheapest kind costs is smaller). */
export function costOf(usage: StepUsage, price: Price): number {
  const dollars =
    ((usage.inputTokens ?? 0) * price.input +
      (usage.outputTokens ?? 0) * price.output +
      (usage.cacheReadInputTokens ?? 0) * price.cacheRead +
      (usage.cacheWriteInputTokens ?? 0) * price.cacheWrite) /
    1_000_000;
  return Math.round(dollars * 1_000_000) / 1_000_000;
}

/** Several steps' usage (and cost, when every step had one) added up. */
export function totalUsage(steps: (StepUsage & { costUsd?: number })[]): Required<StepUsage> & { costUsd?: number } {
  const total = { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheWriteInputTokens: 0 };
  let cost: number | undefined = 0;
  for (const step of steps) {
    total.inputTokens += step.inputTokens ?? 0;
    total.outputTokens += step.outputTokens ?? 0;
    total.cacheReadInputTokens += step.cacheReadInputTokens ?? 0;
    total.cacheWriteInputTokens += step.cacheWriteInputTokens ?? 0;
    cost = cost === undefined || step.costUsd === undefined ? undefined : cost + step.costUsd;
  }
  return { ...total, ...(cost === undefined ? {} : { costUsd: Math.round(cost * 1_000_000) / 1_000_000 }) };
}

/** 950, 1.2k, 12k: token counts as people read them. */
export const thousands = (n: number) => (n >= 10_000 ? `${Math.round(n / 1000)}k` : n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n));

/** The reply footer of `showCost`: `Cost of this run: $0.0123 (12.3k tokens in, 456 out, 10k from cache)`. */
export function costFooter(total: ReturnType<typeof totalUsage>): string {
  const cached = total.cacheReadInputTokens ? `, ${thousands(total.cacheReadInputTokens)} from cache` : '';
  const tokens = `${thousands(total.inputTokens + total.cacheWriteInputTokens)} tokens in, ${thousands(total.outputTokens)} out${cached}`;
  if (total.costUsd === undefined) return `Tokens of this run: ${tokens} (no price is known for this model)`;
  return `Cost of this run: $${total.costUsd < 0.01 ? total.costUsd.toFixed(4) : total.costUsd.toFixed(3)} (${tokens})`;
}

/**
 * Fargate on-demand prices in us-east-1 for Linux, USD per vCPU-hour and per GB-hour. The sandbox
 * task runs on ARM64 (Graviton), about 20 % cheaper than x86; other regions differ by a few
 * percent. Per second: the default task (1 vCPU, 2 GB) on ARM64 costs
 * (1 × 0.03238 + 2 × 0.00356) / 3600 = $0.0000109722 a second, $0.0395 an hour.
 */
export const FARGATE_PRICES = {
  arm64: { vcpuHour: 0.03238, gbHour: 0.00356 },
  x86_64: { vcpuHour: 0.04048, gbHour: 0.004445 },
} as const;

/** A sandbox task's size, as the task definition has it: CPU units (1024 = 1 vCPU) and MiB. */
export interface SandboxSize {
  cpu: number;
  memoryMiB: number;
}

/** USD for `seconds` of a sandbox task of this size (Fargate bills per second), rounded to a millionth. */
export function sandboxCostOf(seconds: number, size: SandboxSize, architecture: keyof typeof FARGATE_PRICES = 'arm64'): number {
  const price = FARGATE_PRICES[architecture];
  const perHour = (size.cpu / 1024) * price.vcpuHour + (size.memoryMiB / 1024) * price.gbHour;
  return Math.round(((Math.max(0, seconds) * perHour) / 3600) * 1_000_000) / 1_000_000;
}
