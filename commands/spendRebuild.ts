/**
 * Rebuilds an organization's daily spend rollups from its cost ledger (`admin spend rebuild`, docs/spend.md).
 *
 * A ledger entry and its rollup's `$inc` are two writes (commands/spend.ts recordModelCall): a process that dies
 * between them leaves the entry (the ledger is the record) and a rollup short by that call, and the retried call finds
 * its entry written and raises nothing, so nothing is ever counted twice, but the usage report and the budgets can
 * miss the call. The ledger being exact, each day's rollup is recomputed from its entries (read by the ledger's
 * `organizationId, createdAt` index, one day at a time) with the same sums the writes use (`rollupIncrements`), and
 * replaces the stored one. Only closed days: today's rollup is still being raised by running calls, and a rebuild
 * racing them could lose one; it is rebuilt from the next day on.
 */
import mongoose from 'mongoose';
import { ValidationError } from '../lib/errors';
import { LedgerEntry, SpendRollup, type SpendRollupDoc } from '../models';
import { rollupIncrements } from './spend';
import { dayOf } from './spendTotals';

const DAY_MS = 86_400_000;
/** Longest range of one rebuild (the usage report's). */
const MAX_DAYS = 366;

/** A day's totals, before and after, as the report shows them. */
interface DayTotals {
  calls: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
}

/** What the rebuild found for one day. */
export interface RebuiltDay {
  day: string;
  entries: number;
  /** The stored rollup's totals (null: none was stored). */
  before: DayTotals | null;
  after: DayTotals;
  /** Whether the stored rollup differed from the ledger's sums (and, unless a dry run, was replaced). */
  changed: boolean;
}

/**
 * Turns dotted `$inc` fields into the document they raise from nothing.
 * @param flat e.g. `{"agents.agt_1.calls": 2}`.
 * @returns e.g. `{agents: {agt_1: {calls: 2}}}`.
 */
function nested(flat: Record<string, number>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(flat)) {
    const parts = key.split('.');
    let at = out;
    for (const p of parts.slice(0, -1)) at = (at[p] ??= {}) as Record<string, unknown>;
    at[parts.at(-1)!] = value;
  }
  return out;
}

/** A rollup with nothing counted (the fields models/SpendRollup.ts defaults). */
const EMPTY = {
  calls: 0,
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  costUsd: 0,
  unpricedCalls: 0,
  agents: {},
  models: {},
  missions: {},
};

const totalsOf = (r: Partial<SpendRollupDoc> | Record<string, unknown>): DayTotals => {
  const n = (v: unknown): number => (typeof v === 'number' ? v : 0);
  return { calls: n(r.calls), inputTokens: n(r.inputTokens), outputTokens: n(r.outputTokens), costUsd: n(r.costUsd) };
};

/** Costs are sums of floats: equal to the rollup's rounding (commands/usage.ts rounds to 1e-8). */
const sameNumbers = (a: unknown, b: unknown): boolean => {
  if (typeof a === 'number' && typeof b === 'number') return Math.abs(a - b) < 1e-8;
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    return [...keys].every((k) =>
      sameNumbers((a as Record<string, unknown>)[k] ?? 0, (b as Record<string, unknown>)[k] ?? 0)
    );
  }
  return a === b;
};

/**
 * @param range first and last day asked for.
 * @param now the current time.
 * @returns why the range cannot be rebuilt, or null: days `YYYY-MM-DD`, in order, at most a year, all before today.
 */
export function rebuildRangeProblem(range: { from: string; to: string }, now: Date): string | null {
  const re = /^\d{4}-\d{2}-\d{2}$/;
  const start = Date.parse(`${range.from}T00:00:00.000Z`);
  const end = Date.parse(`${range.to}T00:00:00.000Z`);
  if (!re.test(range.from) || !re.test(range.to) || Number.isNaN(start) || Number.isNaN(end))
    return '--from and --to must be days (YYYY-MM-DD)';
  if (start > end) return '--from must not be after --to';
  if ((end - start) / DAY_MS + 1 > MAX_DAYS) return `The range may span at most ${MAX_DAYS} days`;
  const today = dayOf(now);
  if (range.to >= today) return `--to must be before today (${today}): today's rollup is still being written`;
  return null;
}

/**
 * Recomputes the rollups of an organization's closed days from its ledger, and replaces the ones that differ.
 * @param organizationId the organization.
 * @param range first and last day, `YYYY-MM-DD` (UTC), both before today.
 * @param options `dryRun`: report only; `now`: the current time (tests).
 * @returns each day of the range that has entries or a stored rollup.
 */
export async function rebuildSpendRollups(
  organizationId: string,
  range: { from: string; to: string },
  options: { dryRun?: boolean; now?: Date } = {}
): Promise<{ organizationId: string; dryRun: boolean; days: RebuiltDay[] }> {
  const problem = rebuildRangeProblem(range, options.now ?? new Date());
  if (problem) throw new ValidationError(problem);
  const start = Date.parse(`${range.from}T00:00:00.000Z`);
  const end = Date.parse(`${range.to}T00:00:00.000Z`);

  const days: RebuiltDay[] = [];
  for (let t = start; t <= end; t += DAY_MS) {
    const day = dayOf(new Date(t));
    const sums: Record<string, number> = {};
    let entries = 0;
    const cursor = LedgerEntry.find({
      organizationId,
      createdAt: mongoose.trusted({ $gte: new Date(t), $lt: new Date(t + DAY_MS) }),
    })
      .select({
        agentId: 1,
        model: 1,
        missionId: 1,
        inputTokens: 1,
        outputTokens: 1,
        cacheReadTokens: 1,
        cacheWriteTokens: 1,
        costUsd: 1,
      })
      .lean()
      .cursor();
    for await (const e of cursor) {
      entries++;
      const inc = rollupIncrements(
        { agentId: e.agentId, model: e.model, missionId: e.missionId ?? null },
        {
          inputTokens: e.inputTokens ?? 0,
          outputTokens: e.outputTokens ?? 0,
          cacheReadTokens: e.cacheReadTokens ?? undefined,
          cacheWriteTokens: e.cacheWriteTokens ?? undefined,
        },
        e.costUsd ?? null
      );
      for (const [k, v] of Object.entries(inc)) sums[k] = (sums[k] ?? 0) + v;
    }
    const _id = `${organizationId}:${day}`;
    const stored = await SpendRollup.findById(_id).lean<SpendRollupDoc>();
    if (entries === 0 && !stored) continue;
    const rebuilt = { ...EMPTY, organizationId, day, ...nested(sums) };
    const { _id: _ignored, ...storedFields } = stored ?? { _id };
    const changed = !stored || !sameNumbers({ ...EMPTY, ...storedFields }, rebuilt);
    if (changed && !options.dryRun)
      await SpendRollup.collection.replaceOne({ _id: _id as never }, rebuilt, { upsert: true });
    days.push({ day, entries, before: stored ? totalsOf(stored) : null, after: totalsOf(rebuilt), changed });
  }
  return { organizationId, dryRun: options.dryRun === true, days };
}
