/**
 * What the budgets see of spend (docs/spend.md), per process: an organization's budgets (a shared cache, cleared
 * everywhere on every change) and, for an organization that has budgets, its rollups of the current month, read again
 * after BUDGET_CACHE_MS and raised at once by every ledger entry this process writes (commands/spend.ts). The rollups
 * are folded from the entries off the execution's path (commands/spendFold.ts): the entries this process wrote and has
 * not yet seen folded are added to every fresh read, so its own spend never drops out. A check may therefore miss
 * what other processes spent in the last BUDGET_CACHE_MS plus the time until their fold (FOLD_DELAY_MS): a run
 * overshoots a cap by at most the model call under way when it was reached, plus that window's spend elsewhere.
 */
import mongoose from 'mongoose';
import type { Config } from '../lib/config';
import { BudgetExceededError } from '../lib/errors';
import { budgetRefusals } from '../lib/metrics';
import type { CallTokens } from '../lib/prices';
import { SharedCache } from '../lib/sharedCache';
import { Budget, SpendRollup, type BudgetDoc, type SpendRollupDoc } from '../models';

/** Share of a budget whose crossing records `budget.threshold`. */
export const THRESHOLD = 0.8;

/** A counter of spend: tokens (input + output + cache) and USD. */
export interface Spent {
  tokens: number;
  usd: number;
}

/** @returns the UTC day `YYYY-MM-DD` of a time. */
export const dayOf = (d: Date): string => d.toISOString().slice(0, 10);

/**
 * A map key for a model's name in a rollup (MongoDB field names may not hold `.` nor start with `$`).
 * @param model the model's name.
 * @returns the key.
 */
export const modelKey = (model: string): string =>
  model.replace(/%/g, '%25').replace(/\./g, '%2E').replace(/\$/g, '%24');
/** @returns the model's name of a rollup key. */
export const modelOfKey = (key: string): string => key.replace(/%2E/g, '.').replace(/%24/g, '$').replace(/%25/g, '%');

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
 * fold (commands/spendFold.ts), the process's own view (countOwnEntry) and the rebuild from the ledger
 * (commands/spendRebuild.ts) all use it.
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

// ---------------------------------------------------------------------------------------------------------------
// The organization's budgets and month of rollups, per process.

const BUDGETS = 'budgets';
const budgetCache = new SharedCache<{ budgets: BudgetDoc[] }>(BUDGETS);

/**
 * @param organizationId the organization.
 * @returns its budgets (from the process cache: cleared on every change, lib/sharedCache.ts).
 */
export async function budgetsOf(organizationId: string): Promise<BudgetDoc[]> {
  const found = await budgetCache.get(organizationId, async () => ({
    value: {
      budgets: await Budget.find({ organizationId }).sort({ createdAt: 1, _id: 1 }).limit(100).lean<BudgetDoc[]>(),
    },
    group: organizationId,
  }));
  return found!.budgets;
}

/** The name of the budgets' shared cache (commands/budgets.ts invalidates it). */
export const BUDGETS_CACHE = BUDGETS;

interface MonthTotals {
  month: string;
  readAt: number;
  days: Map<string, SpendRollupDoc>;
}
const monthTotals = new Map<string, MonthTotals>();
/** Organizations whose month is kept at most (the least recently read go first). */
const MAX_ORGANIZATIONS = 10_000;

/**
 * @param organizationId the organization.
 * @param maxAgeMs how old the kept copy may be (BUDGET_CACHE_MS; 0: read now).
 * @returns its rollups of the current UTC month.
 */
async function monthOf(organizationId: string, maxAgeMs: number): Promise<MonthTotals> {
  const now = new Date();
  const month = dayOf(now).slice(0, 7);
  const kept = monthTotals.get(organizationId);
  if (kept && kept.month === month && Date.now() - kept.readAt < maxAgeMs) return kept;
  const docs = await SpendRollup.find({
    organizationId,
    day: mongoose.trusted({ $gte: `${month}-01`, $lte: `${month}-31` }),
  })
    .limit(31)
    .lean<SpendRollupDoc[]>();
  const fresh: MonthTotals = { month, readAt: Date.now(), days: new Map(docs.map((d) => [d.day, d])) };
  monthTotals.delete(organizationId);
  if (monthTotals.size >= MAX_ORGANIZATIONS) monthTotals.delete(monthTotals.keys().next().value!);
  monthTotals.set(organizationId, fresh);
  // What this process wrote and no fold has counted yet (written during the read included).
  for (const own of ownPending.values())
    if (own.organizationId === organizationId) addLocally(organizationId, own.day, own.inc);
  return fresh;
}

type Counts = {
  inputTokens?: number;
  outputTokens?: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  costUsd?: number;
};

const spentOf = (c: Counts | undefined): Spent => ({
  tokens: (c?.inputTokens ?? 0) + (c?.outputTokens ?? 0) + (c?.cacheReadTokens ?? 0) + (c?.cacheWriteTokens ?? 0),
  usd: c?.costUsd ?? 0,
});

/** What a budget is measured against: the execution (or the one about to start). */
export interface BudgetSubject {
  organizationId: string;
  agentId: string;
  missionId?: string | null;
  /** The run's own spend so far (period `run`); 0 before it starts. */
  run?: Spent;
}

/**
 * @param budget a budget.
 * @param subject who spends.
 * @returns whether the budget covers it.
 */
export function applies(budget: BudgetDoc, subject: BudgetSubject): boolean {
  if (budget.scope === 'agent') return budget.targetId === subject.agentId;
  if (budget.scope === 'mission') return !!subject.missionId && budget.targetId === subject.missionId;
  return true;
}

/**
 * @param budget a budget.
 * @param month the organization's month of rollups.
 * @param subject who spends (its run's spend for period `run`).
 * @returns what the budget's scope spent in its current period.
 */
export function spentAgainst(budget: BudgetDoc, month: MonthTotals, subject: BudgetSubject): Spent {
  if (budget.period === 'run') return subject.run ?? { tokens: 0, usd: 0 };
  const today = dayOf(new Date());
  const total: Spent = { tokens: 0, usd: 0 };
  for (const [day, doc] of month.days) {
    if (budget.period === 'day' && day !== today) continue;
    const part =
      budget.scope === 'agent'
        ? (doc.agents as Record<string, Counts>)?.[budget.targetId!]
        : budget.scope === 'mission'
          ? (doc.missions as Record<string, Counts>)?.[budget.targetId!]
          : (doc as Counts);
    const s = spentOf(part);
    total.tokens += s.tokens;
    total.usd += s.usd;
  }
  return total;
}

/** @returns the share of its limit a budget's spend reached. */
export const shareOf = (budget: BudgetDoc, spent: Spent): number =>
  (budget.unit === 'usd' ? spent.usd : spent.tokens) / budget.limit;

/** @returns the period a budget's spend counts in now: the day, the month, or the run. */
export const periodKey = (budget: BudgetDoc, executionId?: string): string =>
  budget.period === 'day'
    ? dayOf(new Date())
    : budget.period === 'month'
      ? dayOf(new Date()).slice(0, 7)
      : `run:${executionId}`;

/** One budget's state for a subject. */
export interface BudgetState {
  budget: BudgetDoc;
  spent: Spent;
  share: number;
}

/**
 * @param config BUDGET_CACHE_MS.
 * @param subject who spends.
 * @param options `fresh`: read the rollups now (a budget change resumes paused work on a fresh total).
 * @returns the state of every budget that covers the subject (none: no read at all).
 */
export async function budgetStates(
  config: Pick<Config, 'budgetCacheMs'>,
  subject: BudgetSubject,
  options: { fresh?: boolean } = {}
): Promise<BudgetState[]> {
  const budgets = (await budgetsOf(subject.organizationId)).filter((b) => applies(b, subject));
  if (budgets.length === 0) return [];
  const month = budgets.some((b) => b.period !== 'run')
    ? await monthOf(subject.organizationId, options.fresh ? 0 : config.budgetCacheMs)
    : { month: '', readAt: 0, days: new Map() };
  return budgets.map((budget) => {
    const spent = spentAgainst(budget, month, subject);
    return { budget, spent, share: shareOf(budget, spent) };
  });
}

/**
 * @param config BUDGET_CACHE_MS.
 * @param subject who spends.
 * @returns the first budget the subject has spent (undefined: none).
 */
export async function budgetReached(
  config: Pick<Config, 'budgetCacheMs'>,
  subject: BudgetSubject,
  options: { fresh?: boolean } = {}
): Promise<BudgetState | undefined> {
  return (await budgetStates(config, subject, options)).find((s) => s.share >= 1);
}

/**
 * Refuses a new execution when a budget covering it is spent (from the process's cached budgets and totals: no
 * round trip while they are fresh).
 * @param config BUDGET_CACHE_MS.
 * @param organizationId the organization.
 * @param agentId the agent.
 * @throws BudgetExceededError (402 budget_exceeded).
 */
export async function refuseWhenSpent(
  config: Pick<Config, 'budgetCacheMs'>,
  organizationId: string,
  agentId: string
): Promise<void> {
  const reached = await budgetReached(config, { organizationId, agentId });
  if (!reached) return;
  budgetRefusals.inc({ at: 'admission' });
  throw new BudgetExceededError(spentMessage(reached.budget));
}

/** @returns the client's words for a spent budget. */
function spentMessage(b: BudgetDoc): string {
  const what = b.scope === 'organization' ? 'the organization' : `${b.scope} ${b.targetId}`;
  const per = b.period === 'day' ? 'today' : 'this month';
  return `The ${b.unit === 'usd' ? `USD ${b.limit}` : `${b.limit}-token`} budget of ${what} is spent for ${per} (budget ${b._id}); raise or remove it, or wait for the next period`;
}

// ---------------------------------------------------------------------------------------------------------------
// Ledger entries this process wrote that it has not yet seen folded into their rollup (commands/spendFold.ts).

interface OwnEntry {
  organizationId: string;
  day: string;
  inc: Record<string, number>;
  /** Order of the write's acknowledgement in this process ({@link ownSeq}). */
  seq: number;
}
const ownPending = new Map<string, OwnEntry>();
let ownWrites = 0;
/** Own entries kept at most (the oldest go first: they are in the ledger, and the fold counts them anyway). */
const MAX_OWN = 100_000;

/**
 * Counts a ledger entry this process has just written: at once in its kept rollup, and in every fresh read of the
 * rollups until a fold has counted it.
 * @param id the entry's id.
 * @param organizationId its organization.
 * @param day its UTC day.
 * @param inc what it adds to its rollup (commands/spend.ts rollupIncrements).
 */
export function countOwnEntry(organizationId: string, id: string, day: string, inc: Record<string, number>): void {
  if (ownPending.size >= MAX_OWN) ownPending.delete(ownPending.keys().next().value!);
  ownPending.set(id, { organizationId, day, inc, seq: ++ownWrites });
  addLocally(organizationId, day, inc);
}

/** @returns the number of the last own write acknowledged: a read issued after it sees every earlier one. */
export const ownSeq = (): number => ownWrites;

/** @returns how many own entries have not been seen folded. */
export const ownUnfolded = (): number => ownPending.size;

/**
 * Forgets own entries a fold has counted: those written before a complete scan of the pending entries (the scan saw
 * them pending and the fold counted them, or they were no longer pending: another process's fold had).
 * @param seq {@link ownSeq} when the scan was issued.
 * @param organizationId only this organization's (a fold of one organization).
 */
export function forgetOwnFolded(seq: number, organizationId?: string): void {
  for (const [id, own] of ownPending)
    if (own.seq <= seq && (!organizationId || own.organizationId === organizationId)) ownPending.delete(id);
}

/** Adds what `inc` raises to a kept rollup (this process's own spend counts at once). */
export function addLocally(organizationId: string, day: string, inc: Record<string, number>): void {
  const month = monthTotals.get(organizationId);
  if (!month || month.month !== day.slice(0, 7)) return;
  let doc = month.days.get(day);
  if (!doc) {
    doc = {
      _id: `${organizationId}:${day}`,
      organizationId,
      day,
      agents: {},
      models: {},
      missions: {},
    } as SpendRollupDoc;
    month.days.set(day, doc);
  }
  for (const [path, n] of Object.entries(inc)) {
    const parts = path.split('.');
    let at = doc as unknown as Record<string, unknown>;
    for (const p of parts.slice(0, -1)) at = (at[p] ??= {}) as Record<string, unknown>;
    const last = parts.at(-1)!;
    at[last] = ((at[last] as number | undefined) ?? 0) + n;
  }
}

/**
 * Forgets this process's copies of an organization's rollups (a test that writes them directly, a budget change).
 * @param organizationId the organization.
 */
export function forgetSpend(organizationId: string): void {
  monthTotals.delete(organizationId);
}
