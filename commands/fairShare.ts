/**
 * An organization's weight in the sharing of execution slots (issue 39 point 3; docs/fairness.md): how many slots of
 * a busy process it gets for one of an organization of weight 1 (lib/fairLine.ts), and its Temporal fairness weight.
 * Set by operators (`npm run admin -- share set --org <orgId> --weight <n | default>`), not by the organization.
 */
import { NotFoundError } from '../lib/errors';
import { invalidate, SharedCache } from '../lib/sharedCache';
import { Organization } from '../models';

/** The weight of an organization that has none set. */
export const DEFAULT_FAIRNESS_WEIGHT = 1;
/** Bounds of a weight (Temporal's fairness weights are floats; the line's share is `running / weight`). */
export const FAIRNESS_WEIGHT_MIN = 0.01;
export const FAIRNESS_WEIGHT_MAX = 1000;

const WEIGHTS = 'fairness-weights';
const weights = new SharedCache<number>(WEIGHTS);

/**
 * @param organizationId an organization ('' or unknown: the default).
 * @returns its weight (cached per process for CACHE_TTL_MS, cleared by {@link setFairnessWeight}).
 */
export async function fairnessWeight(organizationId: string): Promise<number> {
  if (!organizationId) return DEFAULT_FAIRNESS_WEIGHT;
  const weight = await weights.get(organizationId, async () => {
    const org = await Organization.findById(organizationId).select({ fairnessWeight: 1 }).lean();
    if (!org) return undefined;
    return { value: org.fairnessWeight ?? DEFAULT_FAIRNESS_WEIGHT, group: organizationId };
  });
  return weight ?? DEFAULT_FAIRNESS_WEIGHT;
}

/**
 * Sets an organization's weight (null: back to the default) and clears it in every process.
 * @param organizationId the organization.
 * @param weight between FAIRNESS_WEIGHT_MIN and FAIRNESS_WEIGHT_MAX, or null.
 * @throws NotFoundError when there is no such organization.
 */
export async function setFairnessWeight(organizationId: string, weight: number | null): Promise<void> {
  const res = await Organization.updateOne(
    { _id: organizationId },
    weight === null ? { $unset: { fairnessWeight: 1 } } : { $set: { fairnessWeight: weight } }
  );
  if (res.matchedCount === 0) throw new NotFoundError('Organization not found');
  await invalidate(WEIGHTS, organizationId);
}
