/**
 * The price table (lib/prices.ts, docs/spend.md "Prices"): exact names, dated snapshots by prefix, unknown models
 * priced null (never guessed), and MODEL_PRICES merged over the defaults or refused with a clear message.
 */
import { loadConfig } from '../../lib/config';
import { costOf, DEFAULT_MODEL_PRICES, parseModelPrices, priceOf } from '../../lib/prices';

it('prices a model by its name, a dated snapshot by the longest prefix, an unknown one not at all', () => {
  expect(priceOf(DEFAULT_MODEL_PRICES, 'claude-sonnet-4')).toEqual(DEFAULT_MODEL_PRICES['claude-sonnet-4']);
  expect(priceOf(DEFAULT_MODEL_PRICES, 'claude-sonnet-4-5-20250929')).toBe(DEFAULT_MODEL_PRICES['claude-sonnet-4-5']);
  expect(priceOf(DEFAULT_MODEL_PRICES, 'gpt-4.1-mini-2025-04-14')).toBe(DEFAULT_MODEL_PRICES['gpt-4.1-mini']);
  expect(priceOf(DEFAULT_MODEL_PRICES, 'my-local-llama')).toBeUndefined();
  expect(costOf(DEFAULT_MODEL_PRICES, 'my-local-llama', { inputTokens: 10, outputTokens: 10 })).toBeNull();
  expect(costOf(DEFAULT_MODEL_PRICES, 'builtin', { inputTokens: 10, outputTokens: 10 })).toBe(0);
  // 1M input at 3, 1M output at 15, 1M cache reads at 0.3, 1M cache writes at 3.75.
  expect(
    costOf(DEFAULT_MODEL_PRICES, 'claude-sonnet-4', {
      inputTokens: 1e6,
      outputTokens: 1e6,
      cacheReadTokens: 1e6,
      cacheWriteTokens: 1e6,
    })
  ).toBeCloseTo(22.05, 8);
});

it('MODEL_PRICES adds and overrides models; a bad value is a configuration error', () => {
  const parsed = parseModelPrices(
    '{"my-local-llama": {"input": 0.1, "output": 0.2}, "gpt-4o": {"input": 1, "output": 2}}'
  );
  expect('table' in parsed && parsed.table['my-local-llama']).toEqual({ input: 0.1, output: 0.2 });
  expect('table' in parsed && parsed.table['gpt-4o']).toEqual({ input: 1, output: 2 });
  expect('table' in parsed && parsed.table['claude-opus-4']).toBe(DEFAULT_MODEL_PRICES['claude-opus-4']);
  expect(parseModelPrices('[]')).toHaveProperty('error');
  expect(parseModelPrices('{"x": {"input": -1, "output": 1}}')).toHaveProperty('error');
  expect(parseModelPrices('{"x": {"input": 1, "output": 1, "extra": 1}}')).toHaveProperty('error');
  expect(() => loadConfig({ MODEL_PRICES: 'not json' })).toThrow(/MODEL_PRICES/);
  expect(loadConfig({}).modelPrices).toBe(DEFAULT_MODEL_PRICES);
  expect(loadConfig({ BUDGET_CACHE_MS: '0' }).budgetCacheMs).toBe(0);
});
