/**
 * An immutable snapshot of a skill as one of its versions made it (`_id` = `<skillId>:<version>`, models/Skill.ts).
 * Written before the skill's record moves to that version: the insert of that `_id` is the one exclusive write on
 * both database servers, so of two concurrent updates exactly one makes each version [docs/decisions.md "Skills"].
 */
import mongoose, { type InferSchemaType } from 'mongoose';
import { skillContentFields } from './Skill';

const schema = new mongoose.Schema(
  {
    _id: { type: String, required: true },
    skillId: { type: String, required: true },
    organizationId: { type: String, required: true },
    ownerId: { type: String, required: true },
    version: { type: Number, required: true },
    ...skillContentFields,
    /** Who made this version (the creator for version 1). */
    createdBy: { type: String, required: true },
  },
  { timestamps: { createdAt: true, updatedAt: false }, versionKey: false }
);
// GET /api/v1/skills/{id}/versions, newest first (docs/query-shapes.md).
schema.index({ skillId: 1, version: -1 });

export type SkillVersionDoc = InferSchemaType<typeof schema> & { _id: string; createdAt: Date };
export const SkillVersion = mongoose.model('SkillVersion', schema, 'skill_versions');

/** @returns the `_id` of a skill's version. */
export const skillVersionId = (skillId: string, version: number): string => `${skillId}:${version}`;
