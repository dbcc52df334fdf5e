/**
 * An explicit link from an identity at an OpenID Connect provider (its `iss` and `sub`) to a member of an
 * organization, made by the admin CLI (`admin link-identity`): the first mapping rule of an ID token, before the
 * verified-email rule (commands/identity.ts; docs/identity.md).
 */
import mongoose, { type InferSchemaType } from 'mongoose';
import { newId } from '../lib/ids';

const schema = new mongoose.Schema(
  {
    _id: { type: String, default: () => newId('idl') },
    issuer: { type: String, required: true, maxlength: 2000 },
    subject: { type: String, required: true, maxlength: 255 },
    organizationId: { type: String, required: true },
    userId: { type: String, required: true },
  },
  { timestamps: true, versionKey: false }
);
schema.index({ issuer: 1, subject: 1 }, { unique: true });

export type IdentityLinkDoc = InferSchemaType<typeof schema> & { _id: string };
export const IdentityLink = mongoose.model('IdentityLink', schema, 'identity_links');
