/**
 * A space (the current surface calls it a workspace: one record, two surfaces). Environment variables are stored
 * encrypted (AES-256-GCM) and never returned in clear.
 */
import mongoose, { type InferSchemaType } from 'mongoose';
import { newId } from '../lib/ids';

export const SPACE_VISIBILITIES = ['private', 'organization', 'public'] as const;
export const SPACE_INIT_TYPES = ['empty', 'git', 'readme', 'starterKit'] as const;
export type SpaceInitType = (typeof SPACE_INIT_TYPES)[number];

const envVar = new mongoose.Schema(
  {
    name: { type: String, required: true },
    /** `v1.<iv>.<tag>.<ciphertext>` from lib/crypto encryptSecret. */
    sealed: { type: String, required: true },
    updatedAt: { type: Date, required: true },
  },
  { _id: false }
);

const schema = new mongoose.Schema(
  {
    _id: { type: String, default: () => newId('spc') },
    organizationId: { type: String, required: true },
    ownerId: { type: String, required: true },
    name: { type: String, required: true },
    description: { type: String, default: '' },
    visibility: { type: String, enum: SPACE_VISIBILITIES, default: 'organization' },
    assignedAgents: { type: [String], default: [] },
    skillIds: { type: [String], default: [] },
    pluginIds: { type: [String], default: [] },
    fileCount: { type: Number, default: 0 },
    /** The organization's default space (where agents' first chats live). */
    isDefault: { type: Boolean, default: false },
    initializedAs: { type: String, enum: [...SPACE_INIT_TYPES, null], default: null },
    initializedAt: { type: Date, default: null },
    environment: { type: [envVar], default: [] },
    deletedAt: { type: Date, default: null },
  },
  { timestamps: true, versionKey: false }
);
schema.index({ organizationId: 1, deletedAt: 1, createdAt: -1, _id: -1 });
schema.index({ organizationId: 1, isDefault: 1 });

export type SpaceDoc = InferSchemaType<typeof schema> & { _id: string; createdAt: Date; updatedAt: Date };
export const Space = mongoose.model('Space', schema, 'spaces');
