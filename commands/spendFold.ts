/**
 * The fold of the cost ledger into the daily rollups (docs/spend.md), off the execution's path: a model call writes
 * its ledger entry marked `pending` (commands/spend.ts) and nothing else; a fold reads the pending entries and raises
 * each organization's rollup of the day by their sums, then removes their mark.
 *
 * Exactly once, whatever process dies when: the rollup's raise and the record of what it counted (`lastFold`: an id
 * and the entries' ids) are one write, conditional on the `lastFold` the fold read, so two folds never both raise a
 * rollup from the same state. A fold that dies after that write leaves its entries marked: the next fold finds them
 * in the rollup's `lastFold` and only removes their mark. A fold that dies before it leaves everything as it was.
 * An entry's mark is removed before any later fold replaces the `lastFold` that names it, so an entry is counted by
 * at most one `lastFold`; the next fold reads the rollup before the entries it counts.
 *
 * When it runs: FOLD_DELAY_MS after a process writes an entry (a process folds every organization's pending entries,
 * not only its own), every SWEEP_MS in each worker process (what a process that died left pending), and at once for
 * one organization before its rollups are read where they must be complete (the usage report, a budget change, the
 * rebuild). The process's own view of its spend (commands/spendTotals.ts) counts its entries from the write on.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from '../lib/logger';
import { isDuplicateKey } from '../lib/mongo';
import { LedgerEntry, SpendRollup } from '../models';
import { forgetOwnFolded, ownSeq, ownUnfolded, rollupIncrements } from './spendTotals';

/** How long after an entry is written a fold runs: folds gather the entries of that time in one write per rollup. */
export const FOLD_DELAY_MS = 500;
/** How often each worker process folds what others left pending. */
const SWEEP_MS = 30_000;
/** Entries read per scan. */
const BATCH = 200;
/** Conditional writes a fold tries on one rollup before it gives up (another fold keeps winning: it will count them). */
const MAX_TRIES = 10;

/** The fields a fold reads of an entry. */
const FIELDS = {
  organizationId: 1,
  agentId: 1,
  model: 1,
  missionId: 1,
  day: 1,
  inputTokens: 1,
  outputTokens: 1,
  cacheReadTokens: 1,
  cacheWriteTokens: 1,
  costUsd: 1,
} as const;

interface PendingEntry {
  _id: string;
  organizationId: string;
  agentId: string;
  model: string;
  missionId?: string | null;
  day: string;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens?: number | null;
  cacheWriteTokens?: number | null;
  costUsd?: number | null;
}

/** The record of a fold on its rollup. */
interface LastFold {
  id: string;
  entries: string[];
}

/** A rollup with nothing counted (the fields models/SpendRollup.ts defaults). */
export const EMPTY_ROLLUP = {
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

/**
 * Turns dotted `$inc` fields into the document they raise from nothing.
 * @param flat e.g. `{"agents.agt_1.calls": 2}`.
 * @returns e.g. `{agents: {agt_1: {calls: 2}}}`.
 */
export function nested(flat: Record<string, number>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(flat)) {
    const parts = key.split('.');
    let at = out;
    for (const p of parts.slice(0, -1)) at = (at[p] ??= {}) as Record<string, unknown>;
    at[parts.at(-1)!] = value;
  }
  return out;
}

/**
 * @param entries ledger entries.
 * @returns the sums they add to their rollup, as dotted `$inc` fields.
 */
export function sumsOf(entries: PendingEntry[]): Record<string, number> {
  const sums: Record<string, number> = {};
  for (const e of entries) {
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
  return sums;
}

const unmark = async (ids: string[]): Promise<void> => {
  if (ids.length > 0)
    await LedgerEntry.collection.updateMany(
      { _id: { $in: ids as never[] }, pending: true },
      { $unset: { pending: '' } }
    );
};

/**
 * Counts pending entries of one rollup in it, once.
 * @param rollupId `<organizationId>:<day>`.
 * @param organizationId its organization.
 * @param day its day.
 * @param candidates entries of that rollup the scan saw pending.
 * @returns how many entries this fold counted.
 */
async function foldRollup(
  rollupId: string,
  organizationId: string,
  day: string,
  candidates: string[]
): Promise<number> {
  for (let attempt = 0; attempt < MAX_TRIES; attempt++) {
    const rollup = await SpendRollup.collection.findOne({ _id: rollupId as never }, { projection: { lastFold: 1 } });
    const last = rollup?.lastFold as LastFold | undefined;
    const counted = new Set(last?.entries ?? []);
    // Read after the rollup: an entry still marked here is either in that `lastFold` or counted by no fold yet.
    const marked = (await LedgerEntry.collection
      .find({ pending: true, _id: { $in: [...new Set([...candidates, ...counted])] as never[] } })
      .project(FIELDS)
      .toArray()) as unknown as PendingEntry[];
    // A fold that died after its rollup write left these marked.
    await unmark(marked.filter((e) => counted.has(e._id)).map((e) => e._id));
    const fresh = marked.filter((e) => !counted.has(e._id) && e.organizationId === organizationId && e.day === day);
    if (fresh.length === 0) return 0;
    const fold: LastFold = { id: randomBytes(8).toString('hex'), entries: fresh.map((e) => e._id) };
    const sums = sumsOf(fresh);
    let won: boolean;
    if (!rollup) {
      try {
        await SpendRollup.collection.insertOne({
          _id: rollupId as never,
          ...EMPTY_ROLLUP,
          organizationId,
          day,
          ...nested(sums),
          lastFold: fold,
        });
        won = true;
      } catch (err) {
        if (!isDuplicateKey(err)) throw err;
        won = false; // another fold made it first: read it again
      }
    } else {
      const res = await SpendRollup.collection.updateOne(
        { _id: rollupId as never, 'lastFold.id': last?.id ?? null },
        { $inc: sums, $set: { lastFold: fold } }
      );
      won = res.modifiedCount === 1;
    }
    if (!won) continue;
    await unmark(fold.entries);
    return fresh.length;
  }
  throw new Error(`the fold of ${rollupId} lost ${MAX_TRIES} times in a row to other folds`);
}

/**
 * Folds the pending ledger entries (all, or one organization's) into their rollups.
 * @param options `organizationId`: only its entries (before its rollups are read).
 * @returns how many entries this fold counted.
 */
export async function foldSpend(options: { organizationId?: string } = {}): Promise<number> {
  let folded = 0;
  for (;;) {
    const seq = ownSeq();
    const scan = (await LedgerEntry.collection
      .find({ pending: true, ...(options.organizationId ? { organizationId: options.organizationId } : {}) })
      .project({ organizationId: 1, day: 1 })
      .limit(BATCH)
      .toArray()) as unknown as Array<Pick<PendingEntry, '_id' | 'organizationId' | 'day'>>;
    const rollups = new Map<string, { organizationId: string; day: string; ids: string[] }>();
    for (const e of scan) {
      const id = `${e.organizationId}:${e.day}`;
      const r = rollups.get(id) ?? { organizationId: e.organizationId, day: e.day, ids: [] };
      r.ids.push(e._id);
      rollups.set(id, r);
    }
    for (const [id, r] of rollups) folded += await foldRollup(id, r.organizationId, r.day, r.ids);
    if (scan.length < BATCH) {
      // Every own entry written before the scan was pending in it (and is counted now) or counted before.
      forgetOwnFolded(seq, options.organizationId);
      return folded;
    }
  }
}

let timer: NodeJS.Timeout | undefined;
let running: Promise<void> | undefined;
let log: Logger | undefined;
let failures = 0;

/** Runs a fold unless one is running; another follows while this process has entries not yet seen counted. */
async function foldNow(): Promise<void> {
  if (running) return running;
  running = (async () => {
    try {
      await foldSpend();
      failures = 0;
    } catch (err) {
      failures++;
      log?.warn({ err }, 'the spend fold failed; the entries stay pending and the next fold counts them');
    } finally {
      running = undefined;
    }
  })();
  await running;
  if (ownUnfolded() > 0) scheduleSpendFold();
}

/**
 * Asks for a fold FOLD_DELAY_MS from now (one for every entry written meanwhile; after failures, later: up to 30 s).
 */
export function scheduleSpendFold(): void {
  if (timer) return;
  const delay = Math.min(FOLD_DELAY_MS * 2 ** failures, SWEEP_MS);
  timer = setTimeout(() => {
    timer = undefined;
    void foldNow();
  }, delay);
  timer.unref();
}

/**
 * Starts the worker process's sweep: a fold every SWEEP_MS, for what processes that died left pending.
 * @param logger where a failed fold is told.
 * @returns stops it (and folds what this process still has pending, so a clean stop leaves nothing to the sweep).
 */
export function startSpendFold(logger: Logger): () => Promise<void> {
  log = logger;
  const sweep = setInterval(() => void foldNow(), SWEEP_MS);
  sweep.unref();
  return async () => {
    clearInterval(sweep);
    if (ownUnfolded() > 0) await foldNow();
  };
}
