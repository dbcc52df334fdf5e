/**
 * The OAuth 2.1 authorization server metadata (RFC 8414) of the service, in one place: the well-known document
 * serves it, the readiness manifest points at it, and the MCP endpoint's authorization server implements exactly
 * these endpoints, grants and scopes (ARCHITECTURE.md §4; the MCP issue).
 */
import { SCOPES } from '../models';

/** Paths of the authorization server's endpoints, relative to APP_URL. */
export const OAUTH_PATHS = {
  metadata: '/.well-known/oauth-authorization-server',
  authorize: '/oauth/authorize',
  token: '/oauth/token',
  register: '/oauth/register',
  revoke: '/oauth/revoke',
} as const;

/** The scope an MCP client needs. */
export const MCP_SCOPE = 'mcp';

/**
 * @param appUrl the public base address (APP_URL).
 * @returns the RFC 8414 metadata document.
 */
export function authorizationServerMetadata(appUrl: string): Record<string, unknown> {
  const base = appUrl.replace(/\/+$/, '');
  return {
    issuer: base,
    authorization_endpoint: `${base}${OAUTH_PATHS.authorize}`,
    token_endpoint: `${base}${OAUTH_PATHS.token}`,
    registration_endpoint: `${base}${OAUTH_PATHS.register}`,
    revocation_endpoint: `${base}${OAUTH_PATHS.revoke}`,
    scopes_supported: SCOPES.filter((s) => s !== '*'),
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'client_credentials', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    service_documentation: `${base}/api/reference`,
  };
}
