/**
 * Skills [docs/decisions.md "Skills"]: organization-owned Markdown instructions agents attach through `skillIds`.
 * Visibility as for agents (commands/agents.ts): `private` → its owner only; `organization` → every member;
 * `public` → also readable by any authenticated caller who knows the id, listed only inside the organization,
 * changed only inside it. Inside the organization, the owner and the owners/admins may change or delete one; other
 * members get 403. Every update that changes something makes a new version: an immutable snapshot written first by
 * its deterministic id (models/SkillVersion.ts), then the skill's record moves to it. Names are unique in the
 * organization through a reservation made by insert (models/SkillName.ts).
 */
import mongoose from 'mongoose';
import type { AuthContext } from './tokens';
import { agentsChanged, findAgentById } from './agents';
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../lib/errors';
import { newId } from '../lib/ids';
import { insertDocument, isDuplicateKey } from '../lib/mongo';
import { paginate } from '../lib/pagination';
import { invalidate, SharedCache } from '../lib/sharedCache';
import {
  Agent,
  Skill,
  SkillName,
  skillNameId,
  SkillVersion,
  skillVersionId,
  type AgentDoc,
  type SkillCategory,
  type SkillDoc,
  type SkillVersionDoc,
  type SkillVisibility,
} from '../models';

const NOT_FOUND = 'Skill not found';

/** The fields a client sets (all but `name` and `prompt` have defaults on create). */
export interface SkillContent {
  name: string;
  displayName: string;
  description: string;
  prompt: string;
  category: SkillCategory;
  builtInTools: string[];
  requiredMCPs: string[];
  visibility: SkillVisibility;
}

export type SkillCreateInput = Pick<SkillContent, 'name' | 'prompt'> & Partial<SkillContent>;

const CONTENT_KEYS = [
  'name',
  'displayName',
  'description',
  'prompt',
  'category',
  'builtInTools',
  'requiredMCPs',
  'visibility',
] as const satisfies readonly (keyof SkillContent)[];

/** How long a name's reservation may name a skill that does not (yet) carry that name before another takes it. */
const RESERVATION_GRACE_MS = 60_000;
/** Concurrent updates one update retries on top of before it answers 409. */
const UPDATE_ATTEMPTS = 10;
/** Versions one settle moves a skill's record through at most (a bound, never reached in practice). */
const SETTLE_STEPS = 100;

/** The skills of agents' executions: kept per process for CACHE_TTL_MS, cleared by every skill write. */
const SKILLS = 'skills';
const skillCache = new SharedCache<SkillDoc[]>(SKILLS);

/** Tells every process that an organization's skills changed (call after the write). */
function skillsChanged(organizationId: string): Promise<void> {
  return invalidate(SKILLS, organizationId);
}

function contentOf(skill: SkillContent): SkillContent {
  return Object.fromEntries(CONTENT_KEYS.map((k) => [k, skill[k]])) as unknown as SkillContent;
}

function sameContent(a: SkillContent, b: SkillContent): boolean {
  return CONTENT_KEYS.every((k) => JSON.stringify(a[k]) === JSON.stringify(b[k]));
}

function canSee(auth: AuthContext, skill: SkillDoc): boolean {
  if (skill.deletedAt) return false;
  if (skill.organizationId === auth.organizationId)
    return skill.visibility !== 'private' || skill.ownerId === auth.userId;
  return skill.visibility === 'public';
}

/**
 * @param auth the caller.
 * @param id skill id.
 * @returns the skill when the caller may see it.
 * @throws NotFoundError `Skill not found` otherwise (deleted skills too).
 */
export async function findVisibleSkill(auth: AuthContext, id: string): Promise<SkillDoc> {
  const skill = await Skill.findById(id).lean<SkillDoc>();
  if (!skill || !canSee(auth, skill)) throw new NotFoundError(NOT_FOUND);
  return skill;
}

/**
 * @param auth the caller.
 * @param id skill id.
 * @returns the skill when the caller may change it.
 * @throws NotFoundError when invisible; ForbiddenError when visible but not the caller's to change.
 */
export async function findModifiableSkill(auth: AuthContext, id: string): Promise<SkillDoc> {
  const skill = await findVisibleSkill(auth, id);
  if (skill.organizationId !== auth.organizationId || (skill.ownerId !== auth.userId && auth.role === 'member'))
    throw new ForbiddenError();
  return skill;
}

/**
 * Takes a name for a skill in an organization (the reservation's insert is the exclusive write).
 * @param organizationId the organization.
 * @param name the name.
 * @param skillId the skill taking it.
 * @throws ConflictError when a live skill holds it.
 */
async function reserveName(organizationId: string, name: string, skillId: string): Promise<void> {
  const _id = skillNameId(organizationId, name);
  const taken = new ConflictError(`A skill named ${name} already exists in the organization`);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await SkillName.create({ _id, organizationId, skillId });
      return;
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
    }
    const held = await SkillName.findById(_id).lean();
    if (!held) continue; // released meanwhile
    const holder = await Skill.findOne({ _id: held.skillId, organizationId }).lean<SkillDoc>();
    const settled = Date.now() - held.createdAt.getTime() > RESERVATION_GRACE_MS;
    // A reservation left by a deleted skill, or (once a create or rename in flight had time to finish) by a skill
    // that never carried the name, is removed, and the name claimed by insert again: of several requests doing
    // this at once, one gets it.
    const leftover = holder?.deletedAt || (settled && (!holder || holder.name !== name));
    if (!leftover) throw taken;
    await SkillName.deleteOne({ _id, skillId: held.skillId });
  }
  throw taken;
}

/** Releases a skill's reservation of a name (only its own). */
async function releaseName(organizationId: string, name: string, skillId: string): Promise<void> {
  await SkillName.deleteOne({ _id: skillNameId(organizationId, name), skillId });
}

/**
 * Creates a skill at version 1.
 * @param auth the caller (its owner).
 * @param input validated fields.
 * @returns the skill.
 * @throws ConflictError when the organization has a skill of that name.
 */
export async function createSkill(auth: AuthContext, input: SkillCreateInput): Promise<SkillDoc> {
  const organizationId = auth.organizationId;
  const _id = newId('skl');
  const content: SkillContent = {
    name: input.name,
    displayName: input.displayName ?? input.name,
    description: input.description ?? '',
    prompt: input.prompt,
    category: input.category ?? 'other',
    builtInTools: input.builtInTools ?? [],
    requiredMCPs: input.requiredMCPs ?? [],
    visibility: input.visibility ?? 'organization',
  };
  await reserveName(organizationId, content.name, _id);
  const [skill, version] = await Promise.allSettled([
    insertDocument(Skill, { _id, organizationId, ownerId: auth.userId, ...content, version: 1 }),
    insertDocument(SkillVersion, {
      _id: skillVersionId(_id, 1),
      skillId: _id,
      organizationId,
      ownerId: auth.userId,
      version: 1,
      ...content,
      createdBy: auth.userId,
    }),
  ]);
  if (skill.status === 'rejected' || version.status === 'rejected') {
    await Promise.all([
      Skill.deleteOne({ _id, organizationId }),
      SkillVersion.deleteOne({ _id: skillVersionId(_id, 1) }),
      releaseName(organizationId, content.name, _id),
    ]).catch(() => undefined);
    throw skill.status === 'rejected' ? skill.reason : (version as PromiseRejectedResult).reason;
  }
  return skill.value as SkillDoc;
}

/** Filter of the skills a caller may list: its organization's live ones, minus other users' private ones. */
function listableSkillsFilter(auth: AuthContext, category?: SkillCategory): Record<string, unknown> {
  return {
    organizationId: auth.organizationId,
    deletedAt: null,
    ...(category ? { category } : {}),
    $or: [{ visibility: mongoose.trusted({ $ne: 'private' }) }, { ownerId: auth.userId }],
  };
}

/**
 * @param auth the caller.
 * @param filters category.
 * @param page limit and cursor.
 * @returns one page (newest first), the total count and the next cursor.
 */
export async function listSkills(
  auth: AuthContext,
  filters: { category?: SkillCategory },
  page: { limit: number; cursor?: string }
): Promise<{ items: SkillDoc[]; total: number; nextCursor: string | null }> {
  const filter = listableSkillsFilter(auth, filters.category);
  const [{ items, nextCursor }, total] = await Promise.all([
    paginate<SkillDoc>(Skill, filter, page),
    Skill.countDocuments(filter),
  ]);
  return { items, total, nextCursor };
}

/**
 * Moves a skill's record to its newest version: while a snapshot of the version after the record's exists, the
 * record takes it (never backwards: the write is conditional on an older version). The snapshots are the truth;
 * every update settles after writing its own, so the record ends at the newest version whichever update finishes
 * last, and a version whose record never moved (its process died between the writes) is caught up by the next one.
 * @param id skill id.
 * @param organizationId its organization.
 * @returns the record as it is now.
 * @throws NotFoundError when the skill is gone or deleted.
 */
async function settle(id: string, organizationId: string): Promise<SkillDoc> {
  for (let step = 0; ; step++) {
    const skill = await Skill.findOne({ _id: id, organizationId }).lean<SkillDoc>();
    if (!skill || skill.deletedAt) throw new NotFoundError(NOT_FOUND);
    const next = await SkillVersion.findById(skillVersionId(id, skill.version + 1)).lean<SkillVersionDoc>();
    if (!next || step === SETTLE_STEPS) return skill;
    await Skill.updateOne(
      { _id: id, organizationId, deletedAt: null, version: mongoose.trusted({ $lt: next.version }) },
      { $set: { ...contentOf(next as unknown as SkillContent), version: next.version } }
    );
  }
}

/**
 * Updates a skill: omitted fields stay unchanged; a change makes a new version (nothing changed: none). Concurrent
 * updates each make their own version, each applied on top of the version before it.
 * @param auth the caller.
 * @param id skill id.
 * @param changes the fields to change.
 * @returns the skill after the update.
 * @throws ConflictError for a name another skill of the organization has, or after UPDATE_ATTEMPTS lost races.
 */
export async function updateSkill(auth: AuthContext, id: string, changes: Partial<SkillContent>): Promise<SkillDoc> {
  let skill = await findModifiableSkill(auth, id);
  const organizationId = skill.organizationId;
  const oldName = skill.name;
  const rename = changes.name !== undefined && changes.name !== oldName ? changes.name : undefined;
  if (rename) await reserveName(organizationId, rename, id);
  let done = false;
  try {
    for (let attempt = 0; attempt < UPDATE_ATTEMPTS; attempt++) {
      const before = contentOf(skill as unknown as SkillContent);
      const after = { ...before, ...changes };
      if (sameContent(before, after)) {
        done = true;
        return skill;
      }
      const version = skill.version + 1;
      try {
        // The update's claim: of concurrent updates, one writes each version.
        await insertDocument(SkillVersion, {
          _id: skillVersionId(id, version),
          skillId: id,
          organizationId,
          ownerId: skill.ownerId,
          version,
          ...after,
          createdBy: auth.userId,
        });
      } catch (err) {
        if (!isDuplicateKey(err)) throw err;
        skill = await settle(id, organizationId); // another update made this version: apply the changes on top
        continue;
      }
      done = true;
      const settled = await settle(id, organizationId);
      await skillsChanged(organizationId);
      return settled;
    }
    throw new ConflictError('The skill was changed by other requests meanwhile; read it and retry');
  } finally {
    if (rename) {
      const release = done ? releaseName(organizationId, oldName, id) : releaseName(organizationId, rename, id);
      await release.catch(() => undefined);
    }
  }
}

/**
 * Deletes a skill (its routes answer 404 afterwards, its name is free again) and detaches it from the
 * organization's agents, which no longer get it.
 * @param auth the caller.
 * @param id skill id.
 */
export async function deleteSkill(auth: AuthContext, id: string): Promise<void> {
  const skill = await findModifiableSkill(auth, id);
  const res = await Skill.updateOne(
    { _id: id, organizationId: auth.organizationId, deletedAt: null },
    { $set: { deletedAt: new Date() } }
  );
  if (res.matchedCount === 0) throw new NotFoundError(NOT_FOUND);
  await releaseName(auth.organizationId, skill.name, id);
  await Agent.updateMany({ organizationId: auth.organizationId, skillIds: id }, { $pull: { skillIds: id } });
  await Promise.all([skillsChanged(auth.organizationId), agentsChanged(auth.organizationId)]);
}

/**
 * Which versions of a skill the caller may read [docs/decisions.md "Skill versions written while not public"]: a
 * version as visible as the skill was when it was written. Another organization reads only the versions written
 * while the skill was `public`; a member who is not its owner, none written while it was `private`; its owner, all.
 * @param auth the caller (who may see the skill now).
 * @param skill the skill.
 * @returns the filter on the versions' `visibility` (none for the owner).
 */
function versionVisibility(auth: AuthContext, skill: SkillDoc): Record<string, unknown> {
  if (skill.organizationId !== auth.organizationId) return { visibility: 'public' };
  if (skill.ownerId !== auth.userId) return { visibility: mongoose.trusted({ $ne: 'private' }) };
  return {};
}

/**
 * @param auth the caller.
 * @param id skill id.
 * @param page limit and cursor (a version number: the page starts below it).
 * @returns the skill's versions, newest first, and the next cursor.
 */
export async function listSkillVersions(
  auth: AuthContext,
  id: string,
  page: { limit: number; cursor?: string }
): Promise<{ items: SkillVersionDoc[]; nextCursor: string | null }> {
  const skill = await findVisibleSkill(auth, id);
  let below: number | undefined;
  if (page.cursor !== undefined) {
    below = /^[1-9]\d{0,8}$/.test(page.cursor) ? Number(page.cursor) : NaN;
    if (Number.isNaN(below)) throw new ValidationError('Invalid cursor');
  }
  const docs = await SkillVersion.find({
    skillId: skill._id,
    organizationId: skill.organizationId,
    ...versionVisibility(auth, skill),
    ...(below !== undefined ? { version: mongoose.trusted({ $lt: below }) } : {}),
  })
    .sort({ version: -1 })
    .limit(page.limit + 1)
    .lean<SkillVersionDoc[]>();
  const more = docs.length > page.limit;
  const items = more ? docs.slice(0, page.limit) : docs;
  return { items, nextCursor: more ? String(items[items.length - 1].version) : null };
}

/**
 * @param auth the caller.
 * @param id skill id.
 * @param version a version number.
 * @returns the snapshot of that version.
 * @throws NotFoundError `Skill version not found` for a version the skill never had.
 */
export async function findSkillVersion(auth: AuthContext, id: string, version: number): Promise<SkillVersionDoc> {
  const skill = await findVisibleSkill(auth, id);
  const snapshot = await SkillVersion.findOne({
    _id: skillVersionId(skill._id, version),
    organizationId: skill.organizationId,
    ...versionVisibility(auth, skill),
  }).lean<SkillVersionDoc>();
  if (!snapshot) throw new NotFoundError('Skill version not found');
  return snapshot;
}

/**
 * Checks the skill ids an agent is given (create and update, both surfaces), before anything is stored.
 * @param auth the caller.
 * @param ids the ids as sent (schema-checked: at most MAX_AGENT_SKILLS, no repeats).
 * @param field the field's name in the request (`skillIds`, `skill_ids`).
 * @throws ValidationError naming the field for an id that is not a live skill of the caller's organization it can
 *   see (unknown, deleted, another organization's, another member's private one).
 */
export async function checkSkillIds(auth: AuthContext, ids: readonly string[], field: string): Promise<void> {
  if (ids.length === 0) return;
  const found = await Skill.find({ $or: ids.map((_id) => ({ _id })) }).lean<SkillDoc[]>();
  const usable = new Set(
    found.filter((s) => s.organizationId === auth.organizationId && canSee(auth, s)).map((s) => s._id)
  );
  const bad = ids.find((id) => !usable.has(id));
  if (bad !== undefined) throw new ValidationError(`Invalid ${field}: skill ${bad} not found`);
}

/**
 * The skills an execution gives the model: the agent's live skills of its organization, in the agent's
 * `skillIds` order (one left out: deleted or not the organization's meanwhile). Read at each execution, through
 * the process's cache that every skill write clears.
 * @param agent the agent.
 * @returns its skills.
 */
export async function agentSkills(agent: Pick<AgentDoc, 'organizationId' | 'skillIds'>): Promise<SkillDoc[]> {
  const ids = agent.skillIds ?? [];
  if (ids.length === 0) return [];
  const found = await skillCache.get(`${agent.organizationId}|${ids.join(',')}`, async () => ({
    value: await Skill.find({ $or: ids.map((_id) => ({ _id })) }).lean<SkillDoc[]>(),
    group: agent.organizationId,
  }));
  const live = new Map(
    (found ?? []).filter((s) => s.organizationId === agent.organizationId && !s.deletedAt).map((s) => [s._id, s])
  );
  return ids.flatMap((id) => live.get(id) ?? []);
}

/**
 * An execution's agent and its skills, read at each execution (the skills right after the agent).
 * @param agentId the execution's agent.
 * @returns the agent (archived or not, as findAgentById) and its skills, or null without an agent.
 */
export async function agentWithSkills(agentId: string): Promise<{ agent: AgentDoc; skills: SkillDoc[] } | null> {
  const agent = await findAgentById(agentId);
  return agent && { agent, skills: await agentSkills(agent) };
}
