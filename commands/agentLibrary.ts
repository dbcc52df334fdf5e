/**
 * The built-in library of agents shipped with the service (docs/decisions.md "Agents library"). Each library
 * agent has, in every organization, a deterministic agent id (`agt_lib_<slug>_<organizationId>`) and an install
 * state: `uninstalled` until someone installs it. Installing creates (or un-archives) the organization's copy,
 * an ordinary Agent record with `libraryId` set, so it is listed, read and executed like any other agent on
 * both surfaces; uninstalling archives that copy (it can be installed again); `restore` installs it with the
 * library's own fields again, discarding the organization's edits.
 */
import type { AuthContext } from './tokens';
import { ConflictError, ForbiddenError, NotFoundError } from '../lib/errors';
import { Agent, type AgentDoc, type AgentInstallState } from '../models';
import { agentsChanged, createAgent, findOrganizationAgent } from './agents';
import { isDuplicateKey } from '../lib/mongo';

/** A library agent as shipped. */
export interface LibraryAgent {
  /** Stable slug, unique in the library. */
  slug: string;
  name: string;
  role: string;
  description: string;
  systemPrompt: string;
}

/** The library (small on purpose: a starting point for organizations, not a catalogue). */
export const AGENT_LIBRARY: readonly LibraryAgent[] = [
  {
    slug: 'general',
    name: 'General Assistant',
    role: 'Assistant',
    description: 'A general-purpose agent: answers questions and carries out tasks of any kind.',
    systemPrompt:
      'You are a capable general-purpose assistant. Work toward the goal you are given step by step, say what you ' +
      'did and what is left, and ask for the input you need instead of guessing.',
  },
  {
    slug: 'research-assistant',
    name: 'Research Assistant',
    role: 'Researcher',
    description: 'Finds, compares and summarizes sources, and says how sure it is.',
    systemPrompt:
      'You are a careful research assistant. Answer with a short summary first, then the supporting points. ' +
      'Say which statements are uncertain and what would settle them. Never invent sources.',
  },
  {
    slug: 'writing-editor',
    name: 'Writing Editor',
    role: 'Editor',
    description: 'Edits drafts for clarity and tone, keeping the author’s voice.',
    systemPrompt:
      'You are an editor. Improve clarity, structure and tone of the text you are given while keeping the ' +
      "author's voice. Return the edited text, then a short list of the main changes.",
  },
  {
    slug: 'code-reviewer',
    name: 'Code Reviewer',
    role: 'Reviewer',
    description: 'Reviews code changes for bugs, risks and readability.',
    systemPrompt:
      'You are a senior code reviewer. Point out bugs, security risks and unclear code first, then smaller ' +
      'suggestions. Quote the lines you mean and propose concrete fixes.',
  },
];

/** What PATCH /api/agents/{id}/install-state may ask for. */
export type InstallStateChange = AgentInstallState | 'restore';

/**
 * @param organizationId the organization.
 * @param slug library slug.
 * @returns the id of the library agent in that organization.
 */
export function libraryAgentId(organizationId: string, slug: string): string {
  return `agt_lib_${slug}_${organizationId}`;
}

/** A library agent with its state in the caller's organization. */
export interface LibraryEntry {
  agent: LibraryAgent;
  agentId: string;
  installState: AgentInstallState;
}

const stateOf = (doc: AgentDoc | null): AgentInstallState =>
  doc && !doc.archived && doc.installState === 'installed' ? 'installed' : 'uninstalled';

/**
 * @param auth the caller.
 * @returns every library agent with its install state in the caller's organization (one read by id each).
 */
export async function listLibrary(auth: AuthContext): Promise<LibraryEntry[]> {
  return Promise.all(
    AGENT_LIBRARY.map(async (agent) => {
      const agentId = libraryAgentId(auth.organizationId, agent.slug);
      const doc = await Agent.findOne({ _id: agentId, organizationId: auth.organizationId }).lean<AgentDoc>();
      return { agent, agentId, installState: stateOf(doc) };
    })
  );
}

/**
 * @param auth the caller.
 * @param id an agent id.
 * @returns the library agent this id names in the caller's organization, if any.
 */
export function libraryAgentFor(auth: AuthContext, id: string): LibraryAgent | undefined {
  return AGENT_LIBRARY.find((a) => libraryAgentId(auth.organizationId, a.slug) === id);
}

function libraryFields(agent: LibraryAgent): Record<string, unknown> {
  // Skills and built-in tools the organization gave it are its edits too (library agents ship with none).
  return {
    name: agent.name,
    role: agent.role,
    systemPrompt: agent.systemPrompt,
    model: null,
    skillIds: [],
    advanced_tools: [],
  };
}

/**
 * Installs, uninstalls or restores a library agent in the caller's organization (owners and admins only).
 * @param auth the caller.
 * @param id the library agent's id in the organization.
 * @param change `installed`, `uninstalled` or `restore`.
 * @returns the library entry after the change.
 * @throws NotFoundError for an id that names no agent of the organization; ConflictError for an agent that is
 *   not a library agent; ForbiddenError for members.
 */
export async function setInstallState(
  auth: AuthContext,
  id: string,
  change: InstallStateChange
): Promise<LibraryEntry> {
  const agent = libraryAgentFor(auth, id);
  if (!agent) {
    await findOrganizationAgent(auth, id); // 404 when there is no such agent
    throw new ConflictError('Only library agents have an install state');
  }
  if (auth.role === 'member') throw new ForbiddenError('Only organization owners and admins can install agents');
  const filter = { _id: id, organizationId: auth.organizationId };
  if (change === 'uninstalled') {
    await Agent.updateOne(filter, {
      $set: { archived: true, archivedAt: new Date(), installState: 'uninstalled' },
    });
    await agentsChanged(auth.organizationId);
    return { agent, agentId: id, installState: 'uninstalled' };
  }
  const installed = {
    archived: false,
    archivedAt: null,
    installState: 'installed',
    ...(change === 'restore' ? libraryFields(agent) : {}),
  };
  const res = await Agent.updateOne(filter, { $set: installed });
  if (res.matchedCount === 0 && !(await createLibraryCopy(auth, agent))) {
    // Installed concurrently by another request: the copy exists now; apply this change to it.
    await Agent.updateOne(filter, { $set: installed });
  }
  await agentsChanged(auth.organizationId);
  return { agent, agentId: id, installState: 'installed' };
}

/**
 * Creates the organization's copy of a library agent, as the library ships it.
 * @param auth the caller (the copy's creator).
 * @param agent the library agent.
 * @returns true when this call created it; false when it existed already (another request's).
 */
async function createLibraryCopy(auth: AuthContext, agent: LibraryAgent): Promise<boolean> {
  try {
    await createAgent(
      auth,
      { name: agent.name, role: agent.role, systemPrompt: agent.systemPrompt },
      { id: libraryAgentId(auth.organizationId, agent.slug), libraryId: agent.slug }
    );
    return true;
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    return false;
  }
}

/**
 * A library agent named by its slug where a kind of agent is asked for (a mission's `agentType`): installed in the
 * caller's organization on first use [docs/decisions.md "Missions: agentType names a kind of agent"].
 * @param auth the caller.
 * @param agent the library agent.
 * @returns its id in the organization; null when an owner or admin uninstalled it (using it does not override that).
 */
export async function useLibraryAgent(auth: AuthContext, agent: LibraryAgent): Promise<string | null> {
  const id = libraryAgentId(auth.organizationId, agent.slug);
  const doc = await Agent.findOne({ _id: id, organizationId: auth.organizationId }).lean<AgentDoc>();
  if (doc) return stateOf(doc) === 'installed' ? id : null;
  if (await createLibraryCopy(auth, agent)) await agentsChanged(auth.organizationId);
  return id;
}

/**
 * Deletes (archives) an agent through the current surface: only the caller's own private agents.
 * @param auth the caller.
 * @param id agent id.
 * @throws ConflictError for a library agent (it is uninstalled instead); ForbiddenError for any other agent that is
 *   not the caller's own private one; NotFoundError when the organization has no such agent.
 */
export async function deletePrivateAgent(auth: AuthContext, id: string): Promise<void> {
  const agent = await findOrganizationAgent(auth, id);
  if (agent.libraryId)
    throw new ConflictError(
      'Library agents cannot be deleted: uninstall it with PATCH /api/agents/{id}/install-state {"state":"uninstalled"}'
    );
  if (agent.visibility !== 'private' || agent.userId !== auth.userId)
    throw new ForbiddenError('Only your own private agents can be deleted');
  const res = await Agent.updateOne(
    { _id: id, organizationId: auth.organizationId, archived: false },
    { $set: { archived: true, archivedAt: new Date() } }
  );
  if (res.matchedCount === 0) throw new NotFoundError('Agent not found');
  await agentsChanged(auth.organizationId);
}
