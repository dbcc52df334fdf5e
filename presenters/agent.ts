/** Agent → public JSON (SPEC "Agent" plus the client-library record fields). */
import type { AgentDoc } from '../models';

/**
 * @param agent the stored agent.
 * @returns the public record; optional fields are omitted when unset.
 */
export function presentAgent(agent: AgentDoc): Record<string, unknown> {
  return {
    id: agent._id,
    name: agent.name,
    role: agent.role,
    systemPrompt: agent.systemPrompt,
    visibility: agent.visibility,
    organizationId: agent.organizationId,
    userId: agent.userId,
    ownerId: agent.ownerId,
    ...(agent.model ? { model: agent.model } : {}),
    ...(agent.initialGreeting ? { initialGreeting: agent.initialGreeting } : {}),
    ...(agent.image ? { image: agent.image } : {}),
    ...(agent.color ? { color: agent.color } : {}),
    skillIds: agent.skillIds,
    advanced_tools: agent.advanced_tools,
    mcpServerIds: agent.mcpServerIds ?? [],
    subAgentIds: agent.subAgentIds ?? [],
    maxConcurrentExecutions: agent.maxConcurrentExecutions ?? null,
    tags: agent.tags,
    spaceId: agent.spaceId,
    chatId: agent.chatId,
    archived: agent.archived,
    createdAt: agent.createdAt.toISOString(),
    updatedAt: agent.updatedAt.toISOString(),
  };
}

/**
 * The current surface's agent record (snake_case, docs/decisions.md "Current surface: fields").
 * @param agent the stored agent.
 * @returns the public record.
 */
export function presentCurrentAgent(agent: AgentDoc): Record<string, unknown> {
  return {
    id: agent._id,
    name: agent.name,
    role: agent.role,
    system_prompt: agent.systemPrompt,
    model: agent.model ?? null,
    visibility: agent.visibility,
    source: agent.libraryId ? 'library' : 'organization',
    library_id: agent.libraryId ?? null,
    organization_id: agent.organizationId,
    created_by: agent.userId,
    owner_id: agent.ownerId,
    workspace_id: agent.spaceId,
    chat_id: agent.chatId,
    skill_ids: agent.skillIds ?? [],
    advanced_tools: agent.advanced_tools ?? [],
    mcp_server_ids: agent.mcpServerIds ?? [],
    sub_agent_ids: agent.subAgentIds ?? [],
    max_concurrent_executions: agent.maxConcurrentExecutions ?? null,
    created_at: agent.createdAt.toISOString(),
    updated_at: agent.updatedAt.toISOString(),
  };
}

/** A library agent with its id and install state in an organization (commands/agentLibrary.ts LibraryEntry). */
interface LibraryEntry {
  agent: { slug: string; name: string; role: string; description: string };
  agentId: string;
  installState: string;
}

/**
 * @param entry a library agent with its state in the caller's organization.
 * @returns the public record.
 */
export function presentLibraryEntry(entry: LibraryEntry): Record<string, unknown> {
  return {
    id: entry.agentId,
    library_id: entry.agent.slug,
    name: entry.agent.name,
    role: entry.agent.role,
    description: entry.agent.description,
    install_state: entry.installState,
  };
}
