/**
 * The rate limiter's cost (issue: "at most one database round trip per request"): the real `countRequest` against
 * the bench's database, N requests of one identity with 1 and with 50 in flight, counting the upserts it issued.
 * With one request at a time every request is one upsert; with many in flight a process's concurrent requests
 * share an upsert (commands/rateLimits.ts), so the figure falls below 1.
 */
import { performance } from 'node:perf_hooks';
import { countRequest, limiterStats } from '../../commands/rateLimits';

export interface LimiterRun {
  concurrency: number;
  requests: number;
  upserts: number;
  /** Milliseconds per counted request, in completion order. */
  latencies: number[];
}

const REQUESTS = 500;
export const LIMITER_CONCURRENCY = [1, 50] as const;

/**
 * @returns one run per concurrency.
 */
export async function limiterPhase(): Promise<LimiterRun[]> {
  const runs: LimiterRun[] = [];
  for (const concurrency of LIMITER_CONCURRENCY) {
    const identity = `bench:limiter-${concurrency}-${Date.now()}`;
    const before = { ...limiterStats };
    const latencies: number[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next++ < REQUESTS) {
          const started = performance.now();
          await countRequest(identity, 60);
          latencies.push(performance.now() - started);
        }
      })
    );
    runs.push({
      concurrency,
      requests: limiterStats.requests - before.requests,
      upserts: limiterStats.upserts - before.upserts,
      latencies,
    });
  }
  return runs;
}
