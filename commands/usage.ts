/**
 * Usage of an organization per period (daily, weekly from Monday, monthly) and per agent, computed from the
 * executions' recorded token usage. Aggregated in the process over a bounded date range (at most 366 days), which
 * needs nothing beyond what both MongoDB and FerretDB support.
 */
import mongoose from 'mongoose';
import { NotFoundError, ValidationError } from '../lib/errors';
import { foldSpend } from './spendFold';
import { Execution, LedgerEntry, SpendRollup, type LedgerEntryDoc, type SpendRollupDoc } from '../models';
import { modelOfKey } from './spend';
import { withChildUsage } from './subAgents';
import type { AuthContext } from './tokens';

export type UsagePeriod = 'daily' | 'weekly' | 'monthly';
const DAY = 86_400_000;
export const MAX_USAGE_DAYS = 366;

interface Counter {
  executions: number;
  completed: number;
  failed: number;
  cancelled: number;
  input_tokens: number;
  output_tokens: number;
  /** From the cost ledger's daily rollups (docs/spend.md): model calls and their cost. */
  calls: number;
  cost_usd: number;
}

const zero = (): Counter => ({
  executions: 0,
  completed: 0,
  failed: 0,
  cancelled: 0,
  input_tokens: 0,
  output_tokens: 0,
  calls: 0,
  cost_usd: 0,
});

/** A model's spend from the ledger's rollups. */
interface ModelCounter {
  model: string;
  calls: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
}

type RollupCounts = { calls?: number; inputTokens?: number; outputTokens?: number; costUsd?: number };

const addModel = (m: Map<string, ModelCounter>, model: string, c: RollupCounts): void => {
  const t = m.get(model) ?? { model, calls: 0, input_tokens: 0, output_tokens: 0, cost_usd: 0 };
  t.calls += c.calls ?? 0;
  t.input_tokens += c.inputTokens ?? 0;
  t.output_tokens += c.outputTokens ?? 0;
  t.cost_usd += c.costUsd ?? 0;
  m.set(model, t);
};
const addCost = (c: Counter, r: RollupCounts | undefined): void => {
  c.calls += r?.calls ?? 0;
  c.cost_usd += r?.costUsd ?? 0;
};
const rounded = <T extends { cost_usd: number }>(c: T): T => ({ ...c, cost_usd: Math.round(c.cost_usd * 1e8) / 1e8 });

function bucketStart(d: Date, period: UsagePeriod): string {
  const day = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));
  if (period === 'monthly') day.setUTCDate(1);
  if (period === 'weekly') day.setUTCDate(day.getUTCDate() - ((day.getUTCDay() + 6) % 7));
  return day.toISOString().slice(0, 10);
}

function add(c: Counter, status: string, input: number, output: number): void {
  c.executions += 1;
  if (status === 'completed' || status === 'failed' || status === 'cancelled') c[status] += 1;
  c.input_tokens += input;
  c.output_tokens += output;
}

/**
 * @param auth the caller (its organization only).
 * @param query period and inclusive UTC dates `YYYY-MM-DD` (default: the last 30 days).
 * @returns totals, per-period buckets (every bucket of the range, zeros included) and per-agent totals.
 */
export async function organizationUsage(
  auth: AuthContext,
  query: { period: UsagePeriod; start?: string; end?: string }
): Promise<Record<string, unknown>> {
  const end = query.end ? new Date(`${query.end}T00:00:00.000Z`) : new Date(Date.now() - (Date.now() % DAY));
  const start = query.start ? new Date(`${query.start}T00:00:00.000Z`) : new Date(end.getTime() - 29 * DAY);
  if (Number.isNaN(start.getTime()) || Number.isNaN(end.getTime()))
    throw new ValidationError('start and end must be dates (YYYY-MM-DD)');
  if (start > end) throw new ValidationError('start must not be after end');
  if ((end.getTime() - start.getTime()) / DAY + 1 > MAX_USAGE_DAYS)
    throw new ValidationError(`The range may span at most ${MAX_USAGE_DAYS} days`);

  const buckets = new Map<
    string,
    { total: Counter; agents: Map<string, Counter>; models: Map<string, ModelCounter> }
  >();
  for (let t = start.getTime(); t <= end.getTime(); t += DAY) {
    const key = bucketStart(new Date(t), query.period);
    if (!buckets.has(key)) buckets.set(key, { total: zero(), agents: new Map(), models: new Map() });
  }
  const totals = zero();
  const perAgent = new Map<string, Counter>();
  const cursor = Execution.find({
    organizationId: auth.organizationId,
    createdAt: mongoose.trusted({ $gte: start, $lt: new Date(end.getTime() + DAY) }),
  })
    .select({ agentId: 1, status: 1, usage: 1, childUsage: 1, createdAt: 1 })
    .lean()
    .cursor();
  for await (const e of cursor) {
    // An execution's usage includes its sub-agents' (commands/subAgents.ts), which count as their own agents'.
    const children = withChildUsage({ inputTokens: 0, outputTokens: 0 }, e.childUsage);
    const input = (e.usage?.inputTokens ?? 0) - children.inputTokens;
    const output = (e.usage?.outputTokens ?? 0) - children.outputTokens;
    const bucket = buckets.get(bucketStart(e.createdAt as Date, query.period));
    if (!bucket) continue;
    add(bucket.total, e.status, input, output);
    const a = bucket.agents.get(e.agentId) ?? zero();
    add(a, e.status, input, output);
    bucket.agents.set(e.agentId, a);
    add(totals, e.status, input, output);
    const pa = perAgent.get(e.agentId) ?? zero();
    add(pa, e.status, input, output);
    perAgent.set(e.agentId, pa);
  }
  // Calls and cost from the ledger's daily rollups: at most one document per day of the range, whatever the calls,
  // once the organization's entries not folded yet are (commands/spendFold.ts).
  await foldSpend({ organizationId: auth.organizationId });
  const perModel = new Map<string, ModelCounter>();
  const rollups = await SpendRollup.find({
    organizationId: auth.organizationId,
    day: mongoose.trusted({ $gte: start.toISOString().slice(0, 10), $lte: end.toISOString().slice(0, 10) }),
  })
    .limit(MAX_USAGE_DAYS)
    .lean<SpendRollupDoc[]>();
  for (const r of rollups) {
    const bucket = buckets.get(bucketStart(new Date(`${r.day}T00:00:00.000Z`), query.period));
    if (!bucket) continue;
    addCost(bucket.total, r);
    addCost(totals, r);
    for (const [agentId, c] of Object.entries((r.agents ?? {}) as Record<string, RollupCounts>)) {
      const a = bucket.agents.get(agentId) ?? zero();
      addCost(a, c);
      bucket.agents.set(agentId, a);
      const pa = perAgent.get(agentId) ?? zero();
      addCost(pa, c);
      perAgent.set(agentId, pa);
    }
    for (const [key, c] of Object.entries((r.models ?? {}) as Record<string, RollupCounts>)) {
      addModel(bucket.models, modelOfKey(key), c);
      addModel(perModel, modelOfKey(key), c);
    }
  }
  return {
    organizationId: auth.organizationId,
    period: query.period,
    start: start.toISOString().slice(0, 10),
    end: end.toISOString().slice(0, 10),
    totals: rounded(totals),
    periods: [...buckets.entries()].map(([key, b]) => ({
      start: key,
      ...rounded(b.total),
      agents: [...b.agents.entries()].map(([agentId, c]) => ({ agentId, ...rounded(c) })),
      models: [...b.models.values()].map(rounded),
    })),
    agents: [...perAgent.entries()].map(([agentId, c]) => ({ agentId, ...rounded(c) })),
    models: [...perModel.values()].map(rounded),
  };
}

/** Ledger entries one execution tree may have read at once. */
const MAX_TREE_ENTRIES = 10_000;

/** Totals of ledger entries. */
export interface LedgerTotal {
  calls: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  unpriced_calls: number;
}

const sumOf = (entries: LedgerEntryDoc[]): LedgerTotal => {
  const t: LedgerTotal = { calls: 0, input_tokens: 0, output_tokens: 0, cost_usd: 0, unpriced_calls: 0 };
  for (const e of entries) {
    t.calls += 1;
    t.input_tokens += e.inputTokens;
    t.output_tokens += e.outputTokens;
    if (e.costUsd === null || e.costUsd === undefined) t.unpriced_calls += 1;
    else t.cost_usd += e.costUsd;
  }
  t.cost_usd = Math.round(t.cost_usd * 1e8) / 1e8;
  return t;
};

/**
 * The ledger of one execution (docs/spend.md): its own model calls, and its total with its sub-agents' (each entry
 * counted once: a sub-agent's calls are its own entries, found through the tree by `parentExecutionId`).
 * @param auth the caller (its organization only).
 * @param executionId the execution.
 * @returns its entries and totals.
 */
export async function executionLedger(
  auth: AuthContext,
  executionId: string
): Promise<{ execution: { _id: string }; entries: LedgerEntryDoc[]; own: LedgerTotal; total: LedgerTotal }> {
  const exec = await Execution.findOne({ _id: executionId, organizationId: auth.organizationId })
    .select({ rootExecutionId: 1 })
    .lean();
  if (!exec) throw new NotFoundError('Execution not found');
  const tree = await LedgerEntry.find({ rootExecutionId: exec.rootExecutionId ?? exec._id })
    .limit(MAX_TREE_ENTRIES)
    .lean<LedgerEntryDoc[]>();
  // The executions under this one: those whose parent is in the set, found level by level.
  const within = new Set([exec._id]);
  for (let grew = true; grew;) {
    grew = false;
    for (const e of tree)
      if (!within.has(e.executionId) && e.parentExecutionId && within.has(e.parentExecutionId)) {
        within.add(e.executionId);
        grew = true;
      }
  }
  const own = tree.filter((e) => e.executionId === exec._id).sort((a, b) => a.turn - b.turn);
  return {
    execution: exec,
    entries: own,
    own: sumOf(own),
    total: sumOf(tree.filter((e) => within.has(e.executionId))),
  };
}
