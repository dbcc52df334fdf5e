/** Skill and skill version → public JSON (SPEC "Skill"). */
import type { SkillDoc, SkillVersionDoc } from '../models';

/** The fields a client sets, as a skill or one of its versions holds them. */
function content(skill: SkillDoc | SkillVersionDoc): Record<string, unknown> {
  return {
    name: skill.name,
    displayName: skill.displayName,
    description: skill.description ?? '',
    prompt: skill.prompt,
    category: skill.category,
    builtInTools: skill.builtInTools ?? [],
    requiredMCPs: skill.requiredMCPs ?? [],
    visibility: skill.visibility,
  };
}

/**
 * @param skill the stored skill (its latest version).
 * @returns the public record.
 */
export function presentSkill(skill: SkillDoc): Record<string, unknown> {
  return {
    id: skill._id,
    ...content(skill),
    version: skill.version,
    organizationId: skill.organizationId,
    ownerId: skill.ownerId,
    createdAt: skill.createdAt.toISOString(),
    updatedAt: skill.updatedAt.toISOString(),
  };
}

/**
 * @param version a stored snapshot.
 * @returns the skill as that version made it, with who made it and when.
 */
export function presentSkillVersion(version: SkillVersionDoc): Record<string, unknown> {
  return {
    skillId: version.skillId,
    version: version.version,
    ...content(version),
    organizationId: version.organizationId,
    ownerId: version.ownerId,
    createdBy: version.createdBy,
    createdAt: version.createdAt.toISOString(),
  };
}
