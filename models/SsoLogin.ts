/**
 * A "Sign in with SSO" under way (api/current/sso.ts): made when the console sends the browser to the identity
 * provider, used once by the callback. `_id` is the SHA-256 of the `state` sent (the browser also holds it in a
 * cookie, which binds the callback to the browser that started it); the PKCE verifier and the nonce never leave
 * the server. Expires ten minutes after it was made (lib/expiry.ts).
 */
import mongoose, { type InferSchemaType } from 'mongoose';
import { expiringSchema, expiryPaths, registerExpiring } from '../lib/expiry';

const schema = new mongoose.Schema(
  {
    _id: { type: String, required: true },
    issuer: { type: String, required: true },
    codeVerifier: { type: String, required: true },
    nonce: { type: String, required: true },
    /** The console path to land on once signed in. */
    next: { type: String, default: '/' },
    ...expiryPaths,
  },
  { versionKey: false }
);
expiringSchema(schema);

export type SsoLoginDoc = InferSchemaType<typeof schema> & { _id: string };
export const SsoLogin = registerExpiring(mongoose.model('SsoLogin', schema, 'sso_logins'));
