/**
 * An organization's budgets (/api/budgets, docs/spend.md): create, read, change, remove, and what a spent one does
 * to new work (402 `budget_exceeded` at admission). Raising or removing a cap signals the organization's jobs paused
 * as `needs_attention` whose budgets now leave room, so they run their iteration again.
 */
import type { Config } from '../lib/config';
import { NotFoundError, ValidationError } from '../lib/errors';
import { invalidate } from '../lib/sharedCache';
import type { TemporalDeps } from '../lib/temporal';
import {
  Budget,
  Job,
  type BudgetDoc,
  type BudgetPeriod,
  type BudgetScope,
  type BudgetUnit,
  type JobDoc,
} from '../models';
import { budgetChangedSignal } from '../workflows/definitions';
import { jobWorkflowId } from '../workflows/ids';
import { findVisibleAgent } from './agents';
import { findMission } from './missions';
import { budgetReached, budgetStates, BUDGETS_CACHE, forgetSpend, type BudgetState } from './spend';
import { foldSpend } from './spendFold';
import type { AuthContext } from './tokens';

/** Budgets one organization may hold. */
export const MAX_BUDGETS = 100;

/** What a client sends to create a budget. */
export interface BudgetInput {
  name?: string;
  scope: BudgetScope;
  targetId?: string | null;
  period: BudgetPeriod;
  unit: BudgetUnit;
  limit: number;
}

/**
 * @param auth the caller.
 * @param input the budget.
 * @returns the stored budget.
 */
export async function createBudget(auth: AuthContext, input: BudgetInput): Promise<BudgetDoc> {
  if (input.scope === 'organization' && input.targetId)
    throw new ValidationError('target_id is only for scope agent or mission');
  if (input.scope === 'agent') {
    if (!input.targetId) throw new ValidationError('target_id (the agent) is required for scope agent');
    await findVisibleAgent(auth, input.targetId).catch(() => {
      throw new ValidationError('target_id is not an agent of this organization');
    });
  }
  if (input.scope === 'mission') {
    if (!input.targetId) throw new ValidationError('target_id (the mission) is required for scope mission');
    await findMission(auth, input.targetId).catch(() => {
      throw new ValidationError('target_id is not a mission of this organization');
    });
  }
  if ((await Budget.countDocuments({ organizationId: auth.organizationId })) >= MAX_BUDGETS)
    throw new ValidationError(`An organization may hold at most ${MAX_BUDGETS} budgets`);
  const doc = await Budget.create({
    organizationId: auth.organizationId,
    name: input.name ?? '',
    scope: input.scope,
    targetId: input.scope === 'organization' ? null : input.targetId,
    period: input.period,
    unit: input.unit,
    limit: input.limit,
  });
  await invalidate(BUDGETS_CACHE, auth.organizationId);
  return doc.toObject() as BudgetDoc;
}

/**
 * @param auth the caller.
 * @returns the organization's budgets, oldest first.
 */
export async function listBudgets(auth: AuthContext): Promise<BudgetDoc[]> {
  return Budget.find({ organizationId: auth.organizationId })
    .sort({ createdAt: 1, _id: 1 })
    .limit(MAX_BUDGETS)
    .lean<BudgetDoc[]>();
}

/**
 * @param auth the caller.
 * @param id the budget.
 * @returns it.
 * @throws NotFoundError for an unknown id or another organization's.
 */
export async function findBudget(auth: AuthContext, id: string): Promise<BudgetDoc> {
  const doc = await Budget.findOne({ _id: id, organizationId: auth.organizationId }).lean<BudgetDoc>();
  if (!doc) throw new NotFoundError('Budget not found');
  return doc;
}

/**
 * The spend each budget counts now (period `run`: nothing, it counts per execution), read fresh.
 * @param config BUDGET_CACHE_MS.
 * @param docs budgets of one organization.
 * @returns their states, by budget id.
 */
export async function budgetSpend(
  config: Pick<Config, 'budgetCacheMs'>,
  docs: BudgetDoc[]
): Promise<Map<string, BudgetState>> {
  const out = new Map<string, BudgetState>();
  if (docs.length === 0) return out;
  const organizationId = docs[0].organizationId;
  await foldSpend({ organizationId }); // other processes' entries not folded yet count too
  forgetSpend(organizationId);
  for (const doc of docs) {
    const subject = {
      organizationId,
      agentId: doc.scope === 'agent' ? doc.targetId! : '',
      missionId: doc.scope === 'mission' ? doc.targetId : null,
    };
    const [state] = (await budgetStates(config, subject)).filter((s) => s.budget._id === doc._id);
    if (state) out.set(doc._id, state);
  }
  return out;
}

/**
 * Changes a budget's name or limit; a raised limit resumes the work it paused.
 * @param deps configuration and Temporal.
 * @param auth the caller.
 * @param id the budget.
 * @param patch the new name and/or limit.
 * @returns the budget as stored.
 */
export async function updateBudget(
  deps: { config: Readonly<Config>; temporal: TemporalDeps },
  auth: AuthContext,
  id: string,
  patch: { name?: string; limit?: number }
): Promise<BudgetDoc> {
  await findBudget(auth, id);
  const doc = await Budget.findOneAndUpdate(
    { _id: id, organizationId: auth.organizationId },
    {
      $set: {
        ...(patch.name !== undefined ? { name: patch.name } : {}),
        ...(patch.limit !== undefined ? { limit: patch.limit } : {}),
      },
    },
    { new: true }
  ).lean<BudgetDoc>();
  if (!doc) throw new NotFoundError('Budget not found');
  await invalidate(BUDGETS_CACHE, auth.organizationId);
  await resumePausedJobs(deps, auth.organizationId);
  return doc;
}

/**
 * Removes a budget; the work it paused resumes.
 * @param deps configuration and Temporal.
 * @param auth the caller.
 * @param id the budget.
 */
export async function deleteBudget(
  deps: { config: Readonly<Config>; temporal: TemporalDeps },
  auth: AuthContext,
  id: string
): Promise<void> {
  const { deletedCount } = await Budget.deleteOne({ _id: id, organizationId: auth.organizationId });
  if (deletedCount === 0) throw new NotFoundError('Budget not found');
  await invalidate(BUDGETS_CACHE, auth.organizationId);
  await resumePausedJobs(deps, auth.organizationId);
}

/** Paused jobs one budget change looks at (the rest wait for the next change). */
const MAX_RESUMED = 500;

/**
 * Signals each job of the organization paused by a spent budget (`needs_attention`) whose budgets, read fresh, now
 * all leave room: its workflow runs the iteration again (workflows/job.ts).
 * @param deps configuration and Temporal.
 * @param organizationId the organization.
 * @returns the jobs signalled.
 */
export async function resumePausedJobs(
  deps: { config: Readonly<Config>; temporal: TemporalDeps },
  organizationId: string
): Promise<string[]> {
  const paused = await Job.find({ organizationId, status: 'needs_attention' })
    .sort({ createdAt: -1, _id: -1 })
    .limit(MAX_RESUMED)
    .select({ agentId: 1, missionId: 1 })
    .lean<Pick<JobDoc, '_id' | 'agentId' | 'missionId'>[]>();
  await foldSpend({ organizationId });
  forgetSpend(organizationId);
  const resumed: string[] = [];
  for (const job of paused) {
    const spent = await budgetReached(deps.config, {
      organizationId,
      agentId: job.agentId,
      missionId: job.missionId,
    });
    if (spent) continue;
    await deps.temporal.client.workflow.getHandle(jobWorkflowId(job._id)).signal(budgetChangedSignal);
    resumed.push(job._id);
  }
  return resumed;
}
