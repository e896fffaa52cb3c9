import { test } from 'node:test';
import assert from 'node:assert/strict';
import { costFooter, costOf, DEFAULT_PRICES, FARGATE_PRICES, priceOf, sandboxCostOf, totalUsage } from '../../shared/model/pricing.ts';
import { DEFAULT_SETTINGS } from '../../infra/settings.ts';
import { settingsSchema } from '../../shared/settings/schema.ts';

test('cost per step: each kind of token at its price, cache reads and writes included', () => {
  const sonnet = priceOf('global.anthropic.claude-sonnet-4-5-20250929-v1:0')!;
  assert.deepEqual(sonnet, { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 });
  // 1,000,000 of each kind: 3 + 15 + 0.30 + 3.75
  assert.equal(costOf({ inputTokens: 1e6, outputTokens: 1e6, cacheReadInputTokens: 1e6, cacheWriteInputTokens: 1e6 }, sonnet), 22.05);
  // A cached step: most of the prompt read from the cache at a tenth of the input price.
  assert.equal(costOf({ inputTokens: 200, outputTokens: 300, cacheReadInputTokens: 20_000 }, sonnet), 0.0111);
  assert.equal(costOf({ inputTokens: 20_200, outputTokens: 300 }, sonnet), 0.0651, 'the same step without the cache');
  assert.equal(costOf({}, sonnet), 0);
});

test('prices: every inference profile of a listed model, the deployment default among them; settings override or add', () => {
  assert.ok(priceOf(DEFAULT_SETTINGS.modelId), 'the default model has a price');
  assert.deepEqual(priceOf('us.anthropic.claude-haiku-4-5-20251001-v1:0'), DEFAULT_PRICES['anthropic.claude-haiku-4-5-20251001-v1:0']);
  assert.equal(priceOf('eu.anthropic.claude-haiku-4-5-20251001-v1:0')?.input, 1);
  assert.equal(priceOf('meta.llama3-70b-instruct-v1:0'), undefined, 'unknown: tokens only');
  const settings = settingsSchema.parse({
    prices: {
      'meta.llama3-70b-instruct-v1:0': { input: 2.65, output: 3.5 },
      'anthropic.claude-haiku-4-5-20251001-v1:0': { input: 2, output: 6 },
    },
  });
  assert.deepEqual(priceOf('meta.llama3-70b-instruct-v1:0', settings.prices), { input: 2.65, output: 3.5, cacheRead: 0, cacheWrite: 0 });
  assert.equal(
    priceOf('global.anthropic.claude-haiku-4-5-20251001-v1:0', settings.prices)?.input,
    2,
    'an override by foundation model covers its profiles',
  );
  assert.equal(settingsSchema.safeParse({ prices: { x: { input: -1, output: 1 } } }).success, false);
});

test('run totals and the footer', () => {
  const total = totalUsage([
    { inputTokens: 1500, outputTokens: 200, cacheReadInputTokens: 9000, costUsd: 0.0102 },
    { inputTokens: 100, outputTokens: 50, cacheWriteInputTokens: 400, costUsd: 0.0027 },
  ]);
  assert.deepEqual(total, {
    inputTokens: 1600,
    outputTokens: 250,
    cacheReadInputTokens: 9000,
    cacheWriteInputTokens: 400,
    costUsd: 0.0129,
  });
  assert.equal(costFooter(total), 'Cost of this run: $0.013 (2.0k tokens in, 250 out, 9.0k from cache)');
  const unpriced = totalUsage([
    { inputTokens: 10, outputTokens: 5, costUsd: 0.1 },
    { inputTokens: 10, outputTokens: 5 },
  ]);
  assert.equal(unpriced.costUsd, undefined, 'one unpriced step: no total price');
  assert.equal(costFooter(unpriced), 'Tokens of this run: 20 tokens in, 10 out (no price is known for this model)');
  assert.equal(
    costFooter(totalUsage([{ inputTokens: 10, outputTokens: 5, costUsd: 0.000105 }])),
    'Cost of this run: $0.0001 (10 tokens in, 5 out)',
  );
});

test('sandbox cost: Fargate seconds times the task size at the us-east-1 Linux prices', () => {
  assert.deepEqual(FARGATE_PRICES.arm64, { vcpuHour: 0.03238, gbHour: 0.00356 });
  assert.deepEqual(FARGATE_PRICES.x86_64, { vcpuHour: 0.04048, gbHour: 0.004445 });
  // The default task (1 vCPU, 2 GB) for an hour on ARM64: 0.03238 + 2 × 0.00356.
  assert.equal(sandboxCostOf(3600, { cpu: 1024, memoryMiB: 2048 }), 0.0395);
  assert.equal(sandboxCostOf(3600, { cpu: 1024, memoryMiB: 2048 }, 'x86_64'), 0.04937);
  // Half a vCPU and 1 GB for 10 minutes: (0.5 × 0.03238 + 1 × 0.00356) / 6, to the millionth.
  assert.equal(sandboxCostOf(600, { cpu: 512, memoryMiB: 1024 }), 0.003292);
  assert.equal(sandboxCostOf(0, { cpu: 1024, memoryMiB: 2048 }), 0);
  assert.equal(sandboxCostOf(-5, { cpu: 1024, memoryMiB: 2048 }), 0, 'a clock skew is no refund');
});
