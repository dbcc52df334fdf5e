/** Small statistics helpers for the benchmark (milliseconds in, milliseconds out). */

/**
 * Nearest-rank percentile: the smallest sample with at least p % of the samples at or below it. With few samples
 * the high percentiles are the maximum (p99 of 40 samples is the largest one), which is what a reader expects.
 * @param samples values, in any order.
 * @param p percentile, 0 < p <= 100.
 * @returns the percentile, or NaN without samples.
 */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1];
}

/**
 * @param samples values.
 * @returns the largest value, or NaN without samples.
 */
export function max(samples: readonly number[]): number {
  return samples.length === 0 ? NaN : Math.max(...samples);
}

/**
 * @param ms a duration in milliseconds.
 * @returns it rounded for tables: one decimal below 10 ms, whole milliseconds above.
 */
export function fmtMs(ms: number): string {
  if (!Number.isFinite(ms)) return 'n/a';
  return ms < 10 ? `${ms.toFixed(1)} ms` : `${Math.round(ms)} ms`;
}

/**
 * @param kib a size in KiB (as /proc reports it).
 * @returns it in MiB for tables.
 */
export function fmtKib(kib: number | undefined): string {
  return kib === undefined ? 'n/a' : `${(kib / 1024).toFixed(0)} MiB`;
}
