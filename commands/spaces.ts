/**
 * Spaces (workspaces): CRUD, the organization's default space, initialization of the space directory, and
 * encrypted environment variables. Visibility (docs/decisions.md "Spaces"): private → its owner only;
 * organization → members; public → also readable by any authenticated caller who knows the id. The owner and
 * organization owners/admins may modify.
 */
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import mongoose from 'mongoose';
import { checkAgentIds } from './agents';
import { DEFAULT_SPACES } from './defaultSpace';
import { checkSkillIds } from './skills';
import { quotaDeps, withWorkspaceReservation, type QuotaConfig } from './workspaceQuota';
import { authChanged, type AuthContext } from './tokens';
import { encryptSecret } from '../lib/crypto';
import {
  AppError,
  ConflictError,
  EncryptionUnavailableError,
  ForbiddenError,
  NotFoundError,
  SpaceInitFailedError,
  ValidationError,
} from '../lib/errors';
import { paginate } from '../lib/pagination';
import { invalidate } from '../lib/sharedCache';
import { spaceDir } from '../lib/workspace';
import { Chat, Membership, Space, SpaceAgent, type SpaceDoc, type SpaceInitType } from '../models';

const NOT_FOUND = 'Space not found';
const WORKSPACE_NOT_FOUND = 'Workspace not found';
/** Most environment variables a space may hold. */
export const MAX_ENV_VARS = 200;

export interface SpaceInput {
  name: string;
  description?: string;
  visibility?: 'private' | 'organization' | 'public';
  assignedAgents?: string[];
  skillIds?: string[];
  pluginIds?: string[];
}

function canSee(auth: AuthContext, space: SpaceDoc): boolean {
  if (space.organizationId === auth.organizationId)
    return space.visibility !== 'private' || space.ownerId === auth.userId;
  return space.visibility === 'public';
}

/**
 * @param auth the caller.
 * @param id space id.
 * @returns the space when visible to the caller.
 */
export async function findVisibleSpace(auth: AuthContext, id: string): Promise<SpaceDoc> {
  // By id alone (an index lookup on every server); visibility, tenancy and deletion are checked below.
  const space = await Space.findById(id).lean<SpaceDoc>();
  if (!space || space.deletedAt || !canSee(auth, space)) throw new NotFoundError(NOT_FOUND);
  return space;
}

/**
 * @param auth the caller.
 * @param id space id.
 * @returns the space when the caller may modify it.
 */
export async function findModifiableSpace(auth: AuthContext, id: string): Promise<SpaceDoc> {
  const space = await findVisibleSpace(auth, id);
  if (!mayModify(auth, space)) throw new ForbiddenError();
  return space;
}

/** The space's owner and the organization's owners/admins may modify it. */
function mayModify(auth: AuthContext, space: SpaceDoc): boolean {
  return space.organizationId === auth.organizationId && (space.ownerId === auth.userId || auth.role !== 'member');
}

/**
 * Checks the ids a space refers to against the caller's organization, before anything is stored: `assignedAgents`
 * (commands/agents.ts checkAgentIds) and `skillIds` (commands/skills.ts checkSkillIds). `pluginIds` name no
 * record of the service (plugins are the client's), so they are kept as sent.
 * @param auth the caller.
 * @param input the fields sent.
 * @throws ValidationError naming the field.
 */
async function checkReferences(auth: AuthContext, input: Partial<SpaceInput>): Promise<void> {
  await checkAgentIds(auth, input.assignedAgents ?? [], 'assignedAgents');
  await checkSkillIds(auth, input.skillIds ?? [], 'skillIds');
}

/**
 * @param auth the caller.
 * @param input validated fields.
 * @returns the new space.
 */
export async function createSpace(auth: AuthContext, input: SpaceInput): Promise<SpaceDoc> {
  await checkReferences(auth, input);
  const space = await Space.create({ organizationId: auth.organizationId, ownerId: auth.userId, ...input });
  return space.toObject() as SpaceDoc;
}

/**
 * Makes a workspace of the caller's organization the caller's active one (kept on its membership).
 * @param auth the caller.
 * @param id space id.
 * @returns the space.
 * @throws NotFoundError `Workspace not found` for an id that names no workspace of the organization the caller
 *   can see (another organization's public space included).
 */
export async function selectWorkspace(auth: AuthContext, id: string): Promise<SpaceDoc> {
  const space = await findVisibleSpace(auth, id).catch((err: unknown) => {
    throw err instanceof NotFoundError ? new NotFoundError(WORKSPACE_NOT_FOUND) : err;
  });
  if (space.organizationId !== auth.organizationId) throw new NotFoundError(WORKSPACE_NOT_FOUND);
  await Membership.updateOne(
    { organizationId: auth.organizationId, userId: auth.userId },
    { $set: { activeWorkspaceId: space._id } }
  );
  await authChanged(auth.organizationId);
  return space;
}

/**
 * @param space a stored space.
 * @returns the space as presented: `chatCount` the chats it holds, counted when it is read (index
 * `{organizationId, spaceId}`) instead of a counter every new chat would update, and `assignedAgents` its own list
 * followed by the agents created in it (space_agents, index `{spaceId, createdAt}`) [docs/decisions.md "Space chat
 * count and agents"].
 */
export async function withDerivedFields(space: SpaceDoc): Promise<SpaceDoc & { chatCount: number }> {
  const [chatCount, created] = await Promise.all([
    Chat.countDocuments({ organizationId: space.organizationId, spaceId: space._id }),
    SpaceAgent.find({ spaceId: space._id }).sort({ createdAt: 1 }).select({ agentId: 1 }).lean(),
  ]);
  const assignedAgents = [...new Set([...space.assignedAgents, ...created.map((a) => a.agentId)])];
  return { ...space, chatCount, assignedAgents };
}

/**
 * @param auth the caller.
 * @param page limit and cursor.
 * @returns the spaces of the organization the caller may see.
 */
export async function listSpaces(
  auth: AuthContext,
  page: { limit: number; cursor?: string }
): Promise<{ items: SpaceDoc[]; total: number; nextCursor: string | null }> {
  const filter = {
    organizationId: auth.organizationId,
    deletedAt: null,
    // Operators built here from constants are marked trusted for sanitizeFilter.
    $or: [{ visibility: mongoose.trusted({ $ne: 'private' }) }, { ownerId: auth.userId }],
  };
  const [{ items, nextCursor }, total] = await Promise.all([
    paginate<SpaceDoc>(Space, filter, page),
    Space.countDocuments(filter),
  ]);
  return { items, total, nextCursor };
}

/**
 * @param auth the caller.
 * @param id space id.
 * @param changes fields to set.
 * @returns the updated space.
 */
export async function updateSpace(auth: AuthContext, id: string, changes: Partial<SpaceInput>): Promise<SpaceDoc> {
  await findModifiableSpace(auth, id); // 404 / 403 before the references are looked at
  await checkReferences(auth, changes);
  // A new list replaces the whole presented list: agents assigned at their creation but left out go too.
  if (changes.assignedAgents)
    await SpaceAgent.deleteMany({ spaceId: id, agentId: mongoose.trusted({ $nin: changes.assignedAgents }) });
  const updated = await Space.findOneAndUpdate(
    { _id: id, organizationId: auth.organizationId, deletedAt: null },
    { $set: changes },
    { new: true }
  ).lean<SpaceDoc>();
  if (!updated) throw new NotFoundError(NOT_FOUND);
  return updated;
}

/**
 * Deletes a space: its record first (soft: it disappears from lists and reads, nothing new is written into it; its
 * chats are kept), then its directory on disk. Idempotent and resumable [docs/decisions.md "Security (issue 30)",
 * space deletion]: a repeated delete of a space already deleted, by someone who could delete it, removes the
 * directory again and succeeds, so a delete cut short between the two steps (a crash, a write that was in flight)
 * is finished by repeating it.
 * @param auth the caller.
 * @param id space id.
 * @param workspacesDir root of space directories.
 * @throws NotFoundError for a space the caller cannot see; ForbiddenError for one it cannot modify.
 */
export async function deleteSpace(auth: AuthContext, id: string, workspacesDir: string): Promise<void> {
  // By id alone, as findVisibleSpace; a deleted space is answered only to those who could have deleted it.
  const found = await Space.findById(id).lean<SpaceDoc>();
  if (found?.deletedAt) {
    if (!mayModify(auth, found)) throw new NotFoundError(NOT_FOUND);
  } else {
    await findModifiableSpace(auth, id);
    await Space.updateOne(
      { _id: id, organizationId: auth.organizationId, deletedAt: null },
      { $set: { deletedAt: new Date(), isDefault: false } }
    );
    await invalidate(DEFAULT_SPACES, auth.organizationId); // it may have been the default space
  }
  await rm(spaceDir(workspacesDir, auth.organizationId, id), { recursive: true, force: true });
}

const STARTER_KIT: Record<string, (name: string) => string> = {
  'README.md': (name) => `# ${name}\n\nThis space was created with the starter kit.\n`,
  'AGENTS.md': () => '# Instructions for agents\n\nDescribe here how agents should work in this space.\n',
  'docs/.gitkeep': () => '',
  'data/.gitkeep': () => '',
  '.gitignore': () => 'node_modules/\n.env\n',
};

export interface SpaceInitInput {
  type: SpaceInitType;
  /** Must be the caller's organization when sent. */
  orgId?: string;
  /** Renames the space. */
  spaceName?: string;
}

/**
 * Marks a space initialized, once: the first caller claims it (and renames it when `spaceName` is sent).
 * @param auth the caller (who must be allowed to modify the space).
 * @param id space id.
 * @param input type, orgId, spaceName.
 * @returns the space after the claim, and whether this call claimed it (false: it was initialized before, as
 *   `space.initializedAs` says).
 */
export async function claimSpaceInit(
  auth: AuthContext,
  id: string,
  input: SpaceInitInput
): Promise<{ space: SpaceDoc; claimed: boolean }> {
  if (input.orgId !== undefined && input.orgId !== auth.organizationId) {
    throw new ValidationError("orgId does not match the caller's organization");
  }
  const space = await findModifiableSpace(auth, id);
  const claimed = await Space.findOneAndUpdate(
    { _id: id, organizationId: auth.organizationId, deletedAt: null, initializedAs: null },
    { $set: { initializedAs: input.type, initializedAt: new Date(), name: input.spaceName ?? space.name } },
    { new: true }
  ).lean<SpaceDoc>();
  if (claimed) return { space: claimed, claimed: true };
  return { space: await findModifiableSpace(auth, id), claimed: false };
}

/**
 * Initializes the space directory once (`empty`, `readme`, `starterKit`; the `git` type clones a repository:
 * commands/workspaceRepos.ts `initGitSpace`).
 * @param auth the caller.
 * @param id space id.
 * @param input type, optional orgId (must be the caller's) and spaceName (renames the space).
 * @param config root of space directories, the workspace cap and the reservations' lease.
 * @returns the files created (relative paths).
 */
export async function initSpace(
  auth: AuthContext,
  id: string,
  input: SpaceInitInput & { type: Exclude<SpaceInitType, 'git'> },
  config: QuotaConfig
): Promise<string[]> {
  const { space, claimed } = await claimSpaceInit(auth, id, input);
  if (!claimed) throw new ConflictError('Space already initialized');
  const name = space.name;

  const dir = spaceDir(config.workspacesDir, auth.organizationId, id);
  await mkdir(dir, { recursive: true });
  const files: Record<string, string> = {};
  if (input.type === 'readme') files['README.md'] = `# ${name}\n\n${space.description ?? ''}\n`;
  if (input.type === 'starterKit') for (const [f, make] of Object.entries(STARTER_KIT)) files[f] = make(name);
  const bytes = Object.values(files).reduce((n, content) => n + Buffer.byteLength(content), 0);
  try {
    // Within the workspace's cap like any other write (commands/workspaceQuota.ts).
    await withWorkspaceReservation(
      quotaDeps(config),
      { organizationId: auth.organizationId, spaceId: id },
      { bytes },
      async () => {
        for (const [rel, content] of Object.entries(files)) {
          await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
          await writeFile(path.join(dir, rel), content, { flag: 'wx' });
        }
      }
    );
  } catch (err) {
    await Space.updateOne(
      { _id: id, organizationId: auth.organizationId },
      { $set: { initializedAs: null, initializedAt: null } }
    );
    if (err instanceof AppError) throw err;
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new ConflictError('Space directory is not empty');
    throw new SpaceInitFailedError((err as Error).message);
  }
  const count = (await readdir(dir, { recursive: true, withFileTypes: true })).filter(
    (e) => e.isFile() && !e.parentPath?.includes('.git')
  ).length;
  await Space.updateOne({ _id: id, organizationId: auth.organizationId }, { $set: { fileCount: count } });
  return Object.keys(files);
}

/**
 * Sets (or, with null, removes) environment variables; values are encrypted at rest.
 * @param auth the caller.
 * @param id space id.
 * @param vars name → value (or null to delete).
 * @param key the AES-256-GCM key.
 * @returns names and update times of every variable now set.
 */
export async function setSpaceEnvironment(
  auth: AuthContext,
  id: string,
  vars: Record<string, string | null>,
  key: Buffer | undefined
): Promise<Array<{ name: string; updatedAt: Date }>> {
  if (!key) throw new EncryptionUnavailableError();
  const space = await findModifiableSpace(auth, id);
  const now = new Date();
  const byName = new Map<string, { name: string; sealed: string; updatedAt: Date }>(
    space.environment.map((v) => [v.name, { name: v.name, sealed: v.sealed, updatedAt: v.updatedAt }])
  );
  for (const [name, value] of Object.entries(vars)) {
    if (value === null) byName.delete(name);
    else byName.set(name, { name, sealed: encryptSecret(key, value), updatedAt: now });
  }
  if (byName.size > MAX_ENV_VARS)
    throw new ValidationError(`A space holds at most ${MAX_ENV_VARS} environment variables`);
  const environment = [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
  await Space.updateOne({ _id: id, organizationId: auth.organizationId, deletedAt: null }, { $set: { environment } });
  return environment.map((v) => ({ name: v.name, updatedAt: v.updatedAt }));
}
