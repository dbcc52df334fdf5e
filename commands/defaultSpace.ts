/**
 * The organization's default space (made on first use) and its id, cached per process: what agents, executions
 * and missions fall back on when no space is named. commands/spaces.ts clears the cache when a space is deleted.
 */
import { SharedCache } from '../lib/sharedCache';
import { Space, type SpaceDoc } from '../models';
import type { AuthContext } from './tokens';
import { isDuplicateKey } from '../lib/mongo';

/**
 * The organization's default space, created on first use. The first one has a fixed id
 * (`spc_default_<organizationId>`), so requests that create it at once make one space: the insert of a unique `_id`
 * is exclusive on both database servers, a find-then-create is not. After that one was deleted, the next default
 * space gets a random id (a rare path where two concurrent first uses could still make two).
 * @param auth the caller.
 * @returns the space.
 */
export async function ensureDefaultSpace(auth: AuthContext): Promise<SpaceDoc> {
  const found = await Space.findOne({
    organizationId: auth.organizationId,
    isDefault: true,
    deletedAt: null,
  }).lean<SpaceDoc>();
  if (found) return found;
  const fixedId = `spc_default_${auth.organizationId}`;
  const create = (_id?: string): Promise<SpaceDoc> =>
    Space.create({
      ...(_id ? { _id } : {}),
      organizationId: auth.organizationId,
      ownerId: auth.userId,
      name: 'General',
      description: 'Default space of the organization',
      isDefault: true,
    }).then((d) => d.toObject() as SpaceDoc);
  try {
    return await create(fixedId);
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    const existing = await Space.findById(fixedId).lean<SpaceDoc>();
    if (existing && existing.isDefault && !existing.deletedAt) return existing; // made at the same moment
    return create();
  }
}

/** Default space ids by organization: kept per process for CACHE_TTL_MS, cleared when a space is deleted. */
export const DEFAULT_SPACES = 'default-space';
const defaultSpaceIds = new SharedCache<string>(DEFAULT_SPACES);

/**
 * @param auth the caller.
 * @returns the id of the organization's default space, made on first use ({@link ensureDefaultSpace}).
 */
export async function defaultSpaceId(auth: AuthContext): Promise<string> {
  const id = await defaultSpaceIds.get(auth.organizationId, async () => ({
    value: (await ensureDefaultSpace(auth))._id,
    group: auth.organizationId,
  }));
  return id!;
}
