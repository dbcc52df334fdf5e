/** A user's membership of an organization, with a role. */
import mongoose, { type InferSchemaType } from 'mongoose';
import { newId } from '../lib/ids';

export const MEMBER_ROLES = ['owner', 'admin', 'member'] as const;
export type MemberRole = (typeof MEMBER_ROLES)[number];

const schema = new mongoose.Schema(
  {
    _id: { type: String, default: () => newId('mbr') },
    organizationId: { type: String, required: true },
    userId: { type: String, required: true },
    role: { type: String, enum: MEMBER_ROLES, default: 'member' },
    /** The member's active workspace (POST /api/workspaces/{id}/select): used when a chat names none. */
    activeWorkspaceId: { type: String, default: null },
    /** Requests per rate-limit window on the current surface for this identity; null = the default (admin CLI). */
    rateLimit: { type: Number, default: null },
  },
  { timestamps: true, versionKey: false }
);
schema.index({ organizationId: 1, userId: 1 }, { unique: true });
schema.index({ userId: 1 });

export type MembershipDoc = InferSchemaType<typeof schema> & { _id: string };
export const Membership = mongoose.model('Membership', schema, 'memberships');
