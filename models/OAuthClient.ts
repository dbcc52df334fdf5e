/**
 * An OAuth client of the MCP endpoint's authorization server, made by dynamic client registration (RFC 7591;
 * commands/oauthServer.ts). A client registered anonymously is a public or confidential client of people: it may
 * only use the authorization code grant (with PKCE), and acts for whoever consents. A client registered with a
 * service token (scope `mcp` or `*`) belongs to that token's organization and user: it is a machine client and may
 * use the client credentials grant, acting as that user [docs/decisions.md "MCP and OAuth"]. Only the SHA-256 of
 * the client secret is stored. Clients expire when unused (docs/decisions.md "Security").
 */
import mongoose, { type InferSchemaType } from 'mongoose';
import { expiringSchema, expiryPaths, registerExpiring } from '../lib/expiry';
import { newId } from '../lib/ids';

const schema = new mongoose.Schema(
  {
    _id: { type: String, default: () => newId('oac') },
    name: { type: String, maxlength: 200, default: '' },
    /** SHA-256 of the client secret; null for a public client (`token_endpoint_auth_method: none`). */
    secretHash: { type: String, default: null },
    tokenEndpointAuthMethod: {
      type: String,
      enum: ['client_secret_basic', 'client_secret_post', 'none'],
      required: true,
    },
    grantTypes: { type: [String], default: [] },
    redirectUris: { type: [String], default: [] },
    /** Set for a machine client (registered with a service token): the identity of its client credentials grant. */
    organizationId: { type: String, default: null },
    userId: { type: String, default: null },
    /** The service token that registered a machine client: revoking the token deletes the client. */
    tokenId: { type: String, default: null },
    /**
     * An abandoned client expires: `OAUTH_CLIENT_IDLE_DAYS` after its registration or after the last code or token
     * issued to it (commands/oauthClients.ts `touchClient`).
     */
    ...expiryPaths,
  },
  { timestamps: true, versionKey: false }
);

expiringSchema(schema);
schema.index({ tokenId: 1 });
schema.index({ organizationId: 1, createdAt: -1 });

export type OAuthClientDoc = InferSchemaType<typeof schema> & { _id: string; createdAt: Date };
export const OAuthClient = registerExpiring(mongoose.model('OAuthClient', schema, 'oauth_clients'));
