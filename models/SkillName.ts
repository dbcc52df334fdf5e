/**
 * A skill name taken in an organization (`_id` = `<organizationId>:<name>`): the name's reservation, made by insert
 * before the skill takes it, since the insert of a unique `_id` is the one exclusive write on both database servers
 * (a find-then-write is not) [docs/decisions.md "Skills"]. Released when the skill is renamed or deleted; one that
 * names a deleted or missing skill (a crash between the writes) is taken over by the next skill of that name.
 */
import mongoose, { type InferSchemaType } from 'mongoose';

const schema = new mongoose.Schema(
  {
    _id: { type: String, required: true },
    organizationId: { type: String, required: true },
    skillId: { type: String, required: true },
  },
  { timestamps: { createdAt: true, updatedAt: false }, versionKey: false }
);

export type SkillNameDoc = InferSchemaType<typeof schema> & { _id: string; createdAt: Date };
export const SkillName = mongoose.model('SkillName', schema, 'skill_names');

/** @returns the `_id` of a name's reservation in an organization. */
export const skillNameId = (organizationId: string, name: string): string => `${organizationId}:${name}`;
