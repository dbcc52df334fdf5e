/**
 * The OAuth 2.1 metadata of the service, in one place: the authorization server metadata (RFC 8414) and the MCP
 * endpoint's protected-resource metadata (RFC 9728). The well-known routes serve them, the readiness manifest points
 * at them, the 401 of `/mcp` names the protected-resource document, and the authorization server
 * (commands/oauthServer.ts) implements exactly these endpoints, grants and scopes [docs/decisions.md "MCP and
 * OAuth"].
 */

/** Paths of the authorization server's endpoints, relative to APP_URL. */
export const OAUTH_PATHS = {
  metadata: '/.well-known/oauth-authorization-server',
  authorize: '/oauth/authorize',
  token: '/oauth/token',
  register: '/oauth/register',
  revoke: '/oauth/revoke',
  /** RFC 9728 §3.1: the well-known prefix followed by the resource's path (`/mcp`). */
  protectedResource: '/.well-known/oauth-protected-resource/mcp',
} as const;

/** The MCP endpoint's path (the protected resource). */
export const MCP_PATH = '/mcp';

/** The scope an MCP client needs; the only scope the authorization server grants. */
export const MCP_SCOPE = 'mcp';

/** The grants the authorization server implements. */
export const OAUTH_GRANT_TYPES = ['authorization_code', 'client_credentials', 'refresh_token'] as const;
export type OAuthGrantType = (typeof OAUTH_GRANT_TYPES)[number];

/** How clients authenticate at the token endpoint (`none`: public clients, PKCE only). */
export const OAUTH_CLIENT_AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'none'] as const;
export type OAuthClientAuthMethod = (typeof OAUTH_CLIENT_AUTH_METHODS)[number];

const trim = (appUrl: string): string => appUrl.replace(/\/+$/, '');

/**
 * @param appUrl the public base address (APP_URL).
 * @returns the issuer identifier (tokens' `iss`).
 */
export function oauthIssuer(appUrl: string): string {
  return trim(appUrl);
}

/**
 * @param appUrl the public base address (APP_URL).
 * @returns the MCP endpoint's canonical URI: the resource indicator (RFC 8707) and the access tokens' audience.
 */
export function mcpResourceUrl(appUrl: string): string {
  return `${trim(appUrl)}${MCP_PATH}`;
}

/**
 * @param appUrl the public base address (APP_URL).
 * @returns the URL of the protected-resource metadata (named by the 401's `WWW-Authenticate`).
 */
export function protectedResourceMetadataUrl(appUrl: string): string {
  return `${trim(appUrl)}${OAUTH_PATHS.protectedResource}`;
}

/**
 * @param appUrl the public base address (APP_URL).
 * @returns the RFC 9728 protected-resource metadata of the MCP endpoint.
 */
export function protectedResourceMetadata(appUrl: string): Record<string, unknown> {
  return {
    resource: mcpResourceUrl(appUrl),
    authorization_servers: [oauthIssuer(appUrl)],
    scopes_supported: [MCP_SCOPE],
    bearer_methods_supported: ['header'],
    resource_name: 'Agent Automation Service MCP endpoint',
    resource_documentation: `${trim(appUrl)}/api/reference`,
  };
}

/**
 * @param appUrl the public base address (APP_URL).
 * @returns the RFC 8414 metadata document.
 */
export function authorizationServerMetadata(appUrl: string): Record<string, unknown> {
  const base = trim(appUrl);
  return {
    issuer: oauthIssuer(appUrl),
    authorization_endpoint: `${base}${OAUTH_PATHS.authorize}`,
    token_endpoint: `${base}${OAUTH_PATHS.token}`,
    registration_endpoint: `${base}${OAUTH_PATHS.register}`,
    revocation_endpoint: `${base}${OAUTH_PATHS.revoke}`,
    scopes_supported: [MCP_SCOPE],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    // RFC 9207 §3: every authorization response carries `iss` (api/oauth.ts `redirectWith`), so a client may
    // refuse one without it (mix-up defence, RFC 9700 §4.4).
    authorization_response_iss_parameter_supported: true,
    grant_types_supported: [...OAUTH_GRANT_TYPES],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: [...OAUTH_CLIENT_AUTH_METHODS],
    revocation_endpoint_auth_methods_supported: [...OAUTH_CLIENT_AUTH_METHODS],
    service_documentation: `${base}/api/reference`,
  };
}
