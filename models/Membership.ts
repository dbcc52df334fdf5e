/** A user's membership of an organization, with a role. */
import mongoose, { type InferSchemaType } from 'mongoose';
import { newId } from '../lib/ids';

export const MEMBER_ROLES = ['owner', 'admin', 'member'] as const;

const schema = new mongoose.Schema(
  {
    _id: { type: String, default: () => newId('mbr') },
    organizationId: { type: String, required: true },
    userId: { type: String, required: true },
    role: { type: String, enum: MEMBER_ROLES, default: 'member' },
  },
  { timestamps: true, versionKey: false }
);
schema.index({ organizationId: 1, userId: 1 }, { unique: true });
schema.index({ userId: 1 });

export type MembershipDoc = InferSchemaType<typeof schema> & { _id: string };
export const Membership = mongoose.model('Membership', schema, 'memberships');
