/** Space → public JSON (SPEC "Space"); environment values never leave the server. */
import type { SpaceDoc } from '../models';

/**
 * @param space the stored space with its chat count (commands/spaces.ts withDerivedFields).
 * @returns the public record.
 */
export function presentSpace(space: SpaceDoc & { chatCount: number }): Record<string, unknown> {
  return {
    id: space._id,
    organizationId: space.organizationId,
    name: space.name,
    description: space.description ?? '',
    ownerId: space.ownerId,
    visibility: space.visibility,
    assignedAgents: space.assignedAgents,
    skillIds: space.skillIds,
    pluginIds: space.pluginIds,
    chatCount: space.chatCount,
    fileCount: space.fileCount,
    isDefault: space.isDefault,
    initializedAs: space.initializedAs ?? null,
    environmentVariables: space.environment.map((v) => v.name),
    createdAt: space.createdAt.toISOString(),
    updatedAt: space.updatedAt.toISOString(),
  };
}

/**
 * The current surface's workspace record (the same Space, snake_case fields).
 * @param space the stored space.
 * @returns the public record.
 */
export function presentWorkspace(space: SpaceDoc): Record<string, unknown> {
  return {
    id: space._id,
    organization_id: space.organizationId,
    name: space.name,
    description: space.description ?? '',
    owner_id: space.ownerId,
    visibility: space.visibility,
    is_default: space.isDefault,
    created_at: space.createdAt.toISOString(),
    updated_at: space.updatedAt.toISOString(),
  };
}
