/**
 * Bearer-token authentication for both surfaces (SPEC "Authentication"), with the spec's exact 401 messages:
 *   missing header            → `Authorization header required`
 *   not `Bearer <token>`       → `Invalid or expired token`
 *   v1 token without `td_`    → `Token must start with 'td_'`
 *   unknown / revoked token   → `Invalid or expired token`
 *   expired token             → `Token expired`
 * and 403 `You don't have permission to access this resource` for a missing scope.
 *
 * The client-library endpoints (`any`) also take an identity provider's ID token (a JWT of an issuer of OIDC_ISSUERS,
 * lib/oidc.ts), mapped to a member by commands/identity.ts; a refused one is 401 with a code saying why
 * (`id_token_expired`, `id_token_audience`, `id_token_issuer`, `id_token_unknown_key`, `id_token_invalid`,
 * `identity_unmapped`; lib/errors.ts `idTokenError`), and 503 when its provider cannot be reached.
 *
 * Without an `Authorization` header, the console's session cookie authenticates the request instead, on every route
 * of both surfaces (not the MCP endpoint, whose bearer check is its own): the request acts as the session's `td_`
 * token's user (no scope restriction), and one that changes something must pass the CSRF check (api/sessionCookie.ts)
 * [docs/decisions.md "Console sessions"]. A cookie whose session is not alive is 401 `Session expired or signed out`.
 */
import type { Next } from 'koa';
import { identityContext } from '../../commands/identity';
import { resolveSession } from '../../commands/sessions';
import { hasScope, resolveToken, type AuthContext } from '../../commands/tokens';
import { TOKEN_PREFIX, type TokenKind } from '../../lib/crypto';
import {
  CsrfError,
  ForbiddenError,
  idTokenError,
  InvalidTokenError,
  ServiceUnavailableError,
  UnauthorizedError,
} from '../../lib/errors';
import type { IdentityProviders } from '../../lib/oidc';
import type { Scope } from '../../models';
import type { AppContext } from '../context';
import { bindRequestLog } from '../requestLog';
import { hasOwnOrigin, isSafeMethod, sessionSecret, type CookieSessions } from '../sessionCookie';

/**
 * @param accepted which token kind the surface accepts (`v1` → `td_`, `service` → `svc_`), or `any` for the
 *   client-library endpoints, which take either.
 * @param sessions the console's session cookie, accepted when the request has no `Authorization` header; absent:
 *   bearer tokens only.
 * @param identity the identity providers whose ID tokens `any` also accepts (none configured: tokens only).
 * @returns the middleware; sets ctx.state.auth.
 */
export function authenticate(accepted: TokenKind | 'any', sessions?: CookieSessions, identity?: IdentityProviders) {
  return async function authenticateMiddleware(ctx: AppContext, next: Next): Promise<void> {
    const header = ctx.get('authorization');
    if (header === '') {
      const secret = sessions && sessionSecret(ctx, sessions);
      if (!secret) throw new UnauthorizedError('Authorization header required');
      if (!isSafeMethod(ctx) && !hasOwnOrigin(ctx, sessions!)) throw new CsrfError();
      const live = await resolveSession(secret, sessions!);
      if (!live) throw new InvalidTokenError('Session expired or signed out');
      return authenticated(ctx, live.auth, next);
    }
    const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
    if (!match) throw new UnauthorizedError('Invalid or expired token');
    const token = match[1];
    if (accepted === 'v1' && !token.startsWith(TOKEN_PREFIX.v1))
      throw new UnauthorizedError("Token must start with 'td_'");
    if (accepted === 'any' && identity?.enabled && looksLikeJwt(token))
      return authenticated(ctx, await idTokenCaller(identity, token), next);
    const kind: TokenKind = accepted === 'any' ? (token.startsWith(TOKEN_PREFIX.v1) ? 'v1' : 'service') : accepted;
    const resolved = await resolveToken(token, kind);
    if (resolved === 'expired') throw new UnauthorizedError('Token expired');
    if (resolved === 'invalid') throw new UnauthorizedError('Invalid or expired token');
    await authenticated(ctx, resolved, next);
  };
}

/** A compact JWS: three base64url parts (our own tokens start with `td_` or `svc_`). */
function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token);
}

async function idTokenCaller(identity: IdentityProviders, token: string): Promise<AuthContext> {
  const claims = await identity.verify(token);
  if (claims === 'unavailable') throw new ServiceUnavailableError();
  if (typeof claims === 'string') throw idTokenError(claims);
  const auth = await identityContext(claims);
  if (!auth) throw idTokenError('unmapped');
  return auth;
}

async function authenticated(ctx: AppContext, auth: AuthContext, next: Next): Promise<void> {
  ctx.state.auth = auth;
  bindRequestLog(ctx, { org: auth.organizationId, user: auth.userId });
  await next();
}

/**
 * @param scope the scope the route requires (`*` tokens pass everything; a write scope implies its read scope).
 *   Scopes belong to service tokens: a `td_` token on a client-library route acts with its user's permissions.
 * @returns the middleware.
 */
export function requireScope(scope: Scope) {
  return async function requireScopeMiddleware(ctx: AppContext, next: Next): Promise<void> {
    if (ctx.state.auth.kind === 'service' && !hasScope(ctx.state.auth.scopes, scope)) throw new ForbiddenError();
    await next();
  };
}
