/**
 * The price table of model calls (docs/spend.md "Prices"): USD per million tokens, per model, for input, output and
 * (where the provider reports them) cache reads and cache writes. {@link DEFAULT_MODEL_PRICES} ships with the service;
 * MODEL_PRICES (lib/config.ts) overrides or adds models. A model is priced by its exact name, else by the longest
 * entry its name starts with followed by `-` (dated snapshots: `claude-sonnet-4-20250514` → `claude-sonnet-4`); a model
 * the table does not know costs null: its tokens are recorded, its cost is not (never guessed).
 */

/** USD per million tokens of one model. */
export interface ModelPrice {
  input: number;
  output: number;
  /** Cache reads (Anthropic `cache_read_input_tokens`, OpenAI cached input); default: the input price. */
  cacheRead?: number;
  /** Cache writes (Anthropic `cache_creation_input_tokens`); default: the input price. */
  cacheWrite?: number;
}

export type PriceTable = Readonly<Record<string, ModelPrice>>;

/** The shipped prices (list prices of the providers, USD per million tokens; override with MODEL_PRICES). */
export const DEFAULT_MODEL_PRICES: PriceTable = {
  // The built-in offline model costs nothing.
  builtin: { input: 0, output: 0 },
  'claude-opus-4': { input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 },
  'claude-opus-4-1': { input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 },
  'claude-sonnet-4': { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  'claude-sonnet-4-5': { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  'claude-3-7-sonnet': { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  'claude-3-5-sonnet': { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  'claude-haiku-4-5': { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 },
  'claude-3-5-haiku': { input: 0.8, output: 4, cacheRead: 0.08, cacheWrite: 1 },
  'gpt-4o': { input: 2.5, output: 10, cacheRead: 1.25 },
  'gpt-4o-mini': { input: 0.15, output: 0.6, cacheRead: 0.075 },
  'gpt-4.1': { input: 2, output: 8, cacheRead: 0.5 },
  'gpt-4.1-mini': { input: 0.4, output: 1.6, cacheRead: 0.1 },
  'gpt-4.1-nano': { input: 0.1, output: 0.4, cacheRead: 0.025 },
  o3: { input: 2, output: 8, cacheRead: 0.5 },
  'o4-mini': { input: 1.1, output: 4.4, cacheRead: 0.275 },
};

/** Token counts of one model call. */
export interface CallTokens {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
}

/**
 * @param table the prices.
 * @param model the model's name as the provider was asked.
 * @returns its price, or undefined when the table does not know it.
 */
export function priceOf(table: PriceTable, model: string): ModelPrice | undefined {
  if (Object.hasOwn(table, model)) return table[model];
  let best: string | undefined;
  for (const key of Object.keys(table))
    if (model.startsWith(`${key}-`) && (best === undefined || key.length > best.length)) best = key;
  return best === undefined ? undefined : table[best];
}

/**
 * @param table the prices.
 * @param model the model.
 * @param tokens the call's counts.
 * @returns its cost in USD (rounded to a millionth of a cent), or null for a model the table does not know.
 */
export function costOf(table: PriceTable, model: string, tokens: CallTokens): number | null {
  const p = priceOf(table, model);
  if (!p) return null;
  const usd =
    (tokens.inputTokens * p.input +
      tokens.outputTokens * p.output +
      (tokens.cacheReadTokens ?? 0) * (p.cacheRead ?? p.input) +
      (tokens.cacheWriteTokens ?? 0) * (p.cacheWrite ?? p.input)) /
    1_000_000;
  return Math.round(usd * 1e8) / 1e8;
}

/**
 * Parses MODEL_PRICES: a JSON object `{"<model>": {"input": n, "output": n, "cacheRead"?: n, "cacheWrite"?: n}}`
 * (USD per million tokens), merged over the defaults.
 * @param raw the variable's value.
 * @returns the table, or an error message.
 */
export function parseModelPrices(raw: string | undefined): { table: PriceTable } | { error: string } {
  if (raw === undefined) return { table: DEFAULT_MODEL_PRICES };
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return { error: 'must be a JSON object of model → {input, output, cacheRead?, cacheWrite?}' };
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    return { error: 'must be a JSON object of model → {input, output, cacheRead?, cacheWrite?}' };
  const table: Record<string, ModelPrice> = { ...DEFAULT_MODEL_PRICES };
  const ok = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;
  for (const [model, price] of Object.entries(parsed as Record<string, unknown>)) {
    const p = price as Record<string, unknown> | null;
    if (
      !p ||
      typeof p !== 'object' ||
      !ok(p.input) ||
      !ok(p.output) ||
      (p.cacheRead !== undefined && !ok(p.cacheRead)) ||
      (p.cacheWrite !== undefined && !ok(p.cacheWrite)) ||
      Object.keys(p).some((k) => !['input', 'output', 'cacheRead', 'cacheWrite'].includes(k))
    )
      return {
        error: `${JSON.stringify(model)}: needs input and output (USD per million tokens, ≥ 0), optionally cacheRead and cacheWrite`,
      };
    table[model] = {
      input: p.input,
      output: p.output,
      ...(p.cacheRead !== undefined ? { cacheRead: p.cacheRead as number } : {}),
      ...(p.cacheWrite !== undefined ? { cacheWrite: p.cacheWrite as number } : {}),
    };
  }
  return { table };
}
