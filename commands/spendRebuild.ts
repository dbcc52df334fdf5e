/**
 * Rebuilds an organization's daily spend rollups from its cost ledger (`admin spend rebuild`, docs/spend.md).
 *
 * Rollups are folded from the ledger's entries exactly once (commands/spendFold.ts), so a rollup differs from its
 * entries only where something outside the service changed either (a restore, a hand edit, rollups written before
 * the fold by a process that died between the entry and its rollup's `$inc`). The ledger being exact, the
 * organization's pending entries are folded first, then each day's rollup is recomputed from its entries (read by the
 * ledger's `organizationId, createdAt` index, one day at a time) with the same sums the fold uses (`sumsOf`), and
 * replaces the stored one (keeping its `lastFold`). Only closed days: today's rollup is still being raised by running calls, and a rebuild
 * racing them could lose one; it is rebuilt from the next day on.
 */
import mongoose from 'mongoose';
import { ValidationError } from '../lib/errors';
import { LedgerEntry, SpendRollup, type SpendRollupDoc } from '../models';
import { EMPTY_ROLLUP as EMPTY, foldSpend, nested, sumsOf } from './spendFold';
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
  // Entries not folded yet are counted first, so that no fold raises a rebuilt rollup by them again.
  await foldSpend({ organizationId });

  const days: RebuiltDay[] = [];
  for (let t = start; t <= end; t += DAY_MS) {
    const day = dayOf(new Date(t));
    let entries = 0;
    const sums: Record<string, number> = {};
    const cursor = LedgerEntry.find({
      organizationId,
      createdAt: mongoose.trusted({ $gte: new Date(t), $lt: new Date(t + DAY_MS) }),
    })
      .select({
        organizationId: 1,
        day: 1,
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
      for (const [k, v] of Object.entries(sumsOf([e as unknown as Parameters<typeof sumsOf>[0][number]])))
        sums[k] = (sums[k] ?? 0) + v;
    }
    const _id = `${organizationId}:${day}`;
    const stored = await SpendRollup.findById(_id).lean<SpendRollupDoc>();
    if (entries === 0 && !stored) continue;
    const rebuilt = { ...EMPTY, organizationId, day, ...nested(sums) };
    // The last fold's record stays: it is what the next fold's conditional write names.
    const { _id: _ignored, lastFold, ...storedFields } = stored ?? { _id };
    const changed = !stored || !sameNumbers({ ...EMPTY, ...storedFields }, rebuilt);
    if (changed && !options.dryRun)
      await SpendRollup.collection.replaceOne({ _id: _id as never }, lastFold ? { ...rebuilt, lastFold } : rebuilt, {
        upsert: true,
      });
    days.push({ day, entries, before: stored ? totalsOf(stored) : null, after: totalsOf(rebuilt), changed });
  }
  return { organizationId, dryRun: options.dryRun === true, days };
}
