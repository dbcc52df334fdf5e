/**
 * The OAuth 2.1 authorization server of the MCP endpoint [docs/decisions.md "MCP and OAuth"], implementing what
 * commands/oauth.ts publishes:
 * - dynamic client registration (RFC 7591): anonymous registrations make clients of people (authorization code +
 *   PKCE S256); a registration carrying a service token (scope `mcp` or `*`) makes a machine client of that token's
 *   organization and user (client credentials);
 * - the authorization code grant with PKCE S256 (the person consents by presenting a service token: api/oauth.ts),
 *   refresh tokens (rotated at each use), the client credentials grant;
 * - access tokens: JWTs (RFC 9068 `at+jwt`, signed with `jose`, HS256 under a key derived from ENCRYPTION_KEY, so
 *   every api instance verifies them), audience-bound to the MCP endpoint (RFC 8707 `resource`), scope `mcp`;
 * - revocation (RFC 7009) of refresh tokens and access tokens.
 * Codes and refresh tokens are stored under their SHA-256 and used once: a redemption inserts the grant's id
 * (models/OAuthGrant.ts).
 */
import { createHash, hkdfSync } from 'node:crypto';
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import mongoose from 'mongoose';
import type { Config } from '../lib/config';
import { randomBase62 } from '../lib/ids';
import { safeEqual, sha256Hex } from '../lib/crypto';
import { EncryptionUnavailableError, OAuthError } from '../lib/errors';
import { expiryFields } from '../lib/expiry';
import {
  OAuthClient,
  OAuthGrant,
  OAuthGrantUse,
  OAuthRevocation,
  type OAuthClientDoc,
  type OAuthGrantDoc,
} from '../models';
import { clientExpiry, liveTokenScopes, revokeFamily, tokenLive, touchClient } from './oauthClients';
import { MCP_SCOPE, mcpResourceUrl, oauthIssuer, type OAuthClientAuthMethod, type OAuthGrantType } from './oauth';
import { memberContext, type AuthContext } from './tokens';
import { isDuplicateKey } from '../lib/mongo';
import { isLoopbackHostname } from '../lib/safeDestination';

/** Lifetimes [docs/decisions.md "MCP and OAuth"]. */
export const OAUTH_LIFETIMES = {
  accessTokenSeconds: 3600,
  codeSeconds: 600,
  refreshTokenSeconds: 30 * 24 * 3600,
} as const;

/** A verified bearer of the MCP endpoint: the caller, and the OAuth client (or service token) it came through. */
export interface McpCaller {
  auth: AuthContext;
  clientId: string;
}

/** The registration request (RFC 7591 §2), as validated by api/oauth.ts. */
export interface ClientRegistration {
  redirect_uris?: string[];
  grant_types?: OAuthGrantType[];
  response_types?: string[];
  token_endpoint_auth_method?: OAuthClientAuthMethod;
  client_name?: string;
  scope?: string;
}

const JWT_ALG = 'HS256';
const JWT_TYPE = 'at+jwt';

/**
 * @param config ENCRYPTION_KEY.
 * @param purpose what the key signs (each purpose gets its own key).
 * @returns a 32-byte HMAC key derived with HKDF-SHA256.
 * @throws EncryptionUnavailableError without ENCRYPTION_KEY.
 */
export function derivedKey(config: Readonly<Config>, purpose: string): Uint8Array {
  if (!config.encryptionKey) throw new EncryptionUnavailableError();
  return new Uint8Array(hkdfSync('sha256', config.encryptionKey, Buffer.alloc(0), `aas:${purpose}`, 32));
}

const invalidClientMetadata = (description: string): OAuthError =>
  new OAuthError(400, 'invalid_client_metadata', description);

/**
 * A redirect URI clients may register (OAuth 2.1 §2.3.1, MCP authorization "communication security"): an absolute
 * https URL, or http on a loopback host (native apps), without a fragment.
 */
function acceptableRedirectUri(value: string): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if (url.hash !== '' || value.includes('#')) return false;
  if (url.protocol === 'https:') return true;
  return url.protocol === 'http:' && isLoopbackHostname(url.hostname);
}

/**
 * Registers a client (RFC 7591).
 * @param input the validated registration request.
 * @param owner the service token's caller when the registration carried one (a machine client), else null.
 * @returns the registration response (the client secret is shown only here).
 */
export async function registerClient(
  input: ClientRegistration,
  owner: AuthContext | null
): Promise<Record<string, unknown>> {
  const grantTypes = [...new Set(input.grant_types ?? ['authorization_code', 'refresh_token'])];
  const method: OAuthClientAuthMethod = input.token_endpoint_auth_method ?? 'client_secret_basic';
  const redirectUris = input.redirect_uris ?? [];
  if (input.scope !== undefined && input.scope.split(' ').some((s) => s !== MCP_SCOPE))
    throw invalidClientMetadata(`scope must be ${MCP_SCOPE}`);
  if (grantTypes.includes('client_credentials')) {
    if (!owner)
      throw invalidClientMetadata(
        'client_credentials needs a registration authenticated with a service token (scope mcp or *)'
      );
    if (method === 'none') throw invalidClientMetadata('client_credentials needs a confidential client');
  }
  if (grantTypes.includes('authorization_code') && redirectUris.length === 0)
    throw new OAuthError(400, 'invalid_redirect_uri', 'authorization_code needs at least one redirect URI');
  const bad = redirectUris.find((u) => !acceptableRedirectUri(u));
  if (bad !== undefined)
    throw new OAuthError(
      400,
      'invalid_redirect_uri',
      `Invalid redirect URI: ${bad} (https, or http on a loopback host; no fragment)`
    );
  if (input.response_types?.some((t) => t !== 'code')) throw invalidClientMetadata('response_types must be code');
  const secret = method === 'none' ? null : `oacs_${randomBase62(40)}`;
  const client = await OAuthClient.create({
    name: input.client_name ?? '',
    secretHash: secret === null ? null : sha256Hex(secret),
    tokenEndpointAuthMethod: method,
    grantTypes,
    redirectUris,
    organizationId: owner?.organizationId ?? null,
    userId: owner?.userId ?? null,
    tokenId: owner?.tokenId ?? null,
    ...clientExpiry(false),
  });
  return {
    client_id: client._id,
    ...(secret === null ? {} : { client_secret: secret, client_secret_expires_at: 0 }),
    client_id_issued_at: Math.floor(client.createdAt.getTime() / 1000),
    client_name: client.name,
    redirect_uris: redirectUris,
    grant_types: grantTypes,
    response_types: grantTypes.includes('authorization_code') ? ['code'] : [],
    token_endpoint_auth_method: method,
    scope: MCP_SCOPE,
  };
}

/**
 * @param clientId a client id.
 * @returns the client, or null.
 */
export async function findClient(clientId: string): Promise<OAuthClientDoc | null> {
  if (clientId.length > 100) return null;
  const client = await OAuthClient.findById(clientId).lean<OAuthClientDoc>();
  // Expired (abandoned) clients may outlive their expiry until the sweep: never trusted past it.
  if (!client || (client.expiresAt && client.expiresAt.getTime() <= Date.now())) return null;
  return client;
}

/**
 * The resource a request names (RFC 8707), which must be the MCP endpoint.
 * @param config APP_URL.
 * @param requested the `resource` parameter, if any.
 * @returns the canonical resource URI.
 * @throws OAuthError `invalid_target` for any other resource.
 */
export function resolveResource(config: Readonly<Config>, requested: string | undefined): string {
  const resource = mcpResourceUrl(config.appUrl);
  if (requested === undefined || requested === '' || requested.replace(/\/+$/, '') === resource) return resource;
  throw new OAuthError(400, 'invalid_target', `Unknown resource: the only resource is ${resource}`);
}

/**
 * @param requested the `scope` parameter, if any.
 * @returns the granted scope (`mcp`).
 * @throws OAuthError `invalid_scope` for any other scope.
 */
export function resolveScope(requested: string | undefined): string {
  const scopes = (requested ?? '').split(' ').filter(Boolean);
  if (scopes.some((s) => s !== MCP_SCOPE))
    throw new OAuthError(400, 'invalid_scope', `The only scope granted is ${MCP_SCOPE}`);
  return MCP_SCOPE;
}

/** What the person approved on the consent page (api/oauth.ts checked the client and the redirect URI). */
export interface ApprovedAuthorization {
  client: OAuthClientDoc;
  redirectUri: string;
  codeChallenge: string;
  scope: string;
  resource: string;
}

/**
 * Issues an authorization code for the person who consented.
 * @param approved client, redirect URI, PKCE challenge, scope and resource.
 * @param person the consenting person (from the service token presented on the consent page).
 * @returns the clear code (stored only as its hash).
 */
export async function issueAuthorizationCode(approved: ApprovedAuthorization, person: AuthContext): Promise<string> {
  const code = `oacc_${randomBase62(40)}`;
  await OAuthGrant.create({
    _id: sha256Hex(code),
    familyId: sha256Hex(code),
    tokenId: person.tokenId,
    kind: 'code',
    clientId: approved.client._id,
    organizationId: person.organizationId,
    userId: person.userId,
    scope: approved.scope,
    resource: approved.resource,
    redirectUri: approved.redirectUri,
    codeChallenge: approved.codeChallenge,
    ...expiryFields(new Date(Date.now() + OAUTH_LIFETIMES.codeSeconds * 1000)),
  });
  await touchClient(approved.client);
  return code;
}

/** Client credentials presented at the token or revocation endpoint. */
export interface PresentedClient {
  clientId?: string;
  clientSecret?: string;
}

/**
 * Reads the client's credentials: HTTP Basic (RFC 6749 §2.3.1, form-encoded parts) or the body's
 * `client_id` / `client_secret`.
 * @param authorization the Authorization header.
 * @param form the request's form fields.
 * @returns the presented credentials.
 */
export function presentedClient(authorization: string, form: URLSearchParams): PresentedClient {
  const basic = /^Basic\s+(\S+)$/i.exec(authorization);
  if (basic) {
    const decoded = Buffer.from(basic[1], 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw new OAuthError(401, 'invalid_client', 'Malformed Basic credentials');
    const unescape = (s: string): string => decodeURIComponent(s.replace(/\+/g, ' '));
    try {
      return { clientId: unescape(decoded.slice(0, colon)), clientSecret: unescape(decoded.slice(colon + 1)) };
    } catch {
      throw new OAuthError(401, 'invalid_client', 'Malformed Basic credentials');
    }
  }
  return { clientId: form.get('client_id') ?? undefined, clientSecret: form.get('client_secret') ?? undefined };
}

/**
 * Authenticates a client at the token or revocation endpoint.
 * @param presented the credentials.
 * @returns the client.
 * @throws OAuthError 401 `invalid_client`.
 */
export async function authenticateClient(presented: PresentedClient): Promise<OAuthClientDoc> {
  const refuse = (): OAuthError => new OAuthError(401, 'invalid_client', 'Client authentication failed');
  if (!presented.clientId) throw refuse();
  const client = await findClient(presented.clientId);
  if (!client) throw refuse();
  if (!client.secretHash) {
    // A public client proves nothing here: PKCE (or the refresh token itself) carries the proof.
    if (presented.clientSecret) throw refuse();
    return client;
  }
  if (!presented.clientSecret || !safeEqual(sha256Hex(presented.clientSecret), client.secretHash)) throw refuse();
  return client;
}

/** The token endpoint's answer (RFC 6749 §5.1). */
export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
  refresh_token?: string;
}

/**
 * Signs an access token and, for a person's grant, a new refresh token.
 * @returns the token response.
 */
async function issueTokens(
  config: Readonly<Config>,
  grant: {
    clientId: string;
    organizationId: string;
    userId: string;
    scope: string;
    resource: string;
    tokenId?: string | null;
    familyId?: string | null;
  },
  withRefresh: boolean
): Promise<TokenResponse> {
  const jti = randomBase62(24);
  const accessToken = await new SignJWT({
    scope: grant.scope,
    client_id: grant.clientId,
    org: grant.organizationId,
    // The service token it descends from and its grant family: revoking either ends this token.
    ...(grant.tokenId ? { tok: grant.tokenId } : {}),
    ...(grant.familyId ? { fam: grant.familyId } : {}),
  })
    .setProtectedHeader({ alg: JWT_ALG, typ: JWT_TYPE })
    .setIssuer(oauthIssuer(config.appUrl))
    .setAudience(grant.resource)
    .setSubject(grant.userId)
    .setJti(jti)
    .setIssuedAt()
    .setExpirationTime(`${OAUTH_LIFETIMES.accessTokenSeconds}s`)
    .sign(derivedKey(config, 'oauth-access-token'));
  const out: TokenResponse = {
    access_token: accessToken,
    token_type: 'Bearer',
    expires_in: OAUTH_LIFETIMES.accessTokenSeconds,
    scope: grant.scope,
  };
  if (withRefresh) {
    const refresh = `oacr_${randomBase62(40)}`;
    await OAuthGrant.create({
      _id: sha256Hex(refresh),
      kind: 'refresh',
      tokenId: grant.tokenId ?? null,
      familyId: grant.familyId ?? null,
      clientId: grant.clientId,
      organizationId: grant.organizationId,
      userId: grant.userId,
      scope: grant.scope,
      resource: grant.resource,
      ...expiryFields(new Date(Date.now() + OAUTH_LIFETIMES.refreshTokenSeconds * 1000)),
    });
    out.refresh_token = refresh;
  }
  return out;
}

/**
 * Redeems a code or refresh token once: inserting its id is the claim (a second redemption finds it taken).
 * @returns the grant.
 * @throws OAuthError `invalid_grant` when unknown, expired, revoked, of another client, or already used.
 */
async function redeem(value: string, kind: 'code' | 'refresh', client: OAuthClientDoc): Promise<OAuthGrantDoc> {
  const invalid = (why: string): OAuthError => new OAuthError(400, 'invalid_grant', why);
  const id = sha256Hex(value);
  const grant = await OAuthGrant.findById(id).lean<OAuthGrantDoc>();
  const label = kind === 'code' ? 'authorization code' : 'refresh token';
  if (!grant || grant.kind !== kind || grant.clientId !== client._id) throw invalid(`Unknown ${label}`);
  if (grant.revokedAt) throw invalid(`The ${label} was revoked`);
  if (grant.expiresAt.getTime() <= Date.now()) throw invalid(`The ${label} expired`);
  try {
    await OAuthGrantUse.create({ _id: id, ...expiryFields(grant.expiresAt) });
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    // Reuse means a copy leaked (RFC 9700 §4.14.2, OAuth 2.1 §4.3.1): everything the family issued is revoked.
    await revokeFamily(grant.familyId ?? grant._id);
    throw invalid(`The ${label} was already used: every token issued from it is revoked`);
  }
  if (!(await tokenLive(grant.tokenId)))
    throw invalid(`The service token that approved this ${label} was revoked or expired`);
  return grant;
}

/**
 * The token endpoint (RFC 6749 §3.2; OAuth 2.1): authorization_code (with PKCE S256), refresh_token (rotated),
 * client_credentials (machine clients).
 * @param config APP_URL and ENCRYPTION_KEY.
 * @param client the authenticated client.
 * @param form the request's form fields.
 * @returns the token response.
 */
export async function exchangeToken(
  config: Readonly<Config>,
  client: OAuthClientDoc,
  form: URLSearchParams
): Promise<TokenResponse> {
  const grantType = form.get('grant_type') ?? '';
  const param = (name: string): string => {
    const v = form.get(name);
    if (!v) throw new OAuthError(400, 'invalid_request', `Missing required parameter: ${name}`);
    return v;
  };
  if (!['authorization_code', 'refresh_token', 'client_credentials'].includes(grantType))
    throw new OAuthError(400, 'unsupported_grant_type', `Unsupported grant_type: ${grantType || '(none)'}`);
  if (!client.grantTypes.includes(grantType))
    throw new OAuthError(400, 'unauthorized_client', `This client is not registered for ${grantType}`);

  if (grantType === 'client_credentials') {
    if (!client.organizationId || !client.userId || client.secretHash === null)
      throw new OAuthError(400, 'unauthorized_client', 'client_credentials is for machine clients');
    if (!(await memberContext(client.organizationId, client.userId, client._id, [MCP_SCOPE])))
      throw new OAuthError(400, 'invalid_grant', 'The client’s user is no longer a member of its organization');
    if (!(await tokenLive(client.tokenId)))
      throw new OAuthError(400, 'invalid_grant', 'The service token that registered this client was revoked');
    await touchClient(client);
    const scope = resolveScope(form.get('scope') ?? undefined);
    const resource = resolveResource(config, form.get('resource') ?? undefined);
    return issueTokens(
      config,
      {
        clientId: client._id,
        organizationId: client.organizationId,
        userId: client.userId,
        scope,
        resource,
        tokenId: client.tokenId,
      },
      false
    );
  }

  if (grantType === 'authorization_code') {
    const code = param('code');
    const verifier = param('code_verifier');
    const redirectUri = param('redirect_uri');
    if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier))
      throw new OAuthError(400, 'invalid_request', 'code_verifier must be 43 to 128 unreserved characters');
    const grant = await redeem(code, 'code', client);
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    if (!grant.codeChallenge || !safeEqual(challenge, grant.codeChallenge))
      throw new OAuthError(400, 'invalid_grant', 'PKCE verification failed');
    if (redirectUri !== grant.redirectUri)
      throw new OAuthError(400, 'invalid_grant', 'redirect_uri does not match the authorization request');
    const requested = form.get('resource');
    if (requested && resolveResource(config, requested) !== grant.resource)
      throw new OAuthError(400, 'invalid_target', 'resource does not match the authorization request');
    if (!(await memberContext(grant.organizationId, grant.userId, client._id, [MCP_SCOPE])))
      throw new OAuthError(400, 'invalid_grant', 'The user is no longer a member of the organization');
    await touchClient(client);
    return issueTokens(config, grant, client.grantTypes.includes('refresh_token'));
  }

  const grant = await redeem(param('refresh_token'), 'refresh', client);
  if (form.get('scope')) resolveScope(form.get('scope') ?? undefined);
  const requested = form.get('resource');
  if (requested && resolveResource(config, requested) !== grant.resource)
    throw new OAuthError(400, 'invalid_target', 'resource does not match the grant');
  if (!(await memberContext(grant.organizationId, grant.userId, client._id, [MCP_SCOPE])))
    throw new OAuthError(400, 'invalid_grant', 'The user is no longer a member of the organization');
  await touchClient(client);
  return issueTokens(config, grant, true);
}

/**
 * Revocation (RFC 7009): a refresh token of the client is revoked; an access token of the client is refused from
 * then on. Anything else is ignored (200 either way).
 * @param config APP_URL and ENCRYPTION_KEY.
 * @param client the authenticated client.
 * @param token the token to revoke.
 */
export async function revokeOAuthToken(config: Readonly<Config>, client: OAuthClientDoc, token: string): Promise<void> {
  if (token.startsWith('oacr_')) {
    const grant = await OAuthGrant.findById(sha256Hex(token)).lean<OAuthGrantDoc>();
    if (grant && grant.clientId === client._id && !grant.revokedAt)
      await OAuthGrant.updateOne({ _id: grant._id }, { $set: { revokedAt: new Date() } });
    return;
  }
  const claims = await verifiedClaims(config, token).catch(() => null);
  if (claims && claims.client_id === client._id && typeof claims.jti === 'string' && typeof claims.exp === 'number') {
    await OAuthRevocation.updateOne(
      { _id: claims.jti },
      { $setOnInsert: expiryFields(new Date(claims.exp * 1000)) },
      { upsert: true }
    );
  }
}

async function verifiedClaims(config: Readonly<Config>, token: string): Promise<Record<string, unknown>> {
  const { payload } = await jwtVerify(token, derivedKey(config, 'oauth-access-token'), {
    issuer: oauthIssuer(config.appUrl),
    audience: mcpResourceUrl(config.appUrl),
    algorithms: [JWT_ALG],
    typ: JWT_TYPE,
  });
  return payload as Record<string, unknown>;
}

/**
 * Verifies an access token presented to the MCP endpoint: signature, issuer, audience (this MCP endpoint), expiry,
 * revocation, and that its user is still a member of its organization and its client still registered.
 * @param config APP_URL and ENCRYPTION_KEY.
 * @param token the bearer token.
 * @returns the caller, or why it is refused.
 */
export async function verifyAccessToken(
  config: Readonly<Config>,
  token: string
): Promise<McpCaller | 'invalid' | 'expired'> {
  let claims: Record<string, unknown>;
  try {
    claims = await verifiedClaims(config, token);
  } catch (err) {
    if (err instanceof joseErrors.JWTExpired) return 'expired';
    if (err instanceof joseErrors.JOSEError) return 'invalid';
    throw err;
  }
  const { sub, org, client_id: clientId, jti, scope, tok, fam } = claims;
  if (typeof sub !== 'string' || typeof org !== 'string' || typeof clientId !== 'string' || typeof jti !== 'string')
    return 'invalid';
  const scopes = typeof scope === 'string' ? scope.split(' ').filter(Boolean) : [];
  const revocations = typeof fam === 'string' ? [jti, `fam:${fam}`] : [jti];
  const [revoked, client, auth, tokenScopes] = await Promise.all([
    OAuthRevocation.exists({ _id: mongoose.trusted({ $in: revocations }) }),
    findClient(clientId),
    memberContext(org, sub, `oauth:${jti}`, scopes),
    liveTokenScopes(typeof tok === 'string' ? tok : null),
  ]);
  if (revoked || !client || !auth || !tokenScopes) return 'invalid';
  // The MCP tools need the scopes of their REST routes: the token's own (`mcp`) and those of the service token it
  // came from [docs/decisions.md "MCP tools take the scopes of their REST routes"].
  auth.scopes = [...new Set([...auth.scopes, ...tokenScopes])] as AuthContext['scopes'];
  return { auth, clientId };
}
