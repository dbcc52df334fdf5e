/**
 * The spend of one reply (docs/spend.md): before each model call, whether a budget covering the execution or its own
 * per-run cap is spent (then the run stops with `budget_reached`); after each, its ledger entry (commands/spend.ts).
 * Checks read the process's cached budgets and totals: no round trip on the hot path.
 */
import { ApplicationFailure } from '@temporalio/common';
import { budgetReached, recordModelCall, type Spent } from '../commands/spend';
import type { EventDeps } from '../commands/serviceEvents';
import type { Config } from '../lib/config';
import type { Logger } from '../lib/logger';
import { budgetRefusals } from '../lib/metrics';
import { costOf } from '../lib/prices';
import type { ExecutionDoc } from '../models';
import { FAILURES } from '../workflows/failures';
import { totalUsage } from './executionUsage';

/**
 * @param deps prices, BUDGET_CACHE_MS and the event dispatcher.
 * @param exec the execution (as claimed: its earlier attempts' saved usage counts toward its run).
 * @param log where a stop is reported.
 * @returns `check` (before a model call) and `record` (after one).
 */
export function replySpend(deps: EventDeps & { config: Readonly<Config> }, exec: ExecutionDoc, log: Logger) {
  const earlier = totalUsage((exec.usageByAttempt ?? {}) as Record<string, { inputTokens?: number }>);
  const price = (inputTokens: number, outputTokens: number): number =>
    costOf(deps.config.modelPrices, exec.model, { inputTokens, outputTokens }) ?? 0;
  // The run's spend so far: what earlier attempts saved, then each model call of this one.
  const run: Spent = {
    tokens: earlier.inputTokens + earlier.outputTokens,
    usd: price(earlier.inputTokens, earlier.outputTokens),
  };
  const cap = exec.runCap as { maxTokens?: number | null; maxCostUsd?: number | null } | undefined | null;
  return {
    /** @throws the `budget_reached` failure when a budget covering the run, or its own cap, is spent. */
    async check(): Promise<void> {
      const capped =
        (cap?.maxTokens != null && run.tokens >= cap.maxTokens) ||
        (cap?.maxCostUsd != null && run.usd >= cap.maxCostUsd);
      const reached =
        capped ||
        (await budgetReached(deps.config, {
          organizationId: exec.organizationId,
          agentId: exec.agentId,
          missionId: exec.missionId,
          run,
        }));
      if (!reached) return;
      budgetRefusals.inc({ at: 'model_call' });
      log.info({ executionId: exec._id, run, capped }, 'budget reached: the run stops before its next model call');
      throw ApplicationFailure.create({
        type: FAILURES.budgetReached.code,
        message: FAILURES.budgetReached.message,
        nonRetryable: true,
      });
    },
    /**
     * Records a finished model call: its ledger entry, keyed by its number in the execution (the same in every
     * attempt: a retry after a crash on either side of the write records it once).
     * @param turn the call's number.
     * @param tokens its counts (activities/executionUsage.ts `call`).
     */
    async record(turn: number, tokens: { inputTokens: number; outputTokens: number }): Promise<void> {
      run.tokens += tokens.inputTokens + tokens.outputTokens;
      run.usd += price(tokens.inputTokens, tokens.outputTokens);
      await recordModelCall(deps, exec, turn, tokens, run);
    },
  };
}
