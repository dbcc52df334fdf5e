/**
 * Agents: creation (with the space and chat of its chatUrl), visibility-checked reads, permission-checked updates
 * and soft deletion. Visibility (docs/decisions.md "Agents"):
 *   private       → only its creator
 *   organization  → every member of the owner organization
 *   public/unlisted → also readable and executable by any authenticated caller who knows the id; listed only
 *                   inside the owner organization; modified only inside it
 * Inside the organization, the creator and owners/admins may modify; other members get 403.
 */
import mongoose from 'mongoose';
import type { AuthContext } from './tokens';
import { invalidate, SharedCache } from '../lib/sharedCache';
import { ForbiddenError, NotFoundError, ValidationError } from '../lib/errors';
import { newId } from '../lib/ids';
import { insertDocument, isDuplicateKey } from '../lib/mongo';
import { paginate } from '../lib/pagination';
import { Agent, Chat, Membership, SpaceAgent, spaceAgentId, type AgentDoc, type AgentVisibility } from '../models';
import { defaultSpaceId } from './defaultSpace';

const NOT_FOUND = 'Agent not found';

export interface AgentInput {
  name: string;
  systemPrompt: string;
  role?: string;
  visibility?: AgentVisibility;
  model?: string;
  initialGreeting?: string;
  image?: string;
  color?: string;
  ownerId?: string;
  skillIds?: string[];
  advanced_tools?: string[];
  /** MCP server instances (checked by commands/mcpServers.ts checkMcpServerIds). */
  mcpServerIds?: string[];
  /** Agents it may delegate to (checked by checkAgentIds; commands/subAgents.ts). */
  subAgentIds?: string[];
  tags?: string[];
  /** Its executions running at once, at most (docs/fairness.md "Concurrency keys"); null: no limit. */
  maxConcurrentExecutions?: number | null;
}

/**
 * Agents by id and pages of agent lists: kept per process for CACHE_TTL_MS, cleared by every agent write of
 * their organization (lib/sharedCache.ts).
 */
const AGENTS = 'agents';
const AGENT_LISTS = 'agent-lists';
const agentCache = new SharedCache<AgentDoc>(AGENTS);
/** Pages hold up to 1,000 agents each: fewer of them are kept. */
const listCache = new SharedCache<{ items: AgentDoc[]; total: number; nextCursor: string | null }>(AGENT_LISTS, 500);

/**
 * Tells every process that an organization's agents changed (call after the write): its cached agents and list
 * pages go.
 * @param organizationId the organization.
 */
export function agentsChanged(organizationId: string): Promise<void> {
  return invalidate([AGENTS, AGENT_LISTS], organizationId);
}

/** Filter of the agents a caller may list: its organization's, minus other users' private ones. */
export function listableAgentsFilter(auth: AuthContext): Record<string, unknown> {
  return {
    organizationId: auth.organizationId,
    archived: false,
    $or: [{ visibility: mongoose.trusted({ $ne: 'private' }) }, { userId: auth.userId }],
  };
}

/**
 * @param auth the caller (or an execution's user, for its sub-agents).
 * @param agent an agent.
 * @returns whether the caller may see the agent (the visibility rules above).
 */
export function canSee(auth: Pick<AuthContext, 'organizationId' | 'userId'>, agent: AgentDoc): boolean {
  if (agent.organizationId === auth.organizationId)
    return agent.visibility !== 'private' || agent.userId === auth.userId;
  return agent.visibility === 'public' || agent.visibility === 'unlisted';
}

/**
 * @param auth the caller.
 * @param id agent id.
 * @returns the agent when the caller may see it.
 * @throws NotFoundError `Agent not found` otherwise (also for archived agents).
 */
export async function findVisibleAgent(auth: AuthContext, id: string): Promise<AgentDoc> {
  // By id alone (an index lookup on every server); visibility, tenancy and archiving are checked below.
  const agent = await findAgentById(id);
  if (!agent || agent.archived || !canSee(auth, agent)) throw new NotFoundError(NOT_FOUND);
  return agent;
}

/**
 * An agent by id, archived or not, with no access check (the worker's read of an execution's agent). Kept per
 * process, grouped by the agent's own organization, whose writes clear it (agentsChanged).
 * @param id agent id.
 * @returns a copy of the agent, or null.
 */
export async function findAgentById(id: string): Promise<AgentDoc | null> {
  const agent = await agentCache.get(id, async () => {
    const found = await Agent.findById(id).lean<AgentDoc>();
    return found ? { value: found, group: found.organizationId } : undefined;
  });
  return agent ? { ...agent } : null;
}

/**
 * The current surface addresses only the caller's organization's agents (another organization's agent is 404
 * there, whatever its visibility).
 * @param auth the caller.
 * @param id agent id.
 * @returns the agent when it belongs to the caller's organization and the caller may see it.
 * @throws NotFoundError `Agent not found` otherwise.
 */
export async function findOrganizationAgent(auth: AuthContext, id: string): Promise<AgentDoc> {
  const agent = await findVisibleAgent(auth, id);
  if (agent.organizationId !== auth.organizationId) throw new NotFoundError(NOT_FOUND);
  return agent;
}

/**
 * @param auth the caller.
 * @param id agent id.
 * @returns the agent when the caller may modify it.
 * @throws NotFoundError when invisible; ForbiddenError when visible but not the caller's to change.
 */
export async function findModifiableAgent(auth: AuthContext, id: string): Promise<AgentDoc> {
  const agent = await findVisibleAgent(auth, id);
  const sameOrg = agent.organizationId === auth.organizationId;
  if (!sameOrg || (agent.userId !== auth.userId && auth.role === 'member')) throw new ForbiddenError();
  return agent;
}

/**
 * Checks agent ids a record is given (a space's `assignedAgents`), before anything is stored; the same rule as
 * commands/skills.ts checkSkillIds [docs/decisions.md "Security (issue 30)", references].
 * @param auth the caller.
 * @param ids the ids as sent.
 * @param field the field's name in the request.
 * @throws ValidationError naming the field for an id that is not a live agent of the caller's organization it can
 *   see (unknown, archived, another organization's, another member's private one).
 */
export async function checkAgentIds(auth: AuthContext, ids: readonly string[], field: string): Promise<void> {
  if (ids.length === 0) return;
  // By `_id`, each (docs/query-shapes.md); the organization is checked on the rows.
  const found = await Agent.find({ $or: [...new Set(ids)].map((_id) => ({ _id })) }).lean<AgentDoc[]>();
  const usable = new Set(
    found.filter((a) => a.organizationId === auth.organizationId && !a.archived && canSee(auth, a)).map((a) => a._id)
  );
  const bad = ids.find((id) => !usable.has(id));
  if (bad !== undefined) throw new ValidationError(`Invalid ${field}: agent ${bad} not found`);
}

/**
 * Checks a user id a record is given (an agent's `ownerId`): it must be a member of the caller's organization.
 * @param auth the caller.
 * @param id the user id as sent (undefined: nothing to check).
 * @param field the field's name in the request.
 * @throws ValidationError naming the field otherwise.
 */
export async function checkMemberId(auth: AuthContext, id: string | undefined, field: string): Promise<void> {
  if (id === undefined) return;
  if (!(await Membership.exists({ organizationId: auth.organizationId, userId: id })))
    throw new ValidationError(`Invalid ${field}: user ${id} not found`);
}

/**
 * Creates an agent with a first chat in the organization's default space.
 * @param auth the caller.
 * @param input validated fields.
 * @param library for an organization's copy of a library agent (commands/agentLibrary.ts): its id and slug.
 * @returns the agent.
 */
export async function createAgent(
  auth: AuthContext,
  input: AgentInput,
  library?: { id: string; libraryId: string }
): Promise<AgentDoc> {
  const organizationId = auth.organizationId;
  const spaceId = await defaultSpaceId(auth);
  const agentId = library?.id ?? newId('agt');
  const chatId = newId('chat');
  // The chat, the agent and the agent's space entry name each other by id: the three are written at once (one round
  // trip of latency); when one fails, what the others wrote is undone.
  const [chat, agent, entry] = await Promise.allSettled([
    insertDocument(Chat, { _id: chatId, organizationId, spaceId, agentId, ownerId: auth.userId, title: input.name }),
    insertDocument(Agent, {
      _id: agentId,
      organizationId,
      userId: auth.userId,
      ownerId: input.ownerId ?? auth.userId,
      name: input.name,
      role: input.role ?? 'Assistant',
      systemPrompt: input.systemPrompt,
      visibility: input.visibility ?? 'organization',
      model: input.model ?? null,
      initialGreeting: input.initialGreeting ?? null,
      image: input.image ?? null,
      color: input.color ?? null,
      skillIds: input.skillIds ?? [],
      advanced_tools: input.advanced_tools ?? [],
      mcpServerIds: input.mcpServerIds ?? [],
      subAgentIds: input.subAgentIds ?? [],
      tags: input.tags ?? [],
      maxConcurrentExecutions: input.maxConcurrentExecutions ?? null,
      spaceId,
      chatId,
      ...(library ? { libraryId: library.libraryId, installState: 'installed' } : {}),
    }),
    insertDocument(SpaceAgent, { _id: spaceAgentId(spaceId, agentId), organizationId, spaceId, agentId }),
  ]);
  // The space entry is the same for every request that creates this agent (its id names the space and the agent:
  // concurrent installs of a library agent write the same one), so one refused as a duplicate is in place.
  const entryInPlace = entry.status === 'fulfilled' || isDuplicateKey(entry.reason);
  // An agent refused as a duplicate is another request's: it stays, and so does the entry it needs.
  const othersAgent = agent.status === 'rejected' && isDuplicateKey(agent.reason);
  const failed = [chat, agent, ...(entryInPlace ? [] : [entry])].find(
    (r): r is PromiseRejectedResult => r.status === 'rejected'
  );
  if (failed) {
    // Undo what this call wrote; a failed undo leaves the rest as a failure between the writes always did.
    await Promise.all([
      chat.status === 'fulfilled' ? Chat.deleteOne({ _id: chatId, organizationId }) : undefined,
      agent.status === 'fulfilled' ? Agent.deleteOne({ _id: agentId, organizationId }) : undefined,
      entry.status === 'fulfilled' && !othersAgent
        ? SpaceAgent.deleteOne({ _id: spaceAgentId(spaceId, agentId), organizationId })
        : undefined,
    ]).catch(() => undefined);
    await agentsChanged(organizationId);
    throw failed.reason;
  }
  // A new agent is in no process's agent cache (a miss is not kept): only the organization's list pages go, and the
  // cached agents every execution reads stay.
  await invalidate(AGENT_LISTS, organizationId);
  return (agent as PromiseFulfilledResult<Record<string, unknown>>).value as AgentDoc;
}

/**
 * @param auth the caller.
 * @param page limit and cursor.
 * @returns one page, the total count and the next cursor.
 */
export async function listAgents(
  auth: AuthContext,
  page: { limit: number; cursor?: string }
): Promise<{ items: AgentDoc[]; total: number; nextCursor: string | null }> {
  const key = `${auth.organizationId}|${auth.userId}|${page.limit}|${page.cursor ?? ''}`;
  const listed = await listCache.get(key, async () => {
    const filter = listableAgentsFilter(auth);
    const [{ items, nextCursor }, total] = await Promise.all([
      paginate<AgentDoc>(Agent, filter, page),
      Agent.countDocuments(filter),
    ]);
    return { value: { items, total, nextCursor }, group: auth.organizationId };
  });
  return listed!;
}

/**
 * Updates the updatable fields; omitted ones stay unchanged.
 * @param auth the caller.
 * @param id agent id.
 * @param changes name, role, systemPrompt, visibility, skillIds (checked by commands/skills.ts checkSkillIds),
 *   advanced_tools (and model on the current surface).
 */
export async function updateAgent(
  auth: AuthContext,
  id: string,
  changes: Partial<
    Pick<
      AgentInput,
      | 'name'
      | 'role'
      | 'systemPrompt'
      | 'visibility'
      | 'model'
      | 'skillIds'
      | 'advanced_tools'
      | 'mcpServerIds'
      | 'subAgentIds'
      | 'maxConcurrentExecutions'
    >
  >
): Promise<void> {
  const agent = await findModifiableAgent(auth, id);
  if (Object.keys(changes).length === 0) return;
  const res = await Agent.updateOne(
    { _id: agent._id, organizationId: auth.organizationId, archived: false },
    { $set: changes }
  );
  if (res.matchedCount === 0) throw new NotFoundError(NOT_FOUND);
  await agentsChanged(auth.organizationId);
}

/**
 * Archives an agent (soft delete; no operation restores it). Its chats and executions are kept.
 * @param auth the caller.
 * @param id agent id.
 */
export async function archiveAgent(auth: AuthContext, id: string): Promise<void> {
  const agent = await findModifiableAgent(auth, id);
  const res = await Agent.updateOne(
    { _id: agent._id, organizationId: auth.organizationId, archived: false },
    { $set: { archived: true, archivedAt: new Date() } }
  );
  if (res.matchedCount === 0) throw new NotFoundError(NOT_FOUND);
  await agentsChanged(auth.organizationId);
}
