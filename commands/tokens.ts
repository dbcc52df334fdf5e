/**
 * Access tokens: creation (clear value returned once), resolution of a presented token, revocation.
 */
import { generateToken, sha256Hex, TOKEN_PREFIX, type TokenKind } from '../lib/crypto';
import { NotFoundError, ValidationError } from '../lib/errors';
import { invalidate, SharedCache } from '../lib/sharedCache';
import { revokeOAuthOfToken } from './oauthClients';
import { ApiToken, Membership, SCOPES, type ApiTokenDoc, type Scope } from '../models';

/** Who is calling: set on ctx.state.auth by the auth middleware. */
export interface AuthContext {
  organizationId: string;
  userId: string;
  tokenId: string;
  kind: TokenKind;
  scopes: Scope[];
  role: string;
  /** The member's active workspace (POST /api/workspaces/{id}/select), or null. */
  activeWorkspaceId: string | null;
  /** The identity's own rate limit (requests per window), or null for the configured default. */
  rateLimit: number | null;
}

/** Why a presented token was refused (mapped to the spec's 401 messages by the auth middleware). */
export type TokenRefusal = 'invalid' | 'expired';

/** lastUsedAt is written at most this often per token, so authentication is not a write per request. */
const LAST_USED_RESOLUTION_MS = 60_000;

export interface CreateTokenInput {
  organizationId: string;
  userId: string;
  kind: TokenKind;
  name?: string;
  scopes?: string[];
  expiresAt?: Date | null;
}

/**
 * Creates a token for a member of an organization.
 * @param input owner, kind, optional name, scopes (service tokens; default `*`) and expiry.
 * @returns the clear token (show once) and the stored record.
 */
export async function createToken(input: CreateTokenInput): Promise<{ token: string; record: ApiTokenDoc }> {
  const member = await Membership.exists({ organizationId: input.organizationId, userId: input.userId });
  if (!member) throw new NotFoundError('User is not a member of this organization');
  const scopes = input.kind === 'service' ? (input.scopes?.length ? input.scopes : ['*']) : [];
  const unknown = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (unknown.length) throw new ValidationError(`Unknown scope: ${unknown.join(', ')}. Must be: ${SCOPES.join(', ')}`);
  if (input.expiresAt && input.expiresAt.getTime() <= Date.now())
    throw new ValidationError('expiresAt must be in the future');
  const token = generateToken(input.kind);
  const record = await ApiToken.create({
    kind: input.kind,
    name: input.name ?? '',
    hash: sha256Hex(token),
    hint: token.slice(0, TOKEN_PREFIX[input.kind].length + 4),
    organizationId: input.organizationId,
    userId: input.userId,
    scopes,
    expiresAt: input.expiresAt ?? null,
  });
  return { token, record: record.toObject() as ApiTokenDoc };
}

/** What a token hash resolves to: kept per api process for CACHE_TTL_MS, cleared by every change (lib/sharedCache.ts). */
interface ResolvedToken {
  record: ApiTokenDoc;
  /** Null when the token's user is no longer a member of its organization. */
  auth: AuthContext | null;
}
const AUTH_CACHE = 'auth';
const tokenCache = new SharedCache<ResolvedToken>(AUTH_CACHE);

/**
 * Tells every api process that an organization's tokens or memberships changed (call after the write).
 * @param organizationId the organization.
 */
export function authChanged(organizationId: string): Promise<void> {
  return invalidate(AUTH_CACHE, organizationId);
}

/**
 * Resolves a presented clear token. The token and its membership are read once per CACHE_TTL_MS per api process;
 * revocation, a membership's rate limit or workspace change clear them at once (authChanged).
 * @param token the bearer token.
 * @param kind which kind the surface accepts.
 * @returns the caller, or the reason for refusal.
 */
export async function resolveToken(token: string, kind: TokenKind): Promise<AuthContext | TokenRefusal> {
  if (token.length > 200) return 'invalid';
  return resolveTokenHash(sha256Hex(token), kind);
}

/**
 * Resolves a token by the hash its record is found by, through the same cache as {@link resolveToken}: what a
 * console session holds instead of the token (commands/sessions.ts), so a revocation ends the session at once.
 * @param hash SHA-256 (hex) of the clear token.
 * @param kind which kind is accepted.
 * @returns the caller, or the reason for refusal.
 */
export async function resolveTokenHash(hash: string, kind: TokenKind): Promise<AuthContext | TokenRefusal> {
  const resolved = await tokenCache.get(hash, async () => {
    const record = await ApiToken.findOne({ hash }).lean<ApiTokenDoc>();
    if (!record) return undefined;
    const auth = record.revokedAt
      ? null
      : await memberContext(record.organizationId, record.userId, record._id, record.scopes, record.kind as TokenKind);
    if (auth) touchLastUsed(record);
    // A refusal is not kept: what refused it may be fixed by a write this process never hears of.
    return { value: { record, auth }, group: record.organizationId, keep: auth !== null };
  });
  if (!resolved) return 'invalid';
  const { record, auth } = resolved;
  if (record.kind !== kind || record.revokedAt) return 'invalid';
  if (record.expiresAt && record.expiresAt.getTime() <= Date.now()) return 'expired';
  return auth ? { ...auth } : 'invalid';
}

/** Best effort, at most once per LAST_USED_RESOLUTION_MS: a failed bookkeeping write must not fail the request. */
function touchLastUsed(record: ApiTokenDoc): void {
  const now = Date.now();
  if (!record.lastUsedAt || now - record.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS)
    ApiToken.updateOne({ _id: record._id }, { $set: { lastUsedAt: new Date(now) } }).catch(() => undefined);
}

/**
 * The caller a credential stands for, when its user is (still) a member of its organization: used for tokens and
 * for the OAuth access tokens of the MCP endpoint (commands/oauthServer.ts).
 * @param organizationId the organization.
 * @param userId the user.
 * @param tokenId what identifies the credential (a token id, `oauth:<jti>`, an OAuth client id).
 * @param scopes the credential's scopes.
 * @param kind the token kind (`service` for OAuth access tokens: they carry scopes).
 * @returns the caller, or null when the user is not a member.
 */
export async function memberContext(
  organizationId: string,
  userId: string,
  tokenId: string,
  scopes: readonly string[],
  kind: TokenKind = 'service'
): Promise<AuthContext | null> {
  const membership = await Membership.findOne({ organizationId, userId }).lean();
  if (!membership) return null;
  return {
    organizationId,
    userId,
    tokenId,
    kind,
    scopes: scopes as Scope[],
    role: membership.role,
    activeWorkspaceId: membership.activeWorkspaceId ?? null,
    rateLimit: membership.rateLimit ?? null,
  };
}

/**
 * Revokes a token of an organization (idempotent: a revoked token stays revoked at its first time).
 * @param organizationId owner organization.
 * @param tokenId token id.
 * @param userId when set, only this user's token may be revoked.
 * @param kind when set, only a token of this kind.
 */
export async function revokeToken(
  organizationId: string,
  tokenId: string,
  userId?: string,
  kind?: TokenKind
): Promise<void> {
  const filter: Record<string, string> = { _id: tokenId, organizationId };
  if (userId) filter.userId = userId;
  if (kind) filter.kind = kind;
  const found = await ApiToken.findOne(filter).lean<ApiTokenDoc>();
  if (!found) throw new NotFoundError('Token not found');
  if (!found.revokedAt)
    await ApiToken.updateOne({ _id: found._id, organizationId }, { $set: { revokedAt: new Date() } });
  await authChanged(organizationId);
  // Everything the token granted through OAuth ends with it (also checked at every use: a retry completes this).
  await revokeOAuthOfToken(found._id);
}

/**
 * The tokens of an organization, or of one of its members, newest first (the admin CLI's list): never the hash.
 * Served by the index `{organizationId, userId, kind}`.
 * @param organizationId the organization.
 * @param userId when set, only this member's tokens.
 * @returns the token records.
 */
export async function listTokens(organizationId: string, userId?: string): Promise<Omit<ApiTokenDoc, 'hash'>[]> {
  return ApiToken.find({ organizationId, ...(userId ? { userId } : {}) })
    .select({ hash: 0 })
    .sort({ createdAt: -1, _id: -1 })
    .lean<Omit<ApiTokenDoc, 'hash'>[]>();
}

/**
 * Whether a scope list grants a scope: `*` grants everything, and a write scope implies its read scope
 * (`agents:write` grants `agents:read`).
 * @param scopes the token's scopes.
 * @param needed the scope an endpoint requires.
 * @returns true when granted.
 */
export function hasScope(scopes: readonly string[], needed: Scope): boolean {
  if (scopes.includes('*') || scopes.includes(needed)) return true;
  return needed.endsWith(':read') && scopes.includes(`${needed.slice(0, -':read'.length)}:write`);
}
