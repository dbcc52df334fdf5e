/** The public shapes of budgets and ledger entries (current surface, docs/spend.md). */
import type { BudgetDoc, LedgerEntryDoc } from '../models';
import { iso } from './time';

/**
 * @param b a budget.
 * @param spent what it counts now, in its unit (undefined: period run, counted per execution).
 * @returns its public shape.
 */
export function presentBudget(b: BudgetDoc, spent: number | undefined): Record<string, unknown> {
  const share = spent === undefined ? null : spent / b.limit;
  return {
    id: b._id,
    name: b.name ?? '',
    scope: b.scope,
    target_id: b.targetId ?? null,
    period: b.period,
    unit: b.unit,
    limit: b.limit,
    spent: spent === undefined ? null : b.unit === 'usd' ? Math.round(spent * 1e6) / 1e6 : spent,
    percent: share === null ? null : Math.floor(share * 100),
    reached: share !== null && share >= 1,
    created_at: iso(b.createdAt),
    updated_at: iso(b.updatedAt),
  };
}

/**
 * @param e a ledger entry.
 * @returns its public shape.
 */
export function presentLedgerEntry(e: LedgerEntryDoc): Record<string, unknown> {
  return {
    id: e._id,
    execution_id: e.executionId,
    parent_execution_id: e.parentExecutionId ?? null,
    agent_id: e.agentId,
    turn: e.turn,
    job_id: e.jobId ?? null,
    mission_id: e.missionId ?? null,
    provider: e.provider,
    model: e.model,
    input_tokens: e.inputTokens,
    output_tokens: e.outputTokens,
    cache_read_tokens: e.cacheReadTokens ?? null,
    cache_write_tokens: e.cacheWriteTokens ?? null,
    cost_usd: e.costUsd ?? null,
    created_at: iso(e.createdAt),
  };
}
