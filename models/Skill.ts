/**
 * A skill (SPEC "Skill"): a named piece of Markdown instructions, with the built-in tools and MCP servers it needs,
 * that agents of the organization attach through `skillIds`; at execution its prompt follows the agent's system
 * prompt [docs/decisions.md "Skills"]. This record is the skill's latest version; every update also writes an
 * immutable snapshot (models/SkillVersion.ts), and the name is held unique in the organization by a reservation
 * (models/SkillName.ts). Deleting sets `deletedAt`: every route then answers 404 and its name is free again.
 */
import mongoose, { type InferSchemaType } from 'mongoose';
import { newId } from '../lib/ids';

/** Skill categories (SPEC "Skill"). */
export const SKILL_CATEGORIES = [
  'research',
  'writing',
  'data',
  'code',
  'marketing',
  'productivity',
  'file-handling',
  'other',
] as const;
export type SkillCategory = (typeof SKILL_CATEGORIES)[number];
/** Skill visibility values (SPEC "Skill"); their meaning is the agents' (docs/decisions.md "Agents"). */
export const SKILL_VISIBILITIES = ['private', 'organization', 'public'] as const;
export type SkillVisibility = (typeof SKILL_VISIBILITIES)[number];

/** The fields a version snapshots (everything a client sets). */
export const skillContentFields = {
  name: { type: String, required: true },
  displayName: { type: String, required: true },
  description: { type: String, default: '' },
  /** Markdown. */
  prompt: { type: String, required: true },
  category: { type: String, enum: SKILL_CATEGORIES, default: 'other' },
  /** Names of built-in tools (commands/builtInTools.ts). */
  builtInTools: { type: [String], default: [] },
  /** Names of the organization's MCP server instances (kebab-case; resolved at execution). */
  requiredMCPs: { type: [String], default: [] },
  visibility: { type: String, enum: SKILL_VISIBILITIES, default: 'organization' },
} as const;

const schema = new mongoose.Schema(
  {
    _id: { type: String, default: () => newId('skl') },
    organizationId: { type: String, required: true },
    /** Creator; with the organization's owners and admins, the one who may change or delete it. */
    ownerId: { type: String, required: true },
    ...skillContentFields,
    /** 1 at creation, +1 for every update that changes something. */
    version: { type: Number, required: true, default: 1 },
    deletedAt: { type: Date, default: null },
  },
  { timestamps: true, versionKey: false }
);
// GET /api/v1/skills (docs/query-shapes.md).
schema.index({ organizationId: 1, deletedAt: 1, createdAt: -1, _id: -1 });

export type SkillDoc = InferSchemaType<typeof schema> & { _id: string; createdAt: Date; updatedAt: Date };
export const Skill = mongoose.model('Skill', schema, 'skills');
