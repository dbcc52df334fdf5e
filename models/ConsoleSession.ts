/**
 * A console session: a person signed in to the console with a personal access token (`td_`), or through the
 * organization's identity provider ("Sign in with SSO", docs/identity.md), and holds a cookie
 * [docs/decisions.md "Console sessions", "Identity providers (issue 43)"]. Not the conversation state of a chat (models/Session.ts).
 *
 * `_id` is the SHA-256 (hex) of the cookie's random secret, so a request's session is read by `_id` and the
 * database never holds a value that signs anyone in. The token itself is not stored either: only its record's id
 * and the hash its record is found by (the token cache of commands/tokens.ts resolves it at every request, so a
 * revocation or a membership's end ends the session at once). Expires at its absolute lifetime (lib/expiry.ts);
 * the idle timeout is checked at every read against `lastSeenAt`.
 */
import mongoose, { type InferSchemaType } from 'mongoose';
import { expiringSchema, expiryPaths, registerExpiring } from '../lib/expiry';

const schema = new mongoose.Schema(
  {
    _id: { type: String, required: true },
    organizationId: { type: String, required: true },
    userId: { type: String, required: true },
    /** The `td_` token's record (ApiToken `_id`), or `sso:<hash of issuer and subject>` for a session of SSO. */
    tokenId: { type: String, required: true },
    /**
     * SHA-256 of the token, the key its record is resolved by (the same value ApiToken stores as `hash`); null for a
     * session of SSO, which lives while its user is a member of its organization.
     */
    tokenHash: { type: String, default: null },
    /** The identity provider of a session of SSO (its `iss` and `sub`); null for a token's session. */
    issuer: { type: String, default: null },
    subject: { type: String, default: null },
    createdAt: { type: Date, required: true },
    /** The last request seen, written at most once per `lastSeenResolutionMs` (commands/sessions.ts). */
    lastSeenAt: { type: Date, required: true },
    /** Absolute end: createdAt + SESSION_MAX_AGE. */
    ...expiryPaths,
  },
  { versionKey: false }
);
expiringSchema(schema);

export type ConsoleSessionDoc = InferSchemaType<typeof schema> & { _id: string };
export const ConsoleSession = registerExpiring(mongoose.model('ConsoleSession', schema, 'console_sessions'));
