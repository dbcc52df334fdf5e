/**
 * Spend (docs/spend.md): the cost ledger and the budgets' view of it.
 *
 * Every model call of an execution appends one ledger entry (`<executionId>:<turn>`, a duplicate key when a retried
 * attempt writes it again) and, when the entry is new, raises the organization's rollup of the day (models/SpendRollup.ts)
 * by the same counts: two writes per model call, no read. The usage report and the budgets read the rollups, never the
 * entries.
 *
 * Budgets are checked without a round trip on the hot path: each process keeps an organization's budgets (a shared
 * cache, cleared everywhere on every change) and, for an organization that has budgets, its rollups of the current
 * month, read again after BUDGET_CACHE_MS and raised at once by every entry this process writes. A check may therefore
 * miss what other processes spent in the last BUDGET_CACHE_MS: a run overshoots a cap by at most the model calls that
 * were already under way when it was reached (one per running execution) plus that window's spend elsewhere.
 */
import mongoose from 'mongoose';
import type { Config } from '../lib/config';
import { BudgetExceededError } from '../lib/errors';
import { isDuplicateKey } from '../lib/mongo';
import { costOf, type CallTokens } from '../lib/prices';
import { SharedCache } from '../lib/sharedCache';
import { budgetRefusals, budgetThresholds, spendTokens, spendUsd } from '../lib/metrics';
import { Budget, LedgerEntry, SpendRollup, type BudgetDoc, type ExecutionDoc, type SpendRollupDoc } from '../models';
import { recordEvent, type EventDeps } from './serviceEvents';

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
// The ledger.

/** A ledger entry's counts, as the rollup's `$inc` raises them. */
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

/** Adds what `inc` raises to a kept rollup (this process's own spend counts at once). */
function addLocally(organizationId: string, day: string, inc: Record<string, number>): void {
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
  const inc = {
    ...increments('', tokens, costUsd),
    ...increments(`agents.${exec.agentId}.`, tokens, costUsd),
    ...increments(`models.${modelKey(exec.model)}.`, tokens, costUsd),
    ...(exec.missionId ? increments(`missions.${exec.missionId}.`, tokens, costUsd) : {}),
    ...(costUsd === null ? { unpricedCalls: 1 } : {}),
  };
  await SpendRollup.updateOne(
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

/**
 * Forgets this process's copies of an organization's rollups (a test that writes them directly, a budget change).
 * @param organizationId the organization.
 */
export function forgetSpend(organizationId: string): void {
  monthTotals.delete(organizationId);
}
