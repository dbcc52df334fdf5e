/**
 * Spend (docs/spend.md): the cost ledger and the budgets' view of it.
 *
 * Every model call of an execution appends one ledger entry (`<executionId>:<turn>`, a duplicate key when a retried
 * attempt writes it again) and, when the entry is new, raises the organization's rollup of the day (models/SpendRollup.ts)
 * by the same counts: two writes per model call, no read. The usage report and the budgets read the rollups, never the
 * entries.
 *
 * What budgets see of it (the cached budgets and month of rollups, the checks) is commands/spendTotals.ts, re-exported
 * here; a new entry also records the 80 % `budget.threshold` event of each budget it took past that share.
 */
import mongoose from 'mongoose';
import type { Config } from '../lib/config';
import { updateOneDirect } from '../lib/driverOps';
import { isDuplicateKey } from '../lib/mongo';
import { costOf, type CallTokens } from '../lib/prices';
import { budgetThresholds, spendTokens, spendUsd } from '../lib/metrics';
import { Budget, LedgerEntry, SpendRollup, type ExecutionDoc } from '../models';
import { recordEvent, type EventDeps } from './serviceEvents';
import { addLocally, budgetStates, dayOf, modelKey, periodKey, THRESHOLD, type Spent } from './spendTotals';

export {
  budgetReached,
  budgetStates,
  BUDGETS_CACHE,
  dayOf,
  forgetSpend,
  modelOfKey,
  refuseWhenSpent,
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
  | 'chatId'
  | 'jobId'
  | 'provider'
  | 'model'
> & { missionId?: string | null };

// ---------------------------------------------------------------------------------------------------------------
// The ledger.

/** A ledger entry's counts under one prefix of the rollup (the totals, an agent, a model, a mission). */
function increments(prefix: string, tokens: CallTokens, costUsd: number | null): Record<string, number> {
  return {
    [`${prefix}calls`]: 1,
    [`${prefix}inputTokens`]: tokens.inputTokens,
    [`${prefix}outputTokens`]: tokens.outputTokens,
    [`${prefix}cacheReadTokens`]: tokens.cacheReadTokens ?? 0,
    [`${prefix}cacheWriteTokens`]: tokens.cacheWriteTokens ?? 0,
    [`${prefix}costUsd`]: costUsd ?? 0,
  };
}

/**
 * What one ledger entry adds to its day's rollup (models/SpendRollup.ts), as dotted `$inc` fields: the totals, its
 * agent's, its model's and its mission's counts, and an unpriced call. The one definition of the rollup's sums: the
 * ledger's writes and the rebuild from the ledger (commands/spendRebuild.ts) both use it.
 * @param entry the entry's agent, model and mission.
 * @param tokens its counts.
 * @param costUsd its cost (null: the model has no price).
 * @returns the increments.
 */
export function rollupIncrements(
  entry: { agentId: string; model: string; missionId?: string | null },
  tokens: CallTokens,
  costUsd: number | null
): Record<string, number> {
  return {
    ...increments('', tokens, costUsd),
    ...increments(`agents.${entry.agentId}.`, tokens, costUsd),
    ...increments(`models.${modelKey(entry.model)}.`, tokens, costUsd),
    ...(entry.missionId ? increments(`missions.${entry.missionId}.`, tokens, costUsd) : {}),
    ...(costUsd === null ? { unpricedCalls: 1 } : {}),
  };
}

/**
 * Appends the ledger entry of one model call and raises the day's rollup (once: a repeated entry is a duplicate key
 * and raises nothing), then records the 80 % `budget.threshold` event of each budget this call took past it.
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
  const day = dayOf(now);
  const costUsd = costOf(deps.config.modelPrices, exec.model, tokens);
  try {
    await LedgerEntry.collection.insertOne({
      _id: `${exec._id}:${turn}` as never,
      organizationId: exec.organizationId,
      agentId: exec.agentId,
      executionId: exec._id,
      rootExecutionId: exec.rootExecutionId ?? exec._id,
      // The delegating execution of a sub-agent only (a job's iterations also name the one before as parent).
      parentExecutionId: exec.source === 'subagent' ? (exec.parentExecutionId ?? null) : null,
      turn,
      chatId: exec.chatId ?? null,
      jobId: exec.jobId ?? null,
      missionId: exec.missionId ?? null,
      provider: exec.provider,
      model: exec.model,
      inputTokens: tokens.inputTokens,
      outputTokens: tokens.outputTokens,
      cacheReadTokens: tokens.cacheReadTokens ?? null,
      cacheWriteTokens: tokens.cacheWriteTokens ?? null,
      costUsd,
      day,
      createdAt: now,
    });
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    return { created: false, costUsd };
  }
  const inc = rollupIncrements(exec, tokens, costUsd);
  await updateOneDirect(
    SpendRollup,
    { _id: `${exec.organizationId}:${day}` },
    { $inc: inc, $setOnInsert: { organizationId: exec.organizationId, day } },
    { upsert: true }
  );
  addLocally(exec.organizationId, day, inc);
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
