/**
 * Grants of the authorization server (commands/oauthServer.ts): authorization codes and refresh tokens, stored
 * under the SHA-256 of their clear value (`_id`), so a lookup is one point read and the database never holds a
 * usable credential. A grant is used once: redeeming it INSERTS its `_id` into `oauth_grant_uses` (the one
 * exclusive write on every server; docs/decisions.md "Atomic updates on the embedded database"), so of
 * two concurrent redemptions exactly one succeeds. Revoked access tokens (JWTs) are remembered by their `jti` in
 * `oauth_revocations` until they would have expired anyway. All three expire with the grant or token they are
 * about (lib/expiry.ts: TTL on MongoDB, the api's sweep on FerretDB).
 */
import mongoose, { type InferSchemaType } from 'mongoose';
import { expiringSchema, expiryPaths, registerExpiring } from '../lib/expiry';

const grantSchema = new mongoose.Schema(
  {
    /** SHA-256 (hex) of the code or refresh token. */
    _id: { type: String, required: true },
    kind: { type: String, enum: ['code', 'refresh'], required: true },
    clientId: { type: String, required: true },
    organizationId: { type: String, required: true },
    userId: { type: String, required: true },
    scope: { type: String, required: true },
    /** The resource (audience) the tokens are bound to. */
    resource: { type: String, required: true },
    /** Codes: the redirect URI the token request must repeat, and the PKCE S256 challenge. */
    redirectUri: { type: String, default: null },
    codeChallenge: { type: String, default: null },
    revokedAt: { type: Date, default: null },
    /** The service token the person approved with: revoking it revokes the grant (docs/decisions.md "Security"). */
    tokenId: { type: String, default: null },
    /**
     * The code a chain of refresh tokens descends from (its `_id`; a code's own): a reused code or refresh token
     * revokes the whole family, the access tokens it issued included (their `fam` claim).
     */
    familyId: { type: String, default: null },
    ...expiryPaths,
  },
  { timestamps: { createdAt: true, updatedAt: false }, versionKey: false }
);
expiringSchema(grantSchema);
grantSchema.index({ tokenId: 1 });
grantSchema.index({ familyId: 1 });
grantSchema.index({ organizationId: 1, clientId: 1 });

export type OAuthGrantDoc = InferSchemaType<typeof grantSchema> & { _id: string; createdAt: Date };
export const OAuthGrant = registerExpiring(mongoose.model('OAuthGrant', grantSchema, 'oauth_grants'));

const useSchema = new mongoose.Schema(
  {
    /** The grant's `_id`. */
    _id: { type: String, required: true },
    /** The grant's expiry: the claim is kept as long as the grant could be presented. */
    ...expiryPaths,
  },
  { timestamps: { createdAt: true, updatedAt: false }, versionKey: false }
);
expiringSchema(useSchema);
export const OAuthGrantUse = registerExpiring(mongoose.model('OAuthGrantUse', useSchema, 'oauth_grant_uses'));

const revocationSchema = new mongoose.Schema(
  {
    /** The access token's `jti`, or `fam:<familyId>` for every access token of a revoked family. */
    _id: { type: String, required: true },
    /** The token's own expiry. */
    ...expiryPaths,
  },
  { timestamps: { createdAt: true, updatedAt: false }, versionKey: false }
);
expiringSchema(revocationSchema);
export const OAuthRevocation = registerExpiring(
  mongoose.model('OAuthRevocation', revocationSchema, 'oauth_revocations')
);
