/**
 * An email domain an organization has verified (set by the admin CLI, `admin domain add`): an ID token whose
 * verified `email` is in it maps to the organization's member with that email (commands/identity.ts;
 * docs/identity.md). `_id` is the domain, lowercased, so a domain belongs to one organization at most.
 */
import mongoose, { type InferSchemaType } from 'mongoose';

const schema = new mongoose.Schema(
  {
    _id: { type: String, required: true, lowercase: true, trim: true, maxlength: 253 },
    organizationId: { type: String, required: true },
    /** The only issuer whose emails count for this domain; null: any configured issuer. */
    issuer: { type: String, default: null },
  },
  { timestamps: true, versionKey: false }
);

export type IdentityDomainDoc = InferSchemaType<typeof schema> & { _id: string };
export const IdentityDomain = mongoose.model('IdentityDomain', schema, 'identity_domains');
