/**
 * Spend (docs/spend.md): the cost ledger and the budgets' view of it.
 *
 * Every model call of an execution appends one ledger entry (`<executionId>:<turn>`, a duplicate key when a retried
 * attempt writes it again), marked `pending`: one write per model call, no read. The organization's rollup of the day
 * (models/SpendRollup.ts) is raised by the same counts off the execution's path, by a fold of the pending entries
 * (commands/spendFold.ts). The usage report and the budgets read the rollups, never the entries.
 *
 * What budgets see of it (the cached budgets and month of rollups, the checks) is commands/spendTotals.ts, re-exported
 * here; a new entry also records the 80 % `budget.threshold` event of each budget it took past that share.
 */
import mongoose from 'mongoose';
import type { Config } from '../lib/config';
import { isDuplicateKey } from '../lib/mongo';
import { costOf, type CallTokens } from '../lib/prices';
import { budgetThresholds, spendTokens, spendUsd } from '../lib/metrics';
import { Budget, LedgerEntry, type ExecutionDoc } from '../models';
import { recordEvent, type EventDeps } from './serviceEvents';
import { scheduleSpendFold } from './spendFold';
import { budgetStates, countOwnEntry, dayOf, periodKey, rollupIncrements, THRESHOLD, type Spent } from './spendTotals';

export {
  budgetReached,
  budgetStates,
  BUDGETS_CACHE,
  dayOf,
  forgetSpend,
  modelOfKey,
  refuseWhenSpent,
  rollupIncrements,
  type BudgetState,
  type Spent,
} from './spendTotals';

/** What an execution's model call is recorded with. */
export type LedgerExecution = Pick<
  ExecutionDoc,
  | '_id'
  | 'organizationId'
  | 'agentId'
  | 'rootExecutionId'
  | 'parentExecutionId'
  | 'source'
  | 'jobId'
  | 'provider'
  | 'model'
> & { missionId?: string | null };

// ---------------------------------------------------------------------------------------------------------------
// The ledger.

/**
 * The ledger entry of one model call, as written (models/LedgerEntry.ts): `pending` until a fold has counted it in
 * its day's rollup (commands/spendFold.ts).
 * @param exec the execution.
 * @param turn the call's number in the execution.
 * @param tokens its counts.
 * @param costUsd its cost (null: no price).
 * @param now when it was recorded.
 * @returns the document.
 */
export function ledgerEntryOf(
  exec: LedgerExecution,
  turn: number,
  tokens: CallTokens,
  costUsd: number | null,
  now: Date
): Record<string, unknown> {
  // Fields without a value are left out, not written as null (every reader, presenters/budget.ts among them, reads a
  // missing one as null): a FerretDB row stores each field's name twice, so a null costs about 40 bytes.
  const optional = {
    // The delegating execution of a sub-agent only (a job's iterations also name the one before as parent).
    parentExecutionId: exec.source === 'subagent' ? exec.parentExecutionId : null,
    jobId: exec.jobId,
    missionId: exec.missionId,
    cacheReadTokens: tokens.cacheReadTokens,
    cacheWriteTokens: tokens.cacheWriteTokens,
    costUsd,
  };
  return {
    _id: `${exec._id}:${turn}`,
    organizationId: exec.organizationId,
    agentId: exec.agentId,
    executionId: exec._id,
    rootExecutionId: exec.rootExecutionId ?? exec._id,
    turn,
    provider: exec.provider,
    model: exec.model,
    inputTokens: tokens.inputTokens,
    outputTokens: tokens.outputTokens,
    ...Object.fromEntries(Object.entries(optional).filter(([, v]) => v !== null && v !== undefined)),
    day: dayOf(now),
    createdAt: now,
    pending: true,
  };
}

/**
 * Appends the ledger entry of one model call (once: a repeated entry is a duplicate key), counts it at once in this
 * process's view of the rollups and asks for a fold (commands/spendFold.ts: the day's rollup is raised off the
 * execution's path), then records the 80 % `budget.threshold` event of each budget this call took past it.
 * @param deps prices, BUDGET_CACHE_MS and the event dispatcher.
 * @param exec the execution.
 * @param turn the call's number in the execution (the same in every attempt).
 * @param tokens the call's counts.
 * @param runSpent the run's spend including this call (period `run` budgets).
 * @returns whether this call wrote the entry, and its cost.
 */
export async function recordModelCall(
  deps: EventDeps & { config: Pick<Config, 'modelPrices' | 'budgetCacheMs'> },
  exec: LedgerExecution,
  turn: number,
  tokens: CallTokens,
  runSpent: Spent
): Promise<{ created: boolean; costUsd: number | null }> {
  const now = new Date();
  const costUsd = costOf(deps.config.modelPrices, exec.model, tokens);
  const entry = ledgerEntryOf(exec, turn, tokens, costUsd, now);
  try {
    await LedgerEntry.collection.insertOne(entry as never);
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    return { created: false, costUsd };
  }
  countOwnEntry(exec.organizationId, entry._id as string, dayOf(now), rollupIncrements(exec, tokens, costUsd));
  scheduleSpendFold();
  // By provider: metric labels carry no ids (per organization: the usage report).
  const provider = ['anthropic', 'openai', 'builtin'].includes(exec.provider) ? exec.provider : 'other';
  spendTokens.inc(
    { provider },
    tokens.inputTokens + tokens.outputTokens + (tokens.cacheReadTokens ?? 0) + (tokens.cacheWriteTokens ?? 0)
  );
  if (costUsd) spendUsd.inc({ provider }, costUsd);
  await thresholds(deps, exec, runSpent);
  return { created: true, costUsd };
}

/** Thresholds this process already saw recorded (`<budget>:<period>`), so a crossing is claimed once per process. */
const seenThresholds = new Set<string>();

/**
 * Records `budget.threshold` for each budget covering the execution whose spend is now at 80 % or more of its limit,
 * once per budget and period: a conditional write on the budget claims the period (every process agrees on one
 * winner), and the event's key names the budget and the period.
 */
async function thresholds(
  deps: EventDeps & { config: Pick<Config, 'budgetCacheMs'> },
  exec: LedgerExecution,
  run: Spent
): Promise<void> {
  const states = await budgetStates(deps.config, {
    organizationId: exec.organizationId,
    agentId: exec.agentId,
    missionId: exec.missionId,
    run,
  });
  for (const { budget, spent, share } of states) {
    if (share < THRESHOLD) continue;
    const period = periodKey(budget, exec._id);
    const seen = `${budget._id}:${period}`;
    if (seenThresholds.has(seen)) continue;
    if (seenThresholds.size > 100_000) seenThresholds.clear();
    seenThresholds.add(seen);
    const claimed = await Budget.updateOne(
      { _id: budget._id, thresholdPeriod: mongoose.trusted({ $ne: period }) },
      { $set: { thresholdPeriod: period } }
    );
    if (claimed.modifiedCount === 0 && budget.period !== 'run') continue;
    budgetThresholds.inc();
    await recordEvent(
      {
        type: 'budget.threshold',
        organizationId: exec.organizationId,
        data: {
          budgetId: budget._id,
          scope: budget.scope,
          targetId: budget.targetId ?? null,
          period: budget.period,
          periodKey: period,
          unit: budget.unit,
          limit: budget.limit,
          spent: budget.unit === 'usd' ? Math.round(spent.usd * 1e6) / 1e6 : spent.tokens,
          percent: Math.floor(share * 100),
          executionId: exec._id,
        },
        key: `budget-${budget._id}:threshold:${period}`,
      },
      deps
    );
  }
}
