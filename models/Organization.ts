/** An organization: the tenant that owns every other resource. Members are Membership documents. */
import mongoose, { type InferSchemaType } from 'mongoose';
import { newId } from '../lib/ids';

const schema = new mongoose.Schema(
  {
    _id: { type: String, default: () => newId('org') },
    name: { type: String, required: true, maxlength: 200 },
    logoUrl: { type: String, maxlength: 2000 },
    /** Its weight in the sharing of execution slots and Temporal fairness (commands/fairShare.ts); absent: 1. */
    fairnessWeight: { type: Number, min: 0.01, max: 1000 },
    ownerId: { type: String, required: true },
    subscription: {
      type: new mongoose.Schema(
        {
          tier: { type: String, enum: ['free', 'pro', 'enterprise'], default: 'free' },
          status: { type: String, enum: ['active', 'cancelled', 'expired'], default: 'active' },
        },
        { _id: false }
      ),
      default: () => ({}),
    },
  },
  { timestamps: true, versionKey: false }
);

export type OrganizationDoc = InferSchemaType<typeof schema> & { _id: string };
export const Organization = mongoose.model('Organization', schema, 'organizations');
