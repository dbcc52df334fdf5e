/**
 * Bearer-token authentication for both surfaces (SPEC "Authentication"), with the spec's exact 401 messages:
 *   missing header            → `Authorization header required`
 *   not `Bearer <token>`       → `Invalid or expired token`
 *   v1 token without `td_`    → `Token must start with 'td_'`
 *   unknown / revoked token   → `Invalid or expired token`
 *   expired token             → `Token expired`
 * and 403 `You don't have permission to access this resource` for a missing scope.
 */
import type { Next } from 'koa';
import { hasScope, resolveToken } from '../../commands/tokens';
import { TOKEN_PREFIX, type TokenKind } from '../../lib/crypto';
import { ForbiddenError, UnauthorizedError } from '../../lib/errors';
import type { Scope } from '../../models';
import type { AppContext } from '../context';

/**
 * @param accepted which token kind the surface accepts (`v1` → `td_`, `service` → `svc_`), or `any` for the
 *   client-library endpoints, which take either.
 * @returns the middleware; sets ctx.state.auth.
 */
export function authenticate(accepted: TokenKind | 'any') {
  return async function authenticateMiddleware(ctx: AppContext, next: Next): Promise<void> {
    const header = ctx.get('authorization');
    if (header === '') throw new UnauthorizedError('Authorization header required');
    const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
    if (!match) throw new UnauthorizedError('Invalid or expired token');
    const token = match[1];
    if (accepted === 'v1' && !token.startsWith(TOKEN_PREFIX.v1))
      throw new UnauthorizedError("Token must start with 'td_'");
    const kind: TokenKind = accepted === 'any' ? (token.startsWith(TOKEN_PREFIX.v1) ? 'v1' : 'service') : accepted;
    const resolved = await resolveToken(token, kind);
    if (resolved === 'expired') throw new UnauthorizedError('Token expired');
    if (resolved === 'invalid') throw new UnauthorizedError('Invalid or expired token');
    ctx.state.auth = resolved;
    ctx.state.log = ctx.state.log.child({ org: resolved.organizationId, user: resolved.userId });
    await next();
  };
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
