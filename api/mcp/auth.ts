/**
 * The MCP endpoint's bearer check (MCP authorization; RFC 6750, RFC 9728): an access token of the service's
 * authorization server (audience this endpoint, scope `mcp`) or a service token with scope `mcp` or `*`.
 *   no token                   → 401, `WWW-Authenticate: Bearer resource_metadata="<protected-resource metadata>"`
 *   unknown / expired / revoked → 401, the same with `error="invalid_token"`
 *   a token without `mcp`      → 403 `insufficient_scope` (`WWW-Authenticate: Bearer error="insufficient_scope", scope="mcp", …`)
 * Bodies are OAuth error JSON (`{error, error_description}`). Requests from a browser page of another origin are
 * refused first (403; MCP transport security: DNS rebinding).
 */
import type { Next } from 'koa';
import { MCP_SCOPE, protectedResourceMetadataUrl } from '../../commands/oauth';
import { verifyAccessToken, type McpCaller } from '../../commands/oauthServer';
import { hasScope, resolveToken } from '../../commands/tokens';
import type { Config } from '../../lib/config';
import { TOKEN_PREFIX } from '../../lib/crypto';
import { OAuthError } from '../../lib/errors';
import type { AppContext } from '../context';
import { bindRequestLog } from '../requestLog';

/**
 * @param config APP_URL (the only origin a browser page may call from) and the signing key.
 * @returns the middleware; sets ctx.state.auth and ctx.state.mcpClientId.
 */
export function mcpAuthenticate(config: Readonly<Config>) {
  const metadata = protectedResourceMetadataUrl(config.appUrl);
  const allowedOrigin = new URL(config.appUrl).origin;
  const challenge = (params: string[] = []): Record<string, string> => ({
    'www-authenticate': `Bearer ${[...params, `resource_metadata="${metadata}"`].join(', ')}`,
  });
  const invalid = (description: string): OAuthError =>
    new OAuthError(401, 'invalid_token', description, challenge(['error="invalid_token"']));

  return async function mcpAuthenticateMiddleware(ctx: AppContext, next: Next): Promise<void> {
    const origin = ctx.get('origin');
    if (origin !== '' && origin !== allowedOrigin)
      throw new OAuthError(403, 'invalid_request', `Origin not allowed: ${origin}`);
    const header = ctx.get('authorization');
    if (header === '') throw new OAuthError(401, 'invalid_token', 'Authorization header required', challenge());
    const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
    if (!match) throw invalid('Invalid or expired token');
    const token = match[1];
    let caller: McpCaller;
    if (token.startsWith(TOKEN_PREFIX.service)) {
      const resolved = await resolveToken(token, 'service');
      if (resolved === 'expired') throw invalid('Token expired');
      if (resolved === 'invalid') throw invalid('Invalid or expired token');
      caller = { auth: resolved, clientId: resolved.tokenId };
    } else if (token.startsWith(TOKEN_PREFIX.v1)) {
      throw invalid('A personal access token (td_) cannot use the MCP endpoint');
    } else {
      const verified = await verifyAccessToken(config, token);
      if (verified === 'expired') throw invalid('Token expired');
      if (verified === 'invalid') throw invalid('Invalid or expired token');
      caller = verified;
    }
    if (!hasScope(caller.auth.scopes, MCP_SCOPE))
      throw new OAuthError(
        403,
        'insufficient_scope',
        `The token lacks the scope ${MCP_SCOPE}`,
        challenge(['error="insufficient_scope"', `scope="${MCP_SCOPE}"`])
      );
    ctx.state.auth = caller.auth;
    ctx.state.mcpClientId = caller.clientId;
    bindRequestLog(ctx, { org: caller.auth.organizationId, user: caller.auth.userId });
    await next();
  };
}
