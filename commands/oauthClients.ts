/**
 * What an organization and its tokens control of the authorization server's clients and grants
 * [docs/decisions.md "Security"]:
 * - every grant remembers the service token it came from (the registering token of a machine client, the token the
 *   person approved with): revoking or expiring that token ends the clients, codes, refresh tokens and access
 *   tokens it created ({@link revokeOAuthOfToken}, and {@link tokenLive} at every use);
 * - a reused code or refresh token revokes its whole family (the code and every refresh token descending from it)
 *   and the access tokens the family issued ({@link revokeFamily});
 * - an organization lists and deletes the clients bound to it (machine clients) or authorized by its members;
 * - a client unused for `OAUTH_CLIENT_IDLE_DAYS` (or never used within a day of its registration) expires.
 */
import mongoose from 'mongoose';
import { expiryFields } from '../lib/expiry';
import { NotFoundError } from '../lib/errors';
import { isDuplicateKey } from '../lib/mongo';
import { ApiToken, OAuthClient, OAuthGrant, OAuthRevocation, type ApiTokenDoc, type OAuthClientDoc } from '../models';

/** How long after its registration a client never used expires. */
export const UNUSED_CLIENT_SECONDS = 24 * 3600;
/** How long a client lives after its last code or token. */
export const IDLE_CLIENT_SECONDS = 30 * 24 * 3600;
/** Longest life of an access token (commands/oauthServer.ts): how long a family's revocation must be kept. */
const ACCESS_TOKEN_SECONDS = 3600;

/** @returns the expiry fields of a client registered (or used) now. */
export function clientExpiry(used: boolean): { expiresAt: Date; expiryBucket: number } {
  return expiryFields(new Date(Date.now() + (used ? IDLE_CLIENT_SECONDS : UNUSED_CLIENT_SECONDS) * 1000));
}

/**
 * A client was used (a code or tokens issued): it lives another IDLE_CLIENT_SECONDS. At most one write a day.
 * @param client the client.
 */
export async function touchClient(client: OAuthClientDoc): Promise<void> {
  const expiresAt = client.expiresAt?.getTime() ?? 0;
  if (expiresAt - Date.now() > IDLE_CLIENT_SECONDS * 1000 - 86_400_000) return;
  await OAuthClient.updateOne({ _id: client._id }, { $set: clientExpiry(true) });
}

/**
 * @param tokenId the service token a grant or client came from (null: made before tokens were recorded).
 * @returns whether that token still grants anything: not revoked, not expired.
 */
export async function tokenLive(tokenId: string | null | undefined): Promise<boolean> {
  if (!tokenId) return true;
  const token = await ApiToken.findById(tokenId).select({ revokedAt: 1, expiresAt: 1 }).lean<ApiTokenDoc>();
  return !!token && !token.revokedAt && !(token.expiresAt && token.expiresAt.getTime() <= Date.now());
}

/**
 * The scopes of the service token an OAuth grant came from (issue 38: an OAuth access token acts, through the MCP
 * tools, with that token's rights, as it could through REST).
 * @param tokenId the service token's id (none for grants older than that record: no scope besides `mcp`).
 * @returns its scopes, or null when it was revoked, expired or deleted.
 */
export async function liveTokenScopes(tokenId: string | null | undefined): Promise<string[] | null> {
  if (!tokenId) return [];
  const token = await ApiToken.findById(tokenId).select({ revokedAt: 1, expiresAt: 1, scopes: 1 }).lean<ApiTokenDoc>();
  if (!token || token.revokedAt || (token.expiresAt && token.expiresAt.getTime() <= Date.now())) return null;
  return [...token.scopes];
}

/** Ids per `$or` query (each an index-served equality). */
const OR_CHUNK = 100;

/**
 * Revokes families: their grants (codes, refresh tokens) and every access token they issued.
 * @param familyIds the families.
 */
export async function revokeFamily(...familyIds: string[]): Promise<void> {
  const ids = [...new Set(familyIds)];
  if (ids.length === 0) return;
  // An `$or` of equalities, each served by the `familyId` index (an `$in` is not pushed down on the embedded
  // database: docs/query-shapes.md).
  for (let i = 0; i < ids.length; i += OR_CHUNK)
    await OAuthGrant.updateMany(
      { $or: ids.slice(i, i + OR_CHUNK).map((familyId) => ({ familyId, revokedAt: null })) },
      { $set: { revokedAt: new Date() } }
    );
  const until = expiryFields(new Date(Date.now() + ACCESS_TOKEN_SECONDS * 1000));
  for (const id of ids)
    await OAuthRevocation.updateOne({ _id: `fam:${id}` }, { $setOnInsert: until }, { upsert: true }).catch(
      (err: unknown) => {
        // Two replays of one code revoke at once: the losing upsert finds the record the other inserted.
        if (!isDuplicateKey(err)) throw err;
      }
    );
}

/** Revokes the families of the grants a filter selects. */
async function revokeGrantsWhere(filter: Record<string, unknown>): Promise<void> {
  const grants = await OAuthGrant.find(filter).select({ familyId: 1 }).lean<{ _id: string; familyId?: string }[]>();
  await revokeFamily(...grants.map((g) => g.familyId ?? g._id));
  await OAuthGrant.updateMany({ ...filter, revokedAt: null }, { $set: { revokedAt: new Date() } });
}

/**
 * Called when a service token is revoked: deletes the machine clients it registered (their access tokens die with
 * them: every use checks the client) and revokes every grant approved with it and its families.
 * @param tokenId the revoked token.
 */
export async function revokeOAuthOfToken(tokenId: string): Promise<void> {
  const clients = await OAuthClient.find({ tokenId })
    .select({ organizationId: 1 })
    .lean<{ _id: string; organizationId: string }[]>();
  for (const c of clients) await revokeGrantsWhere({ organizationId: c.organizationId, clientId: c._id });
  await OAuthClient.deleteMany({ tokenId });
  await revokeGrantsWhere({ tokenId });
}

/** A client as the organization sees it. */
export interface ClientView {
  id: string;
  name: string;
  kind: 'machine' | 'person';
  grant_types: string[];
  redirect_uris: string[];
  created_at: string;
  expires_at: string | null;
}

const view = (c: OAuthClientDoc): ClientView => ({
  id: c._id,
  name: c.name ?? '',
  kind: c.organizationId ? 'machine' : 'person',
  grant_types: c.grantTypes,
  redirect_uris: c.redirectUris,
  created_at: c.createdAt.toISOString(),
  expires_at: c.expiresAt ? c.expiresAt.toISOString() : null,
});

/** The ids of the clients the organization's members authorized (grants not revoked, not expired). */
async function authorizedClientIds(organizationId: string): Promise<string[]> {
  const grants = await OAuthGrant.find({
    organizationId,
    revokedAt: null,
    expiresAt: mongoose.trusted({ $gt: new Date() }),
  })
    .select({ clientId: 1 })
    .lean<{ clientId: string }[]>();
  return [...new Set(grants.map((g) => g.clientId))];
}

/**
 * The clients of an organization: its machine clients and the clients its members authorized, newest first.
 * @param organizationId the organization.
 * @returns the clients (never a secret).
 */
export async function listOAuthClients(organizationId: string): Promise<ClientView[]> {
  const [machines, authorized] = await Promise.all([
    OAuthClient.find({ organizationId }).sort({ createdAt: -1 }).lean<OAuthClientDoc[]>(),
    authorizedClientIds(organizationId),
  ]);
  const others = authorized.filter((id) => !machines.some((m) => m._id === id));
  const persons: OAuthClientDoc[] = [];
  for (let i = 0; i < others.length; i += OR_CHUNK)
    persons.push(
      ...(await OAuthClient.find({ $or: others.slice(i, i + OR_CHUNK).map((_id) => ({ _id })) }).lean<
        OAuthClientDoc[]
      >())
    );
  const now = Date.now();
  return [...machines, ...persons]
    .filter((c) => !c.expiresAt || c.expiresAt.getTime() > now)
    .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime())
    .map(view);
}

/**
 * Deletes a client for an organization: its own machine client is deleted with every grant and token; a client of
 * people loses every grant of the organization's members (and their access tokens), and stays registered for
 * others. Idempotent only while something is left: then 404.
 * @param organizationId the organization.
 * @param clientId the client.
 * @throws NotFoundError when the client is neither the organization's nor authorized by it.
 */
export async function deleteOAuthClient(organizationId: string, clientId: string): Promise<void> {
  const client = await OAuthClient.findById(clientId).lean<OAuthClientDoc>();
  if (client && client.organizationId === organizationId) {
    await revokeGrantsWhere({ organizationId, clientId });
    await OAuthClient.deleteOne({ _id: clientId, organizationId });
    return;
  }
  if (!client || client.organizationId || !(await authorizedClientIds(organizationId)).includes(clientId))
    throw new NotFoundError('OAuth client not found');
  await revokeGrantsWhere({ organizationId, clientId });
}
