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
    tags: agent.tags,
    spaceId: agent.spaceId,
    chatId: agent.chatId,
    archived: agent.archived,
    createdAt: agent.createdAt.toISOString(),
    updatedAt: agent.updatedAt.toISOString(),
  };
}
